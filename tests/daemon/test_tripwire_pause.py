"""Pause stops every process of a session: a job-control child in its
own process group and a ``setsid -f`` child both stop writing, and resume continues them,
with cgroup freeze and with the forced process-walk fallback. Sessions' cgroups are
removed when they end and the daemon's parent when it stops."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from support.sessions import child_env, start_manager, until

from console.sessions.cgroups import CGROUP_MODE, DISABLE_VAR, WALK_MODE

pytestmark = pytest.mark.needs_root

SCRIPT = (
    "sh -c 'while :; do echo x >> {a}; sleep 0.01; done' & "
    "setsid -f sh -c 'while :; do echo y >> {b}; sleep 0.01; done'; "
    "echo started; wait"
)


def size(p: Path) -> int:
    return p.stat().st_size if p.exists() else 0


async def growing(*files: Path, within_s: float = 5.0) -> bool:
    """Every file grows within ``within_s`` (its writer runs: on a loaded machine a
    running writer can take a while to get the CPU; a stopped one never grows it)."""
    before = [size(f) for f in files]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while loop.time() < deadline:
        await asyncio.sleep(0.05)
        if all(size(f) > b for f, b in zip(files, before, strict=True)):
            return True
    return False


async def stable(*files: Path) -> bool:
    before = [size(f) for f in files]
    await asyncio.sleep(0.5)
    return [size(f) for f in files] == before


@pytest.mark.parametrize("mode", [CGROUP_MODE, WALK_MODE])
async def test_pause_stops_job_control_and_setsid_children(tmp_path, monkeypatch, mode):
    if mode == WALK_MODE:
        monkeypatch.setenv(DISABLE_VAR, "1")
    else:
        monkeypatch.delenv(DISABLE_VAR, raising=False)
    m = await start_manager(tmp_path / "state")
    try:
        assert m.stop_mode == mode
        a, b = tmp_path / "a", tmp_path / "b"
        info = m.create(
            ["bash", "--norc", "--noprofile", "-i", "-c", SCRIPT.format(a=a, b=b)],
            cwd=str(tmp_path),
            env=child_env(tmp_path),
            owner="operator",
        )
        await until(lambda: size(a) > 0 and size(b) > 0, what="both writers")
        session = m.session(info.id)
        assert session.stop_mode == mode
        started = time.monotonic()
        assert await m.pause(info.id)
        assert time.monotonic() - started < 1.0
        assert await stable(a, b), "a writer kept writing while the session was paused"
        await m.resume(info.id)
        assert await growing(a, b)
        cg = session.cgroup
        await m.kill(info.id, grace_s=0.5)
        if mode == CGROUP_MODE:
            assert cg is not None and cg.path.parent == m.cgroups.parent
            await until(lambda: not cg.path.exists(), what="the session's cgroup removed")
        assert await stable(a, b), "a writer outlived kill"
    finally:
        parent = m.cgroups.parent
        await m.close(grace_s=0.5)
    if mode == CGROUP_MODE:
        assert parent is not None and not parent.exists()


@pytest.mark.parametrize("mode", [CGROUP_MODE, WALK_MODE])
async def test_a_resume_during_the_pause_walk_is_not_undone_by_it(tmp_path, monkeypatch, mode):
    """The operator's resume can come while a pause still walks the session's processes
    (a pause after a thaw, answered at once): the walk must not stop again what the
    resume continued."""
    if mode == WALK_MODE:
        monkeypatch.setenv(DISABLE_VAR, "1")
    else:
        monkeypatch.delenv(DISABLE_VAR, raising=False)
    m = await start_manager(tmp_path / "state")
    try:
        a, b = tmp_path / "a", tmp_path / "b"
        info = m.create(
            ["bash", "--norc", "--noprofile", "-i", "-c", SCRIPT.format(a=a, b=b)],
            cwd=str(tmp_path),
            env=child_env(tmp_path),
            owner="operator",
        )
        await until(lambda: size(a) > 0 and size(b) > 0, what="both writers")
        pausing = asyncio.create_task(m.pause(info.id, wait_s=1.0))
        await asyncio.sleep(0)  # the pause has stopped what it knew and walks on
        await m.resume(info.id)
        await pausing
        assert await growing(a, b), "the pause walk stopped the session again after the resume"
        await m.kill(info.id, grace_s=0.5)
    finally:
        await m.close(grace_s=0.5)


async def test_kill_of_a_frozen_session_ends_it(tmp_path, monkeypatch):
    monkeypatch.delenv(DISABLE_VAR, raising=False)
    m = await start_manager(tmp_path / "state")
    try:
        a = tmp_path / "a"
        info = m.create(
            ["sh", "-c", f"while :; do echo x >> {a}; sleep 0.01; done"],
            cwd=str(tmp_path),
            env=child_env(tmp_path),
            owner="operator",
        )
        await until(lambda: size(a) > 0, what="the writer")
        assert await m.pause(info.id)
        ended = await asyncio.wait_for(m.kill(info.id, grace_s=3), 2.0)
        assert ended.status == "exited"
    finally:
        await m.close(grace_s=0.5)
