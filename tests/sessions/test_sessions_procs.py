"""Process control of sessions with real process trees: kill leaves nothing behind,
a reused PID is never signalled, usage is sampled, and one session's flood does not
stall another's echo."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import psutil
import pytest
from support.sessions import child_env, shell, start_manager, until

from console.sessions import ProcHandle
from console.sessions.procs import MARKER_VAR


@pytest.fixture
async def manager(tmp_path):
    m = await start_manager(tmp_path / "state")
    yield m
    await m.close(grace_s=0.5)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def with_marker(session_id: str) -> list[int]:
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(MARKER_VAR) == session_id and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p.pid)
        except (psutil.Error, OSError):
            continue
    return found


async def test_kill_leaves_no_process_behind(manager, tmp_path):
    pids = tmp_path / "pids"
    # A shell with: a plain child; a double-forked sleep (reparented to init, still
    # in the session); a child that ignores SIGHUP and TERM; a double-forked one that
    # also leaves the session with setsid (found by the environment marker).
    script = f"""
        sleep 1000 & echo $! >> {pids}
        sh -c 'sleep 1001 & echo $! >> {pids}'
        sh -c 'trap "" HUP TERM; echo $$ >> {pids}; while :; do sleep 1; done' &
        (setsid sh -c 'echo $$ >> {pids}; exec sleep 1003' &) &
        echo started
        wait
    """
    sid = shell(manager, tmp_path, script)
    await until(lambda: pids.exists() and len(pids.read_text().split()) == 4, what="four children")
    await until(lambda: "started" in manager.screen_text(sid))
    children = [int(p) for p in pids.read_text().split()]
    leader = manager.get(sid).pid
    double_forked = psutil.Process(children[1])
    assert double_forked.ppid() != leader  # its parent shell has exited: it left the tree
    # The last two write their pids concurrently: pick the setsid one by what it runs.
    escaped = next(p for p in map(psutil.Process, children[2:]) if "1003" in " ".join(p.cmdline()))
    assert os.getsid(escaped.pid) != leader and escaped.ppid() != leader  # left session and tree

    info = await manager.kill(sid, grace_s=0.5)
    assert info.status == "exited"
    for pid in [leader, *children]:
        await until(lambda pid=pid: not alive(pid), timeout=5, what=f"pid {pid} gone")
    assert with_marker(sid) == []
    assert manager.get(sid).status == "exited"


async def test_processes_outliving_their_leader_are_ended(manager, tmp_path):
    pids = tmp_path / "pids"
    sid = shell(
        manager, tmp_path, f"sh -c 'trap \"\" HUP; echo $$ > {pids}; exec sleep 1000' & sleep 0.2; echo bye"
    )
    info = await manager.wait(sid, timeout=10)
    assert info.exit_code == 0
    pid = int(pids.read_text())
    await until(lambda: not alive(pid), timeout=10, what="leftover ended")


def test_a_reused_pid_is_not_signalled():
    # A live process, but a handle whose start time is not its own: what a handle
    # to an earlier process with the same PID looks like after the PID is reused.
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        real = ProcHandle.of(victim.pid)
        assert real is not None
        stale = ProcHandle(victim.pid, real.create_time - 10.0)
        assert not stale.alive()
        assert stale.signal(signal.SIGKILL) is False
        assert victim.poll() is None and real.alive()
        assert real.signal(signal.SIGTERM) is True
        assert victim.wait(timeout=10) == -signal.SIGTERM
        # Gone (reaped): a handle to it signals nothing.
        assert real.signal(signal.SIGKILL) is False and not real.alive()
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()


async def test_stats_report_cpu_memory_and_descendants(manager, tmp_path):
    busy = f"{sys.executable} -c 'while True: pass'"
    sid = shell(manager, tmp_path, f"sleep 1000 & {busy} & wait")
    await until(lambda: manager.stats(sid).processes == 3, what="three processes sampled")
    await until(lambda: manager.stats(sid).cpu_percent > 10, what="busy loop counted")
    stats = manager.stats(sid)
    assert stats.rss_bytes > 1_000_000 and stats.sampled_at > 0


async def test_a_flood_does_not_stall_another_sessions_echo(manager, tmp_path):
    flood_file = tmp_path / "flood.txt"
    line = "\x1b[01;34m" + "x" * 60 + "\x1b[0m drwxr-xr-x 2 user user 4096 Nov 30 13:09 name\n"
    flood_file.write_text(line * (10_000_000 // len(line) + 1))
    total = flood_file.stat().st_size
    echo = shell(manager, tmp_path, "echo ready; exec cat")
    await until(lambda: "ready" in manager.screen_text(echo))
    flood = manager.create(
        ["cat", str(flood_file)], cwd=str(tmp_path), env=child_env(tmp_path), owner="operator"
    ).id
    await until(lambda: manager.get(flood).output_bytes > 0, what="flood started")
    manager.write(echo, b"ping\r")
    await until(lambda: manager.screen_text(echo).count("ping") == 2, what="echo round trip")
    # The echo came back while the flood was still being read.
    assert manager.get(flood).output_bytes < total
    await manager.wait(flood, timeout=120)
    await until(lambda: manager.get(flood).output_bytes >= total, what="flood drained")
    assert "name" in manager.screen_text(flood)


async def test_signal_and_wait(manager, tmp_path):
    sid = shell(manager, tmp_path, "exec sleep 1000")
    await asyncio.sleep(0.1)
    manager.signal(sid, signal.SIGTERM)
    info = await manager.wait(sid, timeout=10)
    assert info.exit_signal == signal.SIGTERM and info.exit_code is None
