"""One inbox for every agent: each request carries its agent kind (its tool's
``<agent>:``) and its session, and the queue, history and agents list filter by kind — in
the CLI (``--agent KIND``) and in the console (``agent:KIND``)."""

from __future__ import annotations

import json

import pytest
from support.daemon import operation, submit_in_thread, wait_for, workspace
from support.items import pending_item

from console.tui.model.historyquery import parse_query
from console.tui.model.pending import PendingQueue

DAEMON_POLICY = "approval_timeout_s = 30\n"
TOOLS = {"codex": "codex:Bash", "gemini": "gemini:run_shell_command", "claude-code": "claude-code:Bash"}


@pytest.fixture(scope="module")
def waiting(daemon):
    """One pending request of each kind of agent, each in a session of its own."""
    ws = workspace()
    answers = {
        kind: submit_in_thread(
            daemon,
            operation(ws, tool=tool, session_id=f"{kind}-session", capabilities=[{"kind": "unrestricted"}]),
            timeout_s=25,
        )
        for kind, tool in TOOLS.items()
    }
    with daemon.operator() as op:
        wait_for(lambda: len(op.call("pending.list")["pending"]) >= len(TOOLS))
        items = op.call("pending.list")["pending"]
    yield items
    for kind in TOOLS:
        daemon.cli("deny", next(i["request_id"] for i in items if i["operation"]["tool"] == TOOLS[kind]))
    for answer in answers.values():
        answer()


def test_each_request_carries_its_agent_kind_and_session(waiting):
    by_tool = {i["operation"]["tool"]: i for i in waiting}
    for kind, tool in TOOLS.items():
        assert by_tool[tool]["session_id"] == f"{kind}-session"


@pytest.mark.parametrize("kind", sorted(TOOLS))
def test_pending_lists_one_kind_of_agent(daemon, waiting, kind):
    r = daemon.cli("pending", "--agent", kind, "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["operation"]["tool"] for row in rows] == [TOOLS[kind]], rows


def test_pending_for_an_agent_with_nothing_waiting_says_so(daemon, waiting):
    r = daemon.cli("pending", "--agent", "opencode")
    assert r.returncode == 0 and "no pending requests" in r.stdout, r.stdout


def test_history_filters_by_agent_kind(daemon, waiting):
    with daemon.operator() as op:
        rows = op.call("history.query", {"kinds": ["request"], "agent": "gemini", "limit": 50})["rows"]
    assert rows and {r["tool"] for r in rows} == {"gemini:run_shell_command"}, rows
    codex = next(i for i in waiting if i["operation"]["tool"] == "codex:Bash")
    assert daemon.cli("deny", codex["request_id"], "--reason", "not now").returncode == 0
    r = daemon.cli("history", "--agent", "codex", "--json")
    assert r.returncode == 0, r.stderr
    assert {row["tool"] for row in json.loads(r.stdout)} == {"codex:Bash"}, r.stdout


def test_agents_lists_each_identity_with_its_kind(daemon, waiting):
    with daemon.agent() as agent:
        agent.call("agent.attention", {"state": "waiting", "session_id": "s-1", "kind": "notification"})
        agent.submit(operation(workspace(), tool="opencode:bash", session_id="s-1"), timeout_s=5)
    r = daemon.cli("agents", "--agent", "opencode", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["agent_kind"] for row in rows] == ["opencode"], rows
    assert json.loads(daemon.cli("agents", "--agent", "copilot", "--json").stdout) == []


def test_the_console_queue_filters_by_agent_kind(waiting):
    queue = PendingQueue()
    queue.replace(pending_item(i) for i in waiting)
    queue.set_filter("agent:gemini")
    assert [e.item.operation.tool for e in queue] == ["gemini:run_shell_command"]
    queue.set_filter("agent:codex bash")
    assert [e.item.operation.tool for e in queue] == ["codex:Bash"]
    queue.set_filter("agent:code")  # a kind is named whole, not by a piece of it
    assert list(queue) == []


def test_the_console_history_line_takes_agent():
    parsed = parse_query("agent:copilot rm -rf", now=0)
    assert parsed.params["agent"] == "copilot" and parsed.params["search"] == "rm -rf"
    assert not parsed.errors
