"""Recording quotas: a per-session cap marked live, a total kept
by pruning the oldest finished recordings, never the one being written."""

from __future__ import annotations

import json

import pytest
from support.daemon import wait_for

MIB = 1024 * 1024
POLICY = "recording_max_mb = 1\nrecordings_total_mb = 2\n"
FLOOD = "head -c 3000000 /dev/zero | tr '\\0' x"


DAEMON_POLICY = POLICY


@pytest.fixture
def daemon(fresh_daemon):
    """A daemon per test: each fills its recordings quota."""
    return fresh_daemon


def new(op, script: str) -> str:
    return op.call("sessions.new", {"unconfined": True, "argv": ["sh", "-c", script], "cwd": "/tmp"})[
        "session"
    ]["id"]


def info(op, sid: str) -> dict:
    return op.call("sessions.get", {"session": sid})["session"]


def finished(op, script: str) -> str:
    sid = new(op, script)
    op.call("sessions.wait", {"session": sid, "timeout_s": 10})
    return sid


def cast(daemon, sid: str):
    return daemon.loc.sessions_dir / sid / "output.cast"


def test_cap_stops_the_recording_with_a_marker_and_says_so_while_the_session_runs(daemon):
    with daemon.operator() as op:
        sid = new(op, f"{FLOOD}; echo; echo flood-done; exec sleep 30")
        wait_for(lambda: "flood-done" in op.call("sessions.screen", {"session": sid})["text"])
        now = wait_for(lambda: (i := info(op, sid))["recording_truncated"] and i)
        assert now["status"] in ("running", "idle")  # still running, already marked
        size = cast(daemon, sid).stat().st_size
        assert MIB - 300_000 < size <= MIB + 200
        last = json.loads(cast(daemon, sid).read_text().splitlines()[-1])
        assert last[1:] == ["m", "recording truncated: size limit reached"]
        listed = {s["id"]: s for s in op.call("sessions.list")["sessions"]}
        assert listed[sid]["recording_truncated"] is True
        op.call("sessions.kill", {"session": sid, "grace_s": 0})


def test_total_quota_prunes_the_oldest_finished_first_and_never_the_live_one(daemon):
    with daemon.operator() as op:
        a, b = (finished(op, "head -c 700000 /dev/zero | tr '\\0' a") for _ in range(2))
        assert not any(info(op, s)["recording_pruned"] for s in (a, b))  # 1.4 MB fit in 2 MiB
        # The live one stops at its 1 MiB cap, somewhere past 0.75 MiB (reads come in up
        # to 256 KiB): a + b + live is over 2 MiB, b + live is not.
        live = new(op, f"{FLOOD}; exec sleep 30")
        wait_for(lambda: info(op, live)["recording_truncated"])
        wait_for(lambda: info(op, a)["recording_pruned"])
        assert not cast(daemon, a).exists()
        assert info(op, b)["recording_pruned"] is False and cast(daemon, b).exists()
        assert info(op, live)["recording_pruned"] is False and cast(daemon, live).exists()
        # Pruning everything still leaves the recording being written.
        r = op.call("sessions.prune", {"all": True})
        assert [p["session"] for p in r["pruned"]] == [b]
        assert r["freed_bytes"] > 700_000
        assert cast(daemon, live).exists() and info(op, live)["status"] in ("running", "idle")
        op.call("sessions.kill", {"session": live, "grace_s": 0})


def test_cli_prune_prints_what_it_freed(daemon):
    with daemon.operator() as op:
        olds = [finished(op, "head -c 300000 /dev/zero | tr '\\0' o") for _ in range(2)]
    quota = daemon.cli("sessions", "prune")
    assert quota.returncode == 0, quota.stderr
    assert "freed 0.0M in 0 recordings" in quota.stdout  # 0.6 MB is within the 2 MiB total
    everything = daemon.cli("sessions", "prune", "--all")
    assert everything.returncode == 0, everything.stderr
    for sid in olds:
        assert f"pruned {sid}: 0.3M" in everything.stdout
        assert not cast(daemon, sid).exists()
    assert "freed 0.6M in 2 recordings; recordings now 0.0M of 2.0M" in everything.stdout
    again = daemon.cli("sessions", "prune", "--all", "--json")
    assert json.loads(again.stdout)["pruned"] == []


async def test_truncation_is_shown_live_in_the_console_and_the_cli(daemon):
    from support.tui import Clock, make_app, screen_text, until
    from support.tui_sessions import show_sessions

    with daemon.operator() as op:
        sid = new(op, f"{FLOOD}; echo; echo flood-done; exec sleep 30")
        quiet = new(op, "exec sleep 30")
        wait_for(lambda: info(op, sid)["recording_truncated"])
    listed = daemon.cli("sessions").stdout
    row = next(line for line in listed.splitlines() if line.startswith(sid))
    assert row.endswith("[recording truncated]"), row
    assert "recording" not in next(line for line in listed.splitlines() if line.startswith(quiet))
    app = make_app(daemon, Clock())
    async with app.run_test(size=(140, 30)) as pilot:
        await show_sessions(pilot, app)

        def both_rows() -> str | None:
            text = screen_text(app)
            return text if sid[:10] in text and quiet[:10] in text else None

        shown = await until(pilot, both_rows)
        rows = {
            line.split()[0].lstrip("▶"): line
            for line in shown.splitlines()
            if sid[:10] in line or quiet[:10] in line
        }
        assert rows[sid[:10]].rstrip().endswith("recording truncated"), rows
        assert "recording" not in rows[quiet[:10]]
    with daemon.operator() as op:
        for s in (sid, quiet):
            op.call("sessions.kill", {"session": s, "grace_s": 0})
