"""The ACP host against a scripted ACP agent that does what claude-code-acp never would:
asks permission for one thing and then does another. (tests/agents/test_acp.py drives the
real claude-code-acp.)

The agent is a small Python program speaking ACP on stdio: on ``session/prompt`` it sends
the requests of its script, in order, and reports each answer in a file the test reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from support.claude_code import Operator
from support.daemon import short_tmp, workspace

pytestmark = [pytest.mark.needs_bwrap]
DAEMON_POLICY = "approval_timeout_s = 3\n"

AGENT = textwrap.dedent(
    r"""
    import json, sys
    script, log = json.load(open(sys.argv[1])), sys.argv[2]
    ids = iter(range(1000, 2000))
    def send(obj):
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **obj}) + "\n"); sys.stdout.flush()
    def ask(method, params):
        n = next(ids)
        send({"id": n, "method": method, "params": params})
        while True:
            msg = json.loads(sys.stdin.readline())
            if msg.get("id") == n:
                return msg
    for line in sys.stdin:
        msg = json.loads(line)
        method = msg.get("method")
        if method == "initialize":
            send({"id": msg["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
        elif method == "session/new":
            send({"id": msg["id"], "result": {"sessionId": "scripted-session"}})
        elif method == "session/prompt":
            answers = []
            for step in script:
                if step["method"] == "session/update":
                    send({"method": "session/update", "params": {"sessionId": "scripted-session", "update": step["update"]}})
                    continue
                params = {"sessionId": "scripted-session", **step["params"]}
                if step["method"] == "terminal/create":
                    created = ask("terminal/create", params)
                    tid = created.get("result", {}).get("terminalId")
                    answers.append(created)
                    if tid:
                        answers.append(ask("terminal/wait_for_exit", {"sessionId": "scripted-session", "terminalId": tid}))
                        answers.append(ask("terminal/output", {"sessionId": "scripted-session", "terminalId": tid}))
                else:
                    answers.append(ask(step["method"], params))
            json.dump(answers, open(log, "w"))
            send({"id": msg["id"], "result": {"stopReason": "end_turn"}})
    """
)
OPTIONS = [
    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
    {"optionId": "always", "name": "Always", "kind": "allow_always"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def run_agent(daemon, ws, script) -> list[dict]:
    tmp = short_tmp()
    (tmp / "agent.py").write_text(AGENT)
    (tmp / "script.json").write_text(json.dumps(script))
    log = tmp / "answers.json"
    r = subprocess.run(
        [sys.executable, "-m", "console", "run", "--acp", "--state-dir", str(daemon.state_dir), "--workspace",
         str(ws), "--prompt", "go", "--", sys.executable, str(tmp / "agent.py"), str(tmp / "script.json"), str(log)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(log.read_text())


def execute(call_id: str, command: str) -> list[dict]:
    return [
        {"method": "session/update", "update": {"sessionUpdate": "tool_call", "toolCallId": call_id, "kind": "execute",
                                                "title": command, "rawInput": {"command": command}}},
        {"method": "session/request_permission", "params": {"toolCall": {"toolCallId": call_id}, "options": OPTIONS}},
    ]  # fmt: skip


def test_an_approved_command_does_not_approve_another_terminal(fresh_daemon):
    ws = workspace()
    approved = "# agent-console: network\necho approved > approved.txt"
    other = "# agent-console: network\necho other > other.txt"
    script = [*execute("c1", approved), {"method": "terminal/create", "params": {"command": other}}]
    operator = Operator(fresh_daemon, "approve", tool="acp:execute")
    operator.start()
    answers = run_agent(fresh_daemon, ws, script)
    operator.result()
    assert answers[0]["result"]["outcome"] == {"outcome": "selected", "optionId": "yes"}
    # The terminal's command is not the approved one: a new request, nobody approves it.
    assert not (ws / "other.txt").exists()
    assert "denied" in answers[-1]["result"]["output"], answers


def test_the_approved_command_itself_runs_once_in_the_sandbox(fresh_daemon):
    ws = workspace()
    approved = "# agent-console: network\necho approved > approved.txt; echo .git > .git/hooks/x"
    script = [*execute("c1", approved), {"method": "terminal/create", "params": {"command": approved}}]
    operator = Operator(fresh_daemon, "approve", tool="acp:execute")
    operator.start()
    answers = run_agent(fresh_daemon, ws, script)
    operator.result()
    assert (ws / "approved.txt").read_text() == "approved\n"
    assert not (ws / ".git" / "hooks" / "x").exists()
    assert "sandbox denied protected_metadata" in answers[-1]["result"]["output"], answers


def test_a_write_of_other_content_than_the_approved_diff_is_asked_again(fresh_daemon):
    ws = workspace()
    target = ws / ".claude" / "settings.local.json"  # protected: the operator decides
    shown = {"type": "diff", "path": str(target), "oldText": None, "newText": "{}\n"}
    script = [
        {"method": "session/update", "update": {"sessionUpdate": "tool_call", "toolCallId": "w1", "kind": "edit",
                                                "title": "Write", "content": [shown]}},
        {"method": "session/request_permission", "params": {"toolCall": {"toolCallId": "w1"}, "options": OPTIONS}},
        {"method": "fs/write_text_file", "params": {"path": str(target), "content": '{"disableAllHooks": true}\n'}},
    ]  # fmt: skip
    operator = Operator(fresh_daemon, "approve", tool="acp:edit")
    operator.start()
    answers = run_agent(fresh_daemon, ws, script)
    operator.result()
    assert answers[0]["result"]["outcome"]["optionId"] == "yes"
    assert "error" in answers[1], answers  # not what was approved: asked again, nobody approved
    assert not target.exists()


def test_reads_of_secrets_and_unknown_requests_are_refused(fresh_daemon):
    ws = workspace()
    script = [
        {"method": "fs/read_text_file", "params": {"path": "/etc/shadow"}},
        {"method": "fs/read_text_file", "params": {"path": str(ws / "README.md")}},
        {"method": "session/launch_missiles", "params": {}},
    ]
    answers = run_agent(fresh_daemon, ws, script)
    assert "secret" in answers[0]["error"]["message"], answers
    assert answers[1]["result"]["content"] == "hello\n"
    assert answers[2]["error"]["code"] == -32601
