"""`agent-console exec` end to end: decision, sandbox, streamed output, exit codes, history."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from support.daemon import running_daemon, wait_for, workspace

pytestmark = pytest.mark.needs_bwrap

DAEMON_POLICY = "approval_timeout_s = 20\n"


def exec_(daemon, ws, *argv, extra=(), timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "console", "exec", "--state-dir", str(daemon.state_dir), *extra, "--", *argv],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_streams_output_and_exits_with_the_commands_code(daemon):
    ws = workspace()
    r = exec_(daemon, ws, "sh", "-c", "echo out; echo err >&2; touch made; exit 7")
    assert r.returncode == 7
    assert r.stdout == "out\n"
    assert "err\n" in r.stderr
    assert (ws / "made").exists()


def test_json_prints_the_full_outcome(daemon):
    ws = workspace()
    r = exec_(daemon, ws, "sh", "-c", "printf hi", extra=("--json",))
    reply = json.loads(r.stdout)
    assert reply["decision"]["verdict"] == "allow"
    result = reply["result"]
    assert result["status"] == "exited" and result["exit_code"] == 0
    assert result["stdout"]["head"] == "hi" and result["stdout"]["total_bytes"] == 2
    assert result["outcome"]["state"] == "completed"
    assert result["enforcement"]["backend"] == "bubblewrap"
    assert "changes" in result["outcome"]


def test_sandbox_denial_is_reported_and_recorded(daemon):
    ws = workspace()
    r = exec_(daemon, ws, "sh", "-c", "echo x > /etc/agent-console-test")
    assert r.returncode != 0
    assert "sandbox denied workspace_write" in r.stderr
    with daemon.operator() as op:
        rows = op.call("history.query", {"kinds": ["outcome"], "limit": 5})["rows"]
    denials = rows[0]["body"]["denials"]
    assert denials[0]["source"] == "platform_sandbox"
    assert denials[0]["next_action"] == "request_approval"


def test_timeout_exits_124(daemon):
    ws = workspace()
    r = exec_(daemon, ws, "sleep", "30", extra=("--timeout", "0.5"))
    assert r.returncode == 124
    assert "timed out" in r.stderr


def test_denied_exits_126_with_the_reason(daemon):
    ws = workspace()
    box = {}
    t = threading.Thread(
        target=lambda: box.update(
            r=exec_(
                daemon, ws, "curl", "https://example.com", extra=("--network", "--justification", "fetch")
            )
        )
    )
    t.start()
    with daemon.operator() as op:
        item = wait_for(lambda: op.call("pending.list")["pending"])[0]
        assert item["operation"]["justification"] == "fetch"
        op.call("decide", {"target": item["request_id"], "action": "deny", "reason": "no network today"})
    t.join(30)
    assert box["r"].returncode == 126
    assert "no network today" in box["r"].stderr
    assert box["r"].stdout == ""


def test_missing_executable_is_a_clear_invalid_input(daemon):
    r = exec_(daemon, workspace(), "definitely-not-installed-xyz")
    assert r.returncode == 122 and "executable_not_found" in r.stderr  # docs/operations.md


def test_exec_needs_a_command(daemon):
    r = subprocess.run(
        [sys.executable, "-m", "console", "exec", "--state-dir", str(daemon.state_dir)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "nothing to run" in r.stderr


def test_status_reports_the_sandbox(daemon):
    with daemon.operator() as op:
        status = op.call("daemon.status")
    assert status["sandbox"]["probe"]["available"] is True
    assert "bubblewrap" in status["sandbox"]["summary"]


def test_secret_in_the_daemons_environment_is_not_inside(tmp_path):
    import os

    os.environ["AGENT_CONSOLE_TEST_SECRET"] = "s3cr3t-value"
    try:
        with running_daemon() as d:
            r = exec_(d, workspace(), "env")
    finally:
        del os.environ["AGENT_CONSOLE_TEST_SECRET"]
    assert r.returncode == 0
    assert "s3cr3t-value" not in r.stdout
    assert "PATH=" in r.stdout


def test_operator_token_and_database_are_invisible_inside(daemon):
    r = exec_(daemon, workspace(), "sh", "-c", f"ls -a {daemon.state_dir}; cat {daemon.loc.token}")
    assert daemon.loc.token.read_text().strip() not in r.stdout
    assert "history.sqlite3" not in r.stdout
