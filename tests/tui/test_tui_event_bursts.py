"""A burst of whole-state events is handled once, with the newest state.

The console's message queue drops a queued status or session event for a newer one of
the same thing (Textual's ``Message.can_replace``), so a daemon that sends a hundred
status changes while the console paints costs one repaint, not a hundred; events that
are not whole states (a request added, a decision) are never dropped.
"""

from __future__ import annotations

from typing import Any

import msgspec
from support.items import daemon_status, watch_status_wire
from textual import on
from textual.app import App

from console.protocol import events as ev
from console.protocol.sessions import SessionObject
from console.protocol.watch import WatchStatus
from console.tui.link import DaemonLink


def session(sid: str, status: str) -> SessionObject:
    return SessionObject(
        id=sid, title="t", argv=["sh"], cwd="/", owner="operator", mode="interactive",
        record_input=False, created_at=0.0, pid=1, pid_create_time=0.0, cols=80, rows=24,
        status=status, exit_code=None, exit_signal=None, ended_at=None, last_output_at=None,
        output_bytes=0, terminal_title="", recording_truncated=False, recording_pruned=False,
        status_text=status, sandboxed=True, stats=None,
    )  # fmt: skip


class Recorder(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    @on(DaemonLink.StatusChanged)
    @on(DaemonLink.WatchStatusChanged)
    @on(DaemonLink.SessionChanged)
    @on(DaemonLink.Decided)
    def record(self, message: DaemonLink.DaemonEvent[Any]) -> None:
        self.seen.append(message.event)


def status(n: int) -> DaemonLink.StatusChanged:
    return DaemonLink.StatusChanged(ev.StatusChanged(status=daemon_status(pending=n)))


def watch(n: int, host: str = "") -> DaemonLink.WatchStatusChanged:
    part = msgspec.convert(watch_status_wire(summary=str(n)), WatchStatus)
    return DaemonLink.WatchStatusChanged(ev.WatchStatusChanged(watch=part), host)


def decided(n: int) -> DaemonLink.Decided:
    return DaemonLink.Decided(
        ev.Decided(request_id=f"r-{n}", verdict="deny", source="operator", reason="", queued=False)
    )


async def test_a_burst_of_status_changes_is_handled_once_with_the_newest():
    app = Recorder()
    async with app.run_test() as pilot:
        for n in range(100):
            app.post_message(status(n))
        await pilot.pause()
        assert [e.status.pending for e in app.seen] == [99]


async def test_a_whole_status_replaces_a_queued_watcher_part_but_not_the_reverse():
    app = Recorder()
    async with app.run_test() as pilot:
        app.post_message(watch(1))
        app.post_message(status(2))  # holds the watcher's part: the queued one goes
        app.post_message(watch(3))  # only the watcher's part: the status before it stays
        await pilot.pause()
        assert [type(e).__name__ for e in app.seen] == ["StatusChanged", "WatchStatusChanged"]


async def test_hosts_and_sessions_are_kept_apart_and_other_events_never_dropped():
    app = Recorder()
    async with app.run_test() as pilot:
        app.post_message(watch(1, "a"))
        app.post_message(watch(2, "b"))
        for n in range(5):
            app.post_message(
                DaemonLink.SessionChanged(ev.SessionChanged(change="status", session=session("s1", f"{n}")))
            )
        app.post_message(
            DaemonLink.SessionChanged(ev.SessionChanged(change="status", session=session("s2", "x")))
        )
        for n in range(5):
            app.post_message(decided(n))
        await pilot.pause()
        watched = [int(e.watch.summary) for e in app.seen if isinstance(e, ev.WatchStatusChanged)]
        sessions = [(e.session.id, e.session.status) for e in app.seen if isinstance(e, ev.SessionChanged)]
        decisions = [e.request_id for e in app.seen if isinstance(e, ev.Decided)]
        assert watched == [1, 2]
        assert sessions == [("s1", "4"), ("s2", "x")]
        assert decisions == [f"r-{n}" for n in range(5)]
