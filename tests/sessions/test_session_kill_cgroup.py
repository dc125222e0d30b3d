"""Kill reaches what an emptied environment hides: a double fork
under ``env -i setsid`` carries no marker and leaves the session's process group, but it
stays in the session's cgroup, so ``sessions.kill`` ends it. Real daemon, real session."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest
from support.daemon import running_daemon, short_tmp, wait_for, workspace

pytestmark = [pytest.mark.needs_bwrap, pytest.mark.needs_root]


def test_kill_ends_an_environment_cleared_double_fork():
    ws = workspace()
    pidfile = short_tmp("kill-") / "pid"
    script = f"(env -i setsid sh -c 'sleep 1000 & echo $! > {pidfile}' &); sleep 30"
    with running_daemon(f"watch = {json.dumps([str(ws)])}\n") as d, d.operator() as op:
        assert op.call("daemon.status")["sessions"]["pause_mode"] == "cgroup freeze"
        sid = op.call(
            "sessions.new", {"unconfined": True, "argv": ["bash", "--norc", "-c", script], "cwd": str(ws)}
        )["session"]["id"]
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip())
        orphan = psutil.Process(int(pidfile.read_text()))
        assert b"AGENT_CONSOLE_SESSION" not in Path(f"/proc/{orphan.pid}/environ").read_bytes()
        op.call("sessions.kill", {"session": sid, "grace_s": 0.5})
        assert wait_for(lambda: not orphan.is_running() or orphan.status() == psutil.STATUS_ZOMBIE)
