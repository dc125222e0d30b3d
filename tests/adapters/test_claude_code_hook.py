"""`agent-console hook claude-code` with the real daemon, as Claude Code calls it."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading

import pytest
from support.daemon import short_tmp, wait_for, workspace
from support.fake_daemon import HELLO, fake_daemon
from support.hook import hook_cli, hook_input

from console.adapters.claude_code.hook import operation_for, run_hook


def run(daemon, payload, timeout="20", env=None):
    out = hook_cli(daemon, payload, timeout, env)
    if out is not None:
        assert out["hookEventName"] == "PreToolUse"
    return out


def test_bash_maps_to_a_sandboxed_shell_operation():
    ws = workspace()
    op = operation_for(
        hook_input(ws, "Bash", {"command": "make test && git push", "description": "run tests"}), env={}
    )
    assert op["tool"] == "claude-code:Bash"
    assert op["executable"] == "bash" and op["args"] == ["-c", "make test && git push"]
    assert "capabilities" not in op and op["network"] == "none" and op["write_dirs"] == []
    assert op["workspace_access"] == "write"
    assert op["justification"] == "run tests"
    assert op["session_id"] == "sess-1"


def test_bash_outside_the_sandbox_is_asked_for_honestly():
    ws = workspace()
    op = operation_for(hook_input(ws, "Bash", {"command": "ls", "dangerouslyDisableSandbox": True}), env={})
    assert {"kind": "unrestricted"} in op["capabilities"] and op["network"] == "any"


def test_project_dir_is_the_workspace():
    ws = workspace()
    op = operation_for(hook_input(ws / "src", "Bash", {"command": "ls"}), env={"CLAUDE_PROJECT_DIR": str(ws)})
    assert op["workspace_root"] == str(ws) and op["cwd"] == str(ws / "src")


def test_bash_waits_for_the_operator(daemon):
    ws = workspace()
    box = {}
    t = threading.Thread(
        target=lambda: box.update(
            out=run(daemon, hook_input(ws, "Bash", {"command": "# agent-console: network\ncurl x | sh"}))
        )
    )
    t.start()
    with daemon.operator() as op:
        item = wait_for(lambda: op.call("pending.list")["pending"])[0]
        assert item["operation"]["tool"] == "claude-code:Bash"
        op.call("decide", {"target": item["request_id"], "action": "approve", "note": "once"})
    t.join(30)
    assert box["out"]["permissionDecision"] == "allow"
    assert "--ticket" in box["out"]["updatedInput"]["command"]


def test_operator_deny_reaches_claude(daemon):
    ws = workspace()
    box = {}
    t = threading.Thread(
        target=lambda: box.update(
            out=run(
                daemon, hook_input(ws, "Bash", {"command": "rm -rf /", "dangerouslyDisableSandbox": True})
            )
        )
    )
    t.start()
    with daemon.operator() as op:
        item = wait_for(lambda: op.call("pending.list")["pending"])[0]
        op.call("decide", {"target": item["request_id"], "action": "deny", "reason": "never"})
    t.join(30)
    assert box["out"]["permissionDecision"] == "deny"
    assert "never" in box["out"]["permissionDecisionReason"]


def test_write_inside_the_workspace_is_allowed(daemon):
    ws = workspace()
    out = run(daemon, hook_input(ws, "Write", {"file_path": str(ws / "src" / "app.py"), "content": "x"}))
    assert out["permissionDecision"] == "allow"
    out = run(
        daemon, hook_input(ws, "Edit", {"file_path": "README.md", "old_string": "a", "new_string": "b"})
    )
    assert out["permissionDecision"] == "allow"


@pytest.mark.parametrize("path", [".env", ".git/hooks/pre-commit", "/etc/profile"])
def test_write_protected_or_outside_goes_to_review(daemon, path):
    ws = workspace()
    target = path if path.startswith("/") else str(ws / path)
    # The hook's deadline counts from its start (interpreter included): leave it room.
    out = run(daemon, hook_input(ws, "Write", {"file_path": target, "content": "x"}), timeout="3")
    assert out["permissionDecision"] == "deny"
    assert "approval_timeout" in out["permissionDecisionReason"]


def test_other_tools_and_events_get_no_answer(daemon):
    # Nothing printed, exit 0: Claude Code's normal permission flow applies unchanged.
    assert run(daemon, hook_input(workspace(), "Read", {"file_path": "/etc/hosts"})) is None
    assert run(daemon, hook_input(workspace(), "WebFetch", {"url": "https://example.com"})) is None
    assert run(daemon, hook_input(workspace(), "Bash", {"command": "ls"}, event="PostToolUse")) is None
    assert run(daemon, hook_input(workspace(), "Bash", {"command": "ls"}, event="UserPromptSubmit")) is None


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "not json",
        "[]",
        '{"tool_name": "Bash"}',
        '{"tool_name":"Bash","tool_input":{"command":5},"cwd":"/tmp"}',
        '{"a":1,"a":2}',
    ],
)
def test_garbage_input_is_denied_not_crashed(daemon, payload):
    assert run(daemon, payload)["permissionDecision"] == "deny"


def test_unreachable_daemon_denies(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "console", "hook", "claude-code", "--state-dir", str(tmp_path / "nothing")],
        input=json.dumps(hook_input(workspace(), "Bash", {"command": "ls"})),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 0
    out = json.loads(r.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "unreachable" in out["permissionDecisionReason"]


def test_a_bug_inside_is_still_a_deny(monkeypatch):
    import console.adapters.claude_code.hook as cc

    def boom(*a, **k):
        raise ZeroDivisionError

    monkeypatch.setattr(cc, "decide", boom)
    out = io.StringIO()
    assert run_hook(io.StringIO("{}"), out, state_dir=None) == 0
    assert json.loads(out.getvalue())["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_malformed_answer_from_the_daemon_is_a_deny_not_an_allow():
    # A daemon of another version (or a bug) answers a hold with an allow that lacks
    # everything but the verdict, and a ticket: acted on as sent, that was an allow with
    # a rewritten command. Checked at the socket, it is a refused call, so a deny.
    answers = {
        "hello": HELLO,
        "operation.hold": {"decision": {"verdict": "allow"}, "ticket": "t-1", "command": "true"},
    }
    state = short_tmp() / "s"  # a socket path within AF_UNIX's limit
    out = io.StringIO()
    payload = hook_input(workspace(), "Bash", {"command": "ls"})
    with fake_daemon(state, answers):
        assert run_hook(io.StringIO(json.dumps(payload)), out, state_dir=str(state)) == 0
    decision = json.loads(out.getvalue())["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "malformed result of operation.hold" in decision["permissionDecisionReason"]
