"""Claude Code's PermissionRequest event (the interactive dialog) is answered from the console
in its own JSON shape: hookSpecificOutput.decision.behavior allow/deny."""

from __future__ import annotations

import json
import subprocess
import sys

from support.daemon import workspace
from support.hook import hook_cli, hook_input


def ask(daemon, ws, tool, tool_input, timeout="20"):
    return hook_cli(daemon, hook_input(ws, tool, tool_input, session="s", event="PermissionRequest"), timeout)


def test_a_permission_dialog_for_an_in_workspace_write_is_allowed_by_the_console(daemon):
    ws = workspace()
    out = ask(daemon, ws, "Write", {"file_path": str(ws / "a.txt"), "content": "hi"})
    assert out == {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}


def test_a_permission_dialog_for_agent_settings_is_denied_with_the_reason(daemon):
    ws = workspace()
    target = str(ws / ".claude" / "settings.local.json")
    out = ask(daemon, ws, "Write", {"file_path": target, "content": '{"disableAllHooks": true}'}, "3")
    assert out["hookEventName"] == "PermissionRequest"
    assert out["decision"]["behavior"] == "deny"
    assert "approval_timeout" in out["decision"]["message"]


def test_a_permission_dialog_with_the_daemon_down_is_denied(tmp_path):
    payload_ws = workspace()

    class Nowhere:
        state_dir = tmp_path / "none"

    out = ask(Nowhere, payload_ws, "Bash", {"command": "ls"}, "3")
    assert out["decision"]["behavior"] == "deny" and "unreachable" in out["decision"]["message"]


def test_a_permission_dialog_for_an_unsupervised_tool_gets_no_answer(daemon):
    assert ask(daemon, workspace(), "WebFetch", {"url": "https://example.com"}) is None


def test_hook_install_installs_the_same_command_for_both_events(tmp_path):
    settings = tmp_path / "settings.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "console",
            "hook",
            "install",
            "claude-code",
            "--settings",
            str(settings),
            "--state-dir",
            str(tmp_path / "state"),
            "--timeout",
            "30",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    hooks = json.loads(settings.read_text())["hooks"]
    [pre] = [h for g in hooks["PreToolUse"] for h in g["hooks"]]
    [perm] = [h for g in hooks["PermissionRequest"] for h in g["hooks"]]
    assert pre == perm and pre["command"].endswith("|| exit 2") and pre["timeout"] == 40
