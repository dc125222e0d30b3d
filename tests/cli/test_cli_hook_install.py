"""`agent-console hook install claude-code` and `hook doctor` against a real daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from console.adapters.claude_code.install import MARGIN_S, MATCHER

DAEMON_POLICY = "approval_timeout_s = 120\n"


def cli(*args: str, state_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "console", *args, "--state-dir", str(state_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )


EXISTING = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "env": {"FOO": "bar"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/bin/my-linter"}]}],
        "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "/usr/bin/logger"}]}],
    },
}


def ours(settings: dict) -> list[dict]:
    return [
        h for g in settings["hooks"]["PreToolUse"] for h in g["hooks"] if "hook claude-code" in h["command"]
    ]


def test_install_merges_keeps_the_rest_and_is_idempotent(daemon, tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(EXISTING))
    r = cli(
        "hook",
        "install",
        "claude-code",
        "--settings",
        str(path),
        "--timeout",
        "90",
        state_dir=daemon.state_dir,
    )
    assert r.returncode == 0, r.stderr
    first = json.loads(path.read_text())
    assert first["permissions"] == EXISTING["permissions"] and first["env"] == EXISTING["env"]
    assert first["hooks"]["PostToolUse"] == EXISTING["hooks"]["PostToolUse"]
    assert EXISTING["hooks"]["PreToolUse"][0] in first["hooks"]["PreToolUse"]
    (hook,) = ours(first)
    assert hook["command"].startswith(sys.executable + " -I -m console hook claude-code")
    assert hook["command"].endswith(" || exit 2")
    assert f"--state-dir {daemon.state_dir}" in hook["command"] and "--timeout 90" in hook["command"]
    assert hook["timeout"] == 90 + MARGIN_S
    group = next(g for g in first["hooks"]["PreToolUse"] if hook in g["hooks"])
    assert group["matcher"] == MATCHER
    assert json.loads((tmp_path / "settings.json.agent-console.bak").read_text()) == EXISTING

    again = cli(
        "hook",
        "install",
        "claude-code",
        "--settings",
        str(path),
        "--timeout",
        "90",
        state_dir=daemon.state_dir,
    )
    assert again.returncode == 0
    assert json.loads(path.read_text()) == first


def test_install_defaults_to_the_daemons_approval_timeout_and_says_when_timeout_exceeds_it(daemon, tmp_path):
    path = tmp_path / "settings.json"
    r = cli("hook", "install", "claude-code", "--settings", str(path), state_dir=daemon.state_dir)
    assert r.returncode == 0, r.stderr
    (hook,) = ours(json.loads(path.read_text()))
    assert "--timeout 120" in hook["command"] and hook["timeout"] == 130
    r = cli(
        "hook",
        "install",
        "claude-code",
        "--settings",
        str(path),
        "--timeout",
        "590",
        state_dir=daemon.state_dir,
    )
    assert "approval_timeout_s is 120 s" in r.stdout


def test_install_refuses_a_settings_file_that_is_not_json(daemon, tmp_path):
    path = tmp_path / "settings.json"
    path.write_text("{ not json")
    r = cli("hook", "install", "claude-code", "--settings", str(path), state_dir=daemon.state_dir)
    assert r.returncode == 2 and "not valid JSON" in r.stderr and "Traceback" not in r.stderr
    assert path.read_text() == "{ not json"


def test_doctor_passes_an_installed_hook(daemon, tmp_path):
    path = tmp_path / "settings.json"
    assert (
        cli("hook", "install", "claude-code", "--settings", str(path), state_dir=daemon.state_dir).returncode
        == 0
    )
    r = cli("hook", "doctor", "--settings", str(path), state_dir=daemon.state_dir)
    assert r.returncode == 0, r.stdout
    assert "no fail-open risk found" in r.stdout
    assert "Claude Code blocks" in r.stdout or "permissionDecision 'deny'" in r.stdout


def test_doctor_reports_each_fail_open_risk_of_the_old_documented_snippet(daemon, tmp_path):
    path = tmp_path / "settings.json"
    old = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash|Write|Edit",
                    "hooks": [
                        {
                            "type": "command",
                            "command": "agent-console hook claude-code --timeout 590",
                            "timeout": 30,
                        }
                    ],
                }
            ]
        }
    }
    path.write_text(json.dumps(old))
    local = tmp_path / "settings.local.json"
    local.write_text(json.dumps({"disableAllHooks": True}))
    r = cli("hook", "doctor", "--settings", str(path), "--settings", str(local), state_dir=daemon.state_dir)
    assert r.returncode == 1
    out = r.stdout
    assert "through PATH" in out
    assert "|| exit 2" in out
    assert "would kill the hook and run the tool" in out
    assert "disableAllHooks" in out
    for tool in ("MultiEdit", "NotebookEdit", "Read", "Glob", "Grep"):
        assert f"runs for {tool}" in out
    assert "approval_timeout_s is 120 s" in out


def test_doctor_says_when_no_daemon_answers(tmp_path):
    path = tmp_path / "settings.json"
    state = tmp_path / "none"
    assert (
        cli(
            "hook", "install", "claude-code", "--settings", str(path), "--timeout", "30", state_dir=state
        ).returncode
        == 0
    )
    r = cli("hook", "doctor", "--settings", str(path), state_dir=state)
    assert r.returncode == 1 and "no daemon answers" in r.stdout


def test_doctor_without_any_hook(tmp_path, daemon):
    path = tmp_path / "settings.json"
    path.write_text("{}")
    r = cli("hook", "doctor", "--settings", str(path), state_dir=daemon.state_dir)
    assert r.returncode == 1 and "no agent-console PreToolUse hook" in r.stdout


def test_install_keeps_the_users_own_stop_and_notification_hooks(daemon, tmp_path):
    path = tmp_path / "settings.json"
    theirs = {"hooks": [{"type": "command", "command": "/usr/bin/notify-send done"}]}
    path.write_text(json.dumps({"hooks": {"Stop": [theirs], "Notification": [{"matcher": "", **theirs}]}}))
    for _ in range(2):  # installing again replaces ours, keeps theirs
        r = cli("hook", "install", "claude-code", "--settings", str(path), state_dir=daemon.state_dir)
        assert r.returncode == 0, r.stderr
    hooks = json.loads(path.read_text())["hooks"]
    for event in ("Stop", "Notification", "UserPromptSubmit"):
        commands = [h["command"] for g in hooks[event] for h in g["hooks"]]
        assert sum("hook claude-code" in c for c in commands) == 1, commands
        assert all(not c.endswith("|| exit 2") for c in commands)
        assert ("/usr/bin/notify-send done" in commands) == (event != "UserPromptSubmit")
