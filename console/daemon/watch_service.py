"""The workspace watcher as the daemon runs it: history rows, live events.

Every workspace an operation or session uses, and every root the policy's ``watch``
names, is watched. Protected changes are recorded in the history with who wrote them,
as the tripwire names them, and handed to the tripwire (console/daemon/tripwire_service.py),
which stops or raises their writer. Subscribers get events in small batches (a
20,000-file burst must not become 20,000 frames to a console); protected ones are never
dropped. Protected changes of one directory in quick succession are a flood: one record,
one item. Protected events are kept in their own bounded list, so ordinary ones never
evict them. See docs/tripwire.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from msgspec import UnsetType

from console.contract.outcome import Change, ChangeKind
from console.daemon.events import EventHub
from console.daemon.policy_source import PolicySource
from console.daemon.session_control import NoSessions
from console.daemon.tripwire import UNKNOWN_WRITER
from console.daemon.tripwire_service import Flood, Naming, TripwireService, log_store_failure
from console.protocol import watch as wire
from console.protocol.events import WatchBatch, WatchStatusChanged
from console.protocol.watch import WatchAttribution, WatchRecord
from console.sandbox.placeholders import is_placeholder
from console.sessions.lineage import Lineage
from console.sessions.writers import PID_FANOTIFY, UNATTRIBUTED, Candidate
from console.store import Store, file_event
from console.watch import (
    Attributions,
    AttributionToken,
    FileEvent,
    WatchStatus,
    WorkspaceWatcher,
    display_path,
    net_changes,
)
from console.watch.events import Attribution, AttributionKind
from console.watch.sentinel import Hint

W = TypeVar("W", bound=wire.WatchStatus)

if TYPE_CHECKING:
    from console.daemon.ports import SessionControl

log = logging.getLogger("agent-console.watch")
# watchfiles logs a line per batch of changes; the daemon's log stays quiet unless
# something is wrong.
logging.getLogger("watchfiles").setLevel(logging.WARNING)

RECENT = 10_000
PROTECTED_RECENT = 2_000  # protected events, kept apart so ordinary ones never evict them
OPERATION_BASIS = "operation running in workspace"
# A protected change whose writer could not be named while sessions or operations were
# live in the workspace: each of them is a suspect (paused under "pause").
UNKNOWN_BASIS = UNKNOWN_WRITER
# The kernel named the writer's pid and it is certainly no session's nor operation's.
NOBODY_BASIS = "not a session's process"
PUBLISH_EVERY_S = 0.1
MAX_BATCH = 500  # ordinary events per published batch; protected ones always go
# Floods (docs/tripwire.md "Floods and noise"): protected changes in one group within a
# window are one item, one history row when it starts and one when it ends.
FLOOD_QUIET_S = 2.0  # a flood ends this long after its last change
FLOOD_MAX_S = 60.0  # ... or this long after it began (the next change starts another)
FLOOD_SINGLES = 20  # this many single changes of one group within the window start a flood
FLOOD_SAMPLE = 20  # paths kept in a flood's sample
# An operation's answer waits this long at most for the watcher to catch up with its
# changes: a stuck watcher thread must not hold the agent's answer (and its caller) forever.
CATCH_UP_LIMIT_S = 10.0


@dataclass
class _Singles:
    last: float  # when the latest of them came
    count: int = 0


class WatchService:
    def __init__(
        self,
        policy: PolicySource,
        store: Store,
        events: EventHub,
        *,
        sessions: SessionControl | None = None,
        recent_size: int = RECENT,
        protected_size: int = PROTECTED_RECENT,
    ) -> None:
        self.policy = policy
        self.store = store
        self.events = events
        self.sessions: SessionControl = sessions or NoSessions()
        self.attributions = Attributions()
        # Whose process a writer's pid is, even after it exited (console/sessions/lineage.py).
        self.lineage = Lineage()
        self.watcher = WorkspaceWatcher(
            protected_for=lambda _root: self.policy().protected_paths,
            attributions=self.attributions,
            on_event=self._on_event,
            on_status=self._on_status,
            on_hint=self._on_hint,
            writer_of=self.lineage.writer_of,
            seen=self.lineage.seen,
            stop_now=self._stop_now,
        )
        # Who wrote each protected change, and what is done to them.
        self.tripwire = TripwireService(policy, store, events, self.sessions, self.watcher, self.attributions)
        self.recent: deque[WatchRecord] = deque(maxlen=recent_size)
        self.catch_up_limit_s = CATCH_UP_LIMIT_S
        self.protected: deque[WatchRecord] = deque(maxlen=protected_size)
        # The request that started each operation-made session (its changes are the request's).
        self.session_requests: dict[str, str] = {}
        self._status = WatchStatus()
        self._collecting: dict[str, list[FileEvent]] = {}
        self.op_sessions: dict[str, str] = {}  # executed request id -> its agent session
        self._outbox: list[WatchRecord] = []
        self._held_back = 0
        self._publisher: asyncio.Task[None] | None = None
        self._adding: dict[str, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._floods: dict[tuple[str, str, bool], Flood] = {}
        self._singles: dict[tuple[str, str, bool], _Singles] = {}
        self._republish: dict[int, WatchRecord] = {}  # flood records updated since the last frame

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self.lineage.cgroups = self.sessions.cgroups_available  # known once the sessions have started
        self.lineage.start()
        self._publisher = asyncio.create_task(self._publish_forever())
        await self.tripwire.start()
        for root in self.policy().watch:
            self.watch_soon(root)

    async def close(self) -> None:
        if self._publisher is not None:
            self._publisher.cancel()
        self.tripwire.close()
        await self.watcher.close()
        await asyncio.to_thread(self.lineage.close)

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

    def status(self, kind: type[W]) -> W:
        """The watcher's status as ``kind``: the status part itself, or the answer of a
        ``watch.*`` method, which is the same fields."""
        degraded = [r for r in self._status.roots if r.state == "degraded"]
        roots = len(self._status.roots)
        summary = (
            f"{roots} roots, "
            + (
                f"{len(degraded)} DEGRADED ({degraded[0].reasons[0].code})"
                if degraded and degraded[0].reasons
                else "all ok"
            )
            if roots
            else "no roots yet"
        )
        return kind(
            ok=self._status.ok,
            roots=[msgspec.convert(r.to_dict(), wire.WatchRoot) for r in self._status.roots],
            # How protected writes are seen and who is named: "fanotify+inotify" (the
            # writer's pid from the kernel), "inotify" (evidence from /proc), "off".
            fast_lane=self.watcher.fast_lane,
            # How a writer that exited is still named: "proc connector" (its lineage), or
            # "off (why)"; and whether opens in the hot directories wait to be read.
            lineage=self.lineage.mode,
            open_gate=self.watcher.open_gate,
            deep_dirs={r.root: self.watcher.deep_dirs(r.root) for r in self._status.roots},
            summary=summary,
            paused_sessions=self.tripwire.paused(),
            protected_kept=len(self.protected),
            recent_kept=len(self.recent),
        )

    def recent_records(self, protected_only: bool = False) -> Iterator[wire.WatchEntry]:
        """Newest first: ordinary and protected events, or protected only. Protected ones
        come from their own list, so ordinary ones cannot have evicted them. Each is
        converted as it is taken: a caller that stops early converts no more."""
        if protected_only:
            records: Iterable[WatchRecord] = reversed(self.protected)
        else:
            oldest = self.recent[0].seq if self.recent else None
            older = [r for r in self.protected if oldest is None or r.seq < oldest]
            records = [*reversed(self.recent), *reversed(older)]
        return (r.entry() for r in records)

    # ------------------------------------------------------------------ attribution

    def begin(
        self,
        root: str,
        kind: AttributionKind,
        ident: str,
        label: str,
        pid: int | None,
        at: float | None = None,
    ) -> AttributionToken:
        if pid:
            self.lineage.register(pid, "session" if kind == "session" else "operation", ident)
        return self.attributions.begin(root, kind, ident, label, pid, at=at)

    def made_by_other(self, operation: str, root: str, path: str) -> bool:
        """Whether the kernel named someone other than ``operation`` writing ``path``
        (canonical) lately: a session, or a process outside every session."""
        return self.tripwire.made_by_other(operation, root, path)

    def started(self, kind: str, ident: str, pid: int) -> None:
        """A session's or operation's first process started after ``begin`` (its pid is
        known only now): everything below it is that writer's."""
        self.lineage.register(pid, "session" if kind == "session" else "operation", ident)

    def end(self, token: AttributionToken) -> None:
        self.attributions.end(token)

    def started_by(self, session_id: str, request_id: str) -> None:
        self.session_requests[session_id] = request_id

    def collect(self, op_id: str, agent_session: str = "") -> None:
        self._collecting[op_id] = []
        if agent_session:
            if len(self.op_sessions) > RECENT:
                self.op_sessions.clear()
            self.op_sessions[op_id] = agent_session

    async def changes_of(self, op_id: str, root: str) -> list[Change]:
        """Everything the operation changed, once the watcher has caught up (or what it
        had seen when it did not within ``catch_up_limit_s``: logged with the threads'
        stacks, for the stuck one is a bug to find)."""
        try:
            await asyncio.wait_for(self.watcher.flush(root), self.catch_up_limit_s)
        except TimeoutError:
            log.error(
                "the watcher of %s did not catch up in %.0f s: the changes of %s are those seen so far\n%s",
                root,
                self.catch_up_limit_s,
                op_id,
                thread_stacks(),
            )
        return list(net_changes(self._collecting.pop(op_id, [])))

    # ------------------------------------------------------------------ events

    def _on_status(self, status: WatchStatus) -> None:
        self._status = status
        self.events.publish(WatchStatusChanged(watch=self.status(wire.WatchStatus)))

    def _on_event(self, ev: FileEvent) -> None:
        if (
            ev.kind is ChangeKind.ADDED
            and not ev.flood
            and is_placeholder(ev.workspace_root, ev.path, ev.is_dir)
        ):
            return  # the sandbox's own placeholder (console/sandbox/placeholders.py)
        if self.tripwire.own_revert(ev):
            return
        for a in ev.attribution:
            if a.kind == "operation" and a.id in self._collecting:
                self._collecting[a.id].extend(_members(ev))
        if ev.protected is not None and ev.group is not None and self._absorbed(ev):
            return
        record = msgspec.convert(ev.to_dict(), WatchRecord)
        if ev.flood:
            record.sample = [display_path(p) for p in ev.members[:FLOOD_SAMPLE]]
        if ev.protected is not None:
            if (
                not ev.quiet
                and self.watcher.fast_lane == "fanotify+inotify"
                and self.tripwire.fan_writer(ev.workspace_root, ev.path, ev.changed_at) is None
            ):
                # The kernel's account of this change may still be on its way (the fast
                # lane reads it in its own thread): settle that before judging the writer.
                task = asyncio.create_task(self._protected_settled(ev, record))
                self._background.add(task)
                task.add_done_callback(self._background.discard)
                return
            self._protected(ev, record)
        else:
            self.recent.append(record)
            if len(self._outbox) < MAX_BATCH * 4:
                self._outbox.append(record)
            else:
                self._held_back += 1

    async def _protected_settled(self, ev: FileEvent, record: WatchRecord) -> None:
        try:
            await self.watcher.settle()
        finally:
            self._protected(ev, record)

    def _protected(self, ev: FileEvent, record: WatchRecord) -> None:
        """A protected change: attributed, kept, recorded, raised; or folded into a flood
        of its group that opened while it waited for the kernel's account of its writer
        (a burst's batches wait side by side: each opened a flood of its own, a history
        row each)."""
        if ev.group is not None and self._absorbed(ev):
            return
        self.recent.append(record)
        naming = self.tripwire.name(ev)
        self._attribute_record(ev, record, naming)
        self.protected.append(record)
        flood = self._open_flood(ev, record)
        self._record(ev, record, naming.named)
        if flood is not None:
            flood.recorded_count = record.count
        self.tripwire.raise_change(ev, naming, flood)
        self._outbox.append(record)

    def _on_hint(self, hint: Hint) -> None:
        self.tripwire.on_hint(hint)

    def _stop_now(self, hint: Hint) -> None:
        """In the fast lane's thread (the tripwire's rules, before the hint reaches the loop)."""
        self.tripwire.stop_now(hint)

    # ------------------------------------------------------------------ floods

    def _flood_key(self, ev: FileEvent) -> tuple[str, str, bool]:
        assert ev.group is not None
        return (ev.workspace_root, ev.group, ev.quiet is not None)

    def _open_flood(self, ev: FileEvent, record: WatchRecord) -> Flood | None:
        """A flood starts with a folded event, or with the ``FLOOD_SINGLES``-th single
        change of one group, each within ``FLOOD_QUIET_S`` of the one before (the gap
        that ends a flood: a writer slowed down by a busy machine is still one flood);
        later ones are absorbed into it."""
        if ev.group is None:
            return None
        key = self._flood_key(ev)
        now = time.monotonic()
        if not ev.flood:
            singles = self._singles.get(key)
            if singles is None or now - singles.last > FLOOD_QUIET_S:
                if len(self._singles) > 1_000:
                    self._singles.clear()
                singles = self._singles[key] = _Singles(now)
            singles.last = now
            singles.count += 1
            if singles.count < FLOOD_SINGLES:
                return None
            record.sample = [record.display_path]
        self._singles.pop(key, None)
        flood = Flood(record=record, started=now, last=now, sessions=set())
        record.flood = True
        record.flood_dir = display_path(ev.group) if ev.group else "."
        if len(self._floods) > 1_000:
            self._close_floods(force=True)
        self._floods[key] = flood
        return flood

    def _absorbed(self, ev: FileEvent) -> bool:
        """Fold ``ev`` into the open flood of its group: count, sample, and a tripwire
        for a session not yet raised for this flood. No history row, no new item."""
        key = self._flood_key(ev)
        flood = self._floods.get(key)
        now = time.monotonic()
        if flood is None or now - flood.last > FLOOD_QUIET_S or now - flood.started > FLOOD_MAX_S:
            return False
        flood.last = now
        rec = flood.record
        rec.count += ev.count
        if isinstance(rec.sample, UnsetType):
            rec.sample = []
        sample = rec.sample
        for p in ev.members or (ev.path,):
            if len(sample) >= FLOOD_SAMPLE:
                break
            sample.append(display_path(p))
        if ev.kind.value != rec.kind:
            rec.kind = ChangeKind.MODIFIED.value
        if flood.item is not None:
            flood.item.count = rec.count
            flood.item.sample = tuple(sample)
        self._republish[rec.seq] = rec
        self.tripwire.absorbed(ev, flood)
        return True

    def _close_floods(self, *, force: bool = False) -> None:
        """Floods quiet for ``FLOOD_QUIET_S`` (or too old) end: one more history row
        with the final count when it grew."""
        if not self._floods:
            return
        now = time.monotonic()
        for key, flood in list(self._floods.items()):
            if not force and now - flood.last <= FLOOD_QUIET_S and now - flood.started <= FLOOD_MAX_S:
                continue
            del self._floods[key]
            rec = flood.record
            if rec.count > flood.recorded_count:
                rec.flood_ended = True
                self._flood_row(rec)
                self._republish[rec.seq] = rec

    def _flood_row(self, rec: WatchRecord) -> None:
        session = next((a.id for a in rec.attribution if a.kind == "session"), "")
        row = file_event(
            at=time.time(),
            path=rec.display_path,
            change=rec.kind,
            protected_pattern=rec.protected or "",
            workspace_root=rec.workspace_root,
            session_id=session,
            attribution={**_history_attribution(rec), "flood_end": True},
        )
        self.store.append(row).add_done_callback(log_store_failure)

    def _attribute_record(self, ev: FileEvent, record: WatchRecord, naming: Naming) -> None:
        """A protected event names sessions by evidence only (their basis with them);
        operations by their process, or as the sandboxed run active in the workspace
        when the writer is unknown; an unknown writer's suspects are every session and
        operation live in the workspace (basis ``UNKNOWN_BASIS``)."""
        named, writer, suspects = naming.named, naming.writer, naming.suspects
        root = record.workspace_root
        entries: list[WatchAttribution] = []
        if writer is not None and writer.kind == "operation":
            entries.append(
                WatchAttribution(kind="operation", id=writer.id, workspace_root=root, basis=PID_FANOTIFY)
            )
        for a in ev.attribution if writer is None and not named else ():
            if a.kind == "operation":
                entries.append(_attribution(a, OPERATION_BASIS))
        for a in suspects or ():
            if a.kind == "session":
                entries.append(_attribution(a, UNKNOWN_BASIS))
        for c in named:
            entries.append(
                WatchAttribution(
                    kind="session",
                    id=c.session_id,
                    label=c.label[:200],
                    pid=c.pid,
                    workspace_root=root,
                    basis=c.basis,
                    in_workspace=c.in_workspace,
                    alive=c.alive,
                )
            )
        record.attribution = entries
        if named:
            record.attribution_basis = named[0].basis
        elif writer is not None and writer.kind == "operation":
            record.attribution_basis = PID_FANOTIFY
        elif writer is not None:
            record.attribution_basis = f"{NOBODY_BASIS} ({writer.how})"
        elif suspects:
            record.attribution_basis = UNKNOWN_BASIS
        elif entries:
            record.attribution_basis = OPERATION_BASIS
        else:
            record.attribution_basis = UNATTRIBUTED

    def _record(self, ev: FileEvent, record: WatchRecord, named: list[Candidate]) -> None:
        operations = [a.id for a in ev.attribution if a.kind == "operation"]
        row = file_event(
            at=ev.at,
            path=record.display_path,
            change=ev.kind.value,
            protected_pattern=ev.protected or "",
            workspace_root=ev.workspace_root,
            request_id=operations[0]
            if operations
            else self.session_requests.get(named[0].session_id, "")
            if named
            else "",
            session_id=named[0].session_id if named else "",
            attribution=_history_attribution(record),
        )
        future = self.store.append(row)
        future.add_done_callback(log_store_failure)

    async def _publish_forever(self) -> None:
        while True:
            await asyncio.sleep(PUBLISH_EVERY_S)
            self._close_floods()
            if self._republish:
                seqs = {r.seq for r in self._outbox}
                self._outbox.extend(r for q, r in self._republish.items() if q not in seqs)
                self._republish.clear()
            if not self._outbox and not self._held_back:
                continue
            protected = [r for r in self._outbox if r.protected]
            ordinary = [r for r in self._outbox if not r.protected]
            batch = protected + ordinary[:MAX_BATCH]
            dropped = len(ordinary) - min(len(ordinary), MAX_BATCH) + self._held_back
            self._outbox, self._held_back = [], 0
            entries = [r.entry() for r in batch]
            self.events.publish(WatchBatch(events=entries, dropped=dropped))


def _attribution(a: Attribution, basis: str) -> WatchAttribution:
    return WatchAttribution(
        kind=a.kind, id=a.id, label=a.label, pid=a.pid, workspace_root=a.workspace_root, basis=basis
    )


def _history_attribution(record: WatchRecord) -> dict[str, Any]:
    """The history row's account of a protected change: who, how it was known, and the
    event as it stood when recorded."""
    event = msgspec.to_builtins(record)
    basis = record.attribution_basis
    return {
        "who": event["attribution"] or "unattributed",
        "basis": UNATTRIBUTED if isinstance(basis, UnsetType) else basis,
        "event": event,
    }


def _members(ev: FileEvent) -> list[FileEvent]:
    """A flood as one event per path (an operation's outcome lists each change)."""
    if not ev.flood:
        return [ev]
    return [dataclasses.replace(ev, path=p, count=1, members=(), is_dir=False) for p in ev.members]


def thread_stacks() -> str:
    """Every thread's Python stack, named: what a hang report needs."""
    names = {t.ident: t.name for t in threading.enumerate()}
    return "\n".join(
        f"thread {names.get(ident, ident)}:\n{''.join(traceback.format_stack(frame))}"
        for ident, frame in sys._current_frames().items()
    )
