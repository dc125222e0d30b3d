"""The workspace watcher as the daemon runs it: history rows, live events, the tripwire.

Every workspace an operation or session uses, and every root the policy's ``watch``
names, is watched. Protected changes are recorded in the history with who was active
there. Subscribers get events in small batches (a 20,000-file burst must not become
20,000 frames to a console); protected ones are never dropped. The tripwire acts on a
protected change attributed to a session: ``alert`` raises it in the console,
``pause`` also stops the session (SIGSTOP to its process group) and queues a tripwire
item the operator answers with resume, kill or keep paused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import signal
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from console.contract.outcome import Change, ChangeKind
from console.daemon.events import EventHub, Topic
from console.daemon.policy_source import PolicySource
from console.policy import Tripwire
from console.protocol.jsonrpc import NOT_FOUND, RPCError
from console.sandbox.placeholders import is_placeholder
from console.store import Event, Store, StoreUnavailable, file_event
from console.watch import (
    Attributions,
    AttributionToken,
    FileEvent,
    WatchStatus,
    WorkspaceWatcher,
    display_path,
    net_changes,
)

if TYPE_CHECKING:
    from console.daemon.session_service import SessionService

log = logging.getLogger("agent-console.watch")

RECENT = 10_000
PUBLISH_EVERY_S = 0.1
MAX_BATCH = 500  # ordinary events per published batch; protected ones always go


class TripwireAction(StrEnum):
    RESUME = "resume"
    KILL = "kill"
    KEEP_PAUSED = "keep_paused"


@dataclass
class TripwireItem:
    id: str
    at: float
    session: str
    session_label: str
    workspace_root: str
    path: str
    pattern: str
    kind: str
    diff: str | None
    state: str = "paused"  # paused | resumed | killed | kept

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at,
            "session": self.session,
            "session_label": self.session_label,
            "workspace_root": self.workspace_root,
            "display_path": display_path(self.path),
            "pattern": self.pattern,
            "change": self.kind,
            "diff": self.diff,
            "state": self.state,
            "summary": f"session {self.session} modified {display_path(self.path)}",
        }


class WatchService:
    def __init__(self, policy: PolicySource, store: Store, events: EventHub) -> None:
        self.policy = policy
        self.store = store
        self.events = events
        self.sessions: SessionService | None = None
        self.attributions = Attributions()
        self.watcher = WorkspaceWatcher(
            protected_for=lambda _root: self.policy().protected_paths,
            attributions=self.attributions,
            on_event=self._on_event,
            on_status=self._on_status,
        )
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self.tripwires: dict[str, TripwireItem] = {}
        self._status = WatchStatus()
        self._collecting: dict[str, list[FileEvent]] = {}
        self.op_sessions: dict[str, str] = {}  # executed request id -> its agent session
        self._outbox: list[dict[str, Any]] = []
        self._held_back = 0
        self._publisher: asyncio.Task[None] | None = None
        self._adding: dict[str, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self._publisher = asyncio.create_task(self._publish_forever())
        for root in self.policy().watch:
            self.watch_soon(root)

    async def close(self) -> None:
        if self._publisher is not None:
            self._publisher.cancel()
        await self.watcher.close()

    async def ensure_root(self, root: str) -> None:
        """Watch ``root``, waiting until its baselines are taken (once per root)."""
        task = self._adding.get(root)
        if task is None:
            task = self._adding[root] = asyncio.create_task(self._add(root))
        await asyncio.shield(task)

    async def remove_root(self, root: str) -> bool:
        """Stop watching ``root`` (its inotify watches go with it); False if it was not watched.

        A root the policy's ``watch`` names comes back at the next policy reload.
        """
        task = self._adding.pop(root, None)
        watched = root in self.watcher.roots()
        if task is not None and not task.done():
            task.cancel()
        await self.watcher.remove_root(root)
        return watched or task is not None

    def watch_soon(self, root: str) -> None:
        if root not in self._adding:
            self._adding[root] = asyncio.create_task(self._add(root))

    async def _add(self, root: str) -> None:
        try:
            await self.watcher.add_root(root)
        except (ValueError, OSError) as exc:
            log.warning("cannot watch %s: %s", root, exc)

    async def policy_changed(self) -> None:
        await self.watcher.policy_changed()
        for root in self.policy().watch:
            self.watch_soon(root)

    def status(self) -> dict[str, Any]:
        st = self._status.to_dict()
        degraded = [r for r in self._status.roots if r.state == "degraded"]
        roots = len(self._status.roots)
        st["summary"] = (
            f"{roots} roots, "
            + (
                f"{len(degraded)} DEGRADED ({degraded[0].reasons[0].code})"
                if degraded and degraded[0].reasons
                else "all ok"
            )
            if roots
            else "no roots yet"
        )
        st["paused_sessions"] = [t.to_wire() for t in self.tripwires.values() if t.state == "paused"]
        return st

    # ------------------------------------------------------------------ attribution

    def begin(
        self, root: str, kind: str, ident: str, label: str, pid: int | None, at: float | None = None
    ) -> AttributionToken:
        return self.attributions.begin(root, kind, ident, label, pid, at=at)  # type: ignore[arg-type]

    def end(self, token: AttributionToken) -> None:
        self.attributions.end(token)

    def collect(self, op_id: str, agent_session: str = "") -> None:
        self._collecting[op_id] = []
        if agent_session:
            if len(self.op_sessions) > RECENT:
                self.op_sessions.clear()
            self.op_sessions[op_id] = agent_session

    async def changes_of(self, op_id: str, root: str) -> list[Change]:
        """Everything the operation changed, once the watcher has caught up."""
        await self.watcher.flush(root)
        return list(net_changes(self._collecting.pop(op_id, [])))

    # ------------------------------------------------------------------ events

    def _on_status(self, status: WatchStatus) -> None:
        self._status = status
        self.events.publish(Topic.STATUS, {"watch": self.status()})

    def _on_event(self, ev: FileEvent) -> None:
        if ev.kind is ChangeKind.ADDED and is_placeholder(ev.workspace_root, ev.path, ev.is_dir):
            return  # the sandbox's own placeholder (console/sandbox/placeholders.py)
        record = ev.to_dict()
        self.recent.append(record)
        for a in ev.attribution:
            if a.kind == "operation" and a.id in self._collecting:
                self._collecting[a.id].append(ev)
        if ev.protected is not None:
            self._record(ev, record)
            self._tripwire(ev)
            self._outbox.append(record)
        elif len(self._outbox) < MAX_BATCH * 4:
            self._outbox.append(record)
        else:
            self._held_back += 1

    def _record(self, ev: FileEvent, record: dict[str, Any]) -> None:
        sessions = [a.id for a in ev.attribution if a.kind == "session"]
        operations = [a.id for a in ev.attribution if a.kind == "operation"]
        row = file_event(
            at=ev.at,
            path=record["display_path"],
            change=ev.kind.value,
            protected_pattern=ev.protected or "",
            workspace_root=ev.workspace_root,
            request_id=operations[0] if operations else "",
            session_id=sessions[0] if sessions else "",
            attribution={"who": record["attribution"] or "unattributed", "event": record},
        )
        future = self.store.append(row)
        future.add_done_callback(_log_store_failure)

    async def _publish_forever(self) -> None:
        while True:
            await asyncio.sleep(PUBLISH_EVERY_S)
            if not self._outbox and not self._held_back:
                continue
            protected = [r for r in self._outbox if r["protected"]]
            ordinary = [r for r in self._outbox if not r["protected"]]
            batch = protected + ordinary[:MAX_BATCH]
            dropped = len(ordinary) - min(len(ordinary), MAX_BATCH) + self._held_back
            self._outbox, self._held_back = [], 0
            self.events.publish(Topic.WATCH, {"change": "events", "events": batch, "dropped": dropped})

    # ------------------------------------------------------------------ tripwire

    def _tripwire(self, ev: FileEvent) -> None:
        mode = self.policy().tripwire
        sessions = [a for a in ev.attribution if a.kind == "session"]
        if mode is Tripwire.OFF or not sessions:
            return
        diff = self.watcher.baseline_diff(ev.workspace_root, ev.path)
        for a in sessions:
            if not self._alive(a.id):
                continue  # attributed in the short window after it ended: nothing to stop
            if mode is Tripwire.ALERT:
                self.events.publish(
                    Topic.WATCH,
                    {
                        "change": "alert",
                        "session": a.id,
                        "display_path": display_path(ev.path),
                        "pattern": ev.protected,
                        "summary": f"session {a.id} modified {display_path(ev.path)}",
                    },
                )
                continue
            if any(t.session == a.id and t.state == "paused" for t in self.tripwires.values()):
                continue  # already stopped: one item per pause
            item = TripwireItem(
                id="t-" + secrets.token_hex(4),
                at=time.time(),
                session=a.id,
                session_label=a.label,
                workspace_root=ev.workspace_root,
                path=ev.path,
                pattern=ev.protected or "",
                kind=ev.kind.value,
                diff=diff,
            )
            self._stop_session(a.id)
            self.tripwires[item.id] = item
            if self.sessions is not None:
                self.sessions.changed(a.id)
            self._history("tripwire", item, "paused")
            self.events.publish(Topic.WATCH, {"change": "tripwire", "item": item.to_wire()})
            log.warning("tripwire: %s; session stopped", item.to_wire()["summary"])

    def _alive(self, session_id: str) -> bool:
        if self.sessions is None:
            return False
        try:
            return self.sessions.manager.get(session_id).alive
        except Exception:
            return False

    def _stop_session(self, session_id: str) -> None:
        """SIGSTOP through the session manager: its handle never signals a reused pid."""
        if self.sessions is None:
            return
        try:
            self.sessions.manager.signal(session_id, signal.SIGSTOP)
        except Exception as exc:
            log.warning("could not stop session %s: %s", session_id, exc)

    async def resolve(self, item_id: str, action: TripwireAction) -> dict[str, Any]:
        item = self.tripwires.get(item_id)
        if item is None or item.state != "paused":
            raise RPCError(NOT_FOUND, f"no paused tripwire item {item_id}")
        assert self.sessions is not None
        manager = self.sessions.manager
        if action is TripwireAction.RESUME:
            manager.signal(item.session, signal.SIGCONT)
            item.state = "resumed"
        elif action is TripwireAction.KILL:
            manager.signal(item.session, signal.SIGCONT)
            await manager.kill(item.session)
            item.state = "killed"
        else:
            item.state = "kept"
        self.watcher.accept_baseline(item.workspace_root, item.path)
        self.sessions.changed(item.session)
        with contextlib.suppress(StoreUnavailable):  # logged by the callback
            await asyncio.wrap_future(self._history("tripwire_resolved", item, item.state))
        self.events.publish(Topic.WATCH, {"change": "tripwire_resolved", "item": item.to_wire()})
        return item.to_wire()

    def _history(self, kind: str, item: TripwireItem, state: str) -> Future[list[int]]:
        wire = item.to_wire()
        row = Event(
            kind=kind,
            at=time.time(),
            session_id=item.session,
            workspace_root=item.workspace_root,
            command=wire["display_path"],
            reason=item.pattern,
            verdict=state,
            note=wire["summary"],
            body={"item": wire},
        )
        future = self.store.append(row)
        future.add_done_callback(_log_store_failure)
        return future


def _log_store_failure(future: Any) -> None:
    exc = future.exception()
    if isinstance(exc, StoreUnavailable):
        log.error("could not record a watch event: %s", exc)
    elif exc is not None:
        log.error("recording a watch event failed: %r", exc)
