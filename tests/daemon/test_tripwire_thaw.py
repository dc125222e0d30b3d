"""A paused session stays paused until the operator answers: someone
who writes 0 to its ``cgroup.freeze`` (or, in walk mode, sends SIGCONT) is caught, the
session is stopped again and the item says "resumed by someone other than the operator";
the history keeps it. The pause mode is said as it is everywhere: the session's status
text, ``tripwire list`` and the item.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from support.daemon import running_daemon, short_tmp, stopped, wait_for, workspace

pytestmark = [pytest.mark.needs_bwrap, pytest.mark.needs_root]


def cgroup_dir(pid: int) -> Path:
    """The cgroup v2 directory ``pid`` is in."""
    mount = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            mount = left.split(" ")[4]
            break
    assert mount is not None
    own = next(x[3:] for x in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if x.startswith("0::"))
    return Path(mount) / own.lstrip("/")


def writes(out: Path) -> int:
    return out.stat().st_size if out.exists() else 0


@pytest.mark.parametrize("mode", ["cgroup freeze", "process walk"])
def test_a_session_resumed_behind_the_operators_back_is_stopped_again_and_said(mode):
    ws = workspace()
    out = short_tmp("thaw-") / "out"
    env = {"AGENT_CONSOLE_NO_CGROUP": "1"} if mode == "process walk" else None
    policy = f'tripwire = "pause"\nwatch = {json.dumps([str(ws)])}\n'
    script = f"sleep 0.5; echo evil > hook.new; mv hook.new .git/hooks/pre-commit; while :; do echo y >> {out}; sleep 0.01; done"
    with running_daemon(policy, env=env) as d, d.operator() as op:
        wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
        session = op.call(
            "sessions.new", {"argv": ["bash", "--norc", "-c", script], "cwd": str(ws), "unconfined": True}
        )["session"]
        sid, pid = session["id"], session["pid"]
        try:
            item = wait_for(lambda: op.call("tripwire.list")["items"])[0]
            assert item["stop_mode"] == mode
            assert wait_for(lambda: op.call("tripwire.list")["items"][0]["stopped"] is True)
            status = op.call("sessions.get", {"session": sid})["session"]["status_text"]
            assert status == (
                "paused by tripwire (cgroup freeze)"
                if mode == "cgroup freeze"
                else "paused by tripwire (SIGSTOP, process walk)"
            )
            listed = d.cli("tripwire", "list")
            assert ("cgroup freeze" if mode == "cgroup freeze" else "process walk (SIGSTOP)") in listed.stdout
            op.subscribe(["watch"])
            # Someone who is not the operator lets it go on.
            if mode == "cgroup freeze":
                (cgroup_dir(pid) / "cgroup.freeze").write_text("0")
            else:
                for child in [pid, *map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]:
                    os.kill(child, signal.SIGCONT)
            while (event := op.next_event()).get("change") != "alert":
                continue
            assert event["session"] == sid
            assert "resumed by someone other than the operator" in event["summary"]
            assert wait_for(lambda: stopped(pid))
            again = op.call("tripwire.list")["items"][0]
            assert again["state"] == "paused" and again["thawed"] == 1
            assert "resumed by someone other than the operator (once), stopped again" in again["summary"]
            before = writes(out)
            rows = wait_for(lambda: op.call("history.query", {"kinds": ["tripwire_thawed"]})["rows"])
            assert [r["session_id"] for r in rows] == [sid]
            # The operator's own answer is not someone else's: resume lets it run for good.
            op.call("tripwire.resolve", {"id": item["id"], "action": "resume", "accept": True})
            assert wait_for(lambda: writes(out) > before + 10)
            assert op.call("tripwire.list", {"include_resolved": True})["items"][0]["thawed"] == 1
        finally:
            op.call("sessions.kill", {"session": sid, "grace_s": 0.5})
