"""The tripwire: who wrote a protected path, and what is done to them.

The workspace watcher (console/daemon/watch_service.py) hands each protected change
here. A writer is named by evidence (console/sessions/writers.py: the kernel's pid from
fanotify, the file open for write, or write I/O in the change's window; never time or
directory overlap alone). ``alert`` raises it in the console; ``pause`` also stops every
process of the session (cgroup freeze, else a marker walk, console/sessions/cgroups.py)
when the evidence is firm, and queues a tripwire item the operator answers with resume,
kill or keep paused, each able to put the file back as its baseline. A session that
wrote and already exited gets an item too (state ``exited``); a writer that could not be
named while sessions were live in the workspace makes each of them a suspect. A stopped
session resumed by anyone but the operator is stopped again. See docs/tripwire.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from console.contract.operation import is_within
from console.contract.outcome import ChangeKind
from console.daemon.errors import InvalidParams, NotFound
from console.daemon.events import EventHub
from console.daemon.policy_source import PolicySource
from console.daemon.tripwire import UNKNOWN_WRITER, TripwireItem, TripwireState
from console.policy import Tripwire
from console.protocol.events import TripwireRaised, TripwireResolved, WatchAlert
from console.protocol.requests import TripwireResolution
from console.protocol.tripwire import TripwireNotice
from console.protocol.watch import AcceptedChange, WatchRecord
from console.sandbox.placeholders import is_placeholder
from console.sessions.cgroups import CGROUP_MODE
from console.sessions.lineage import Writer
from console.sessions.writers import PID_FANOTIFY, WRITE_IO, Candidate, WriterEvidence
from console.store import Event, Store, StoreUnavailable
from console.watch import Attribution, Attributions, FileEvent, WorkspaceWatcher, display_path
from console.watch.baseline import Previous
from console.watch.revert import REVERT_PREFIX, RevertError
from console.watch.sentinel import Hint

if TYPE_CHECKING:
    from console.daemon.ports import SessionControl

log = logging.getLogger("agent-console.watch")

SAMPLE_EVERY_S = 0.25  # sessions' write counters, for attribution
ALERT_EVERY_S = 2.0  # at most one alert per session this often (floods)
THAW_CHECK_S = 0.02  # a stopped session resumed by someone else is stopped again within this
MAX_ACCEPTED = 2000  # remembered tripwire answers that moved a baseline
MAX_RESTORE = 2000  # paths of one item whose previous content is kept
EARLY_WAIT_S = 1.0  # the longest a fast-lane stop waits for its event before it is raised
FAN_WINDOW_S = 2.0  # a fanotify-named writer explains the path's events this long after
REVERT_QUIET_S = 2.0  # a reverted path's events are the console's own this long
MAX_FAN_WRITERS = 4096  # remembered fanotify-named writers
MAX_RESUMED = 4096  # remembered (session, root, path) the operator resumed


@dataclass
class Flood:
    """An open flood (docs/tripwire.md "Floods and noise"): one record (updated in
    place), its counts, and who was raised for it, so each session is raised once."""

    record: WatchRecord
    started: float
    last: float
    recorded_count: int = 0
    sessions: set[str] | None = None
    item: TripwireItem | None = None


@dataclass(frozen=True)
class Naming:
    """Who wrote a protected change: the sessions named by evidence; else a writer known
    for certain to be no session (an operation's process, or nobody's); else, with the
    writer unknown, every session and operation live in the workspace (suspects)."""

    named: list[Candidate]
    writer: Writer | None = None
    suspects: list[Attribution] | None = None


class TripwireService:
    def __init__(
        self,
        policy: PolicySource,
        store: Store,
        events: EventHub,
        sessions: SessionControl,
        watcher: WorkspaceWatcher,
        attributions: Attributions,
    ) -> None:
        self.policy = policy
        self.store = store
        self.events = events
        self.sessions = sessions
        # Baselines (the diff an item shows, the bytes a revert puts back) and its fast lane.
        self.watcher = watcher
        self.attributions = attributions
        self.evidence = WriterEvidence()
        self.items: dict[str, TripwireItem] = {}
        # The change a tripwire answer accepted as the new baseline, by (root, path): so the
        # panel can say "you answered this change" instead of "same as its baseline".
        self.accepted: dict[tuple[str, str], AcceptedChange] = {}
        # An operation's own process wrote a protected path (the execution service refuses it).
        self.on_operation_wrote: Callable[[str, str], None] | None = None
        self._alerted: dict[str, float] = {}
        self._background: set[asyncio.Task[Any]] = set()
        # Sessions whose stop is still being completed: a process signalled a moment ago
        # may not have stopped yet, which is no thaw.
        self._stopping: set[str] = set()
        # Sessions the fast lane stopped, by id: their item until the change is complete.
        self._early: dict[str, TripwireItem] = {}
        # Paths being put back by a revert, by (root, path): until (monotonic) their events
        # are the console's own.
        self._reverting: dict[tuple[str, str], float] = {}
        # Writers fanotify reported, by (root, path): (whose process, wall-clock time).
        self._fan_writers: dict[tuple[str, str], tuple[Writer, float]] = {}
        # (session, root, path) of items the operator resumed: read by the fast lane's
        # thread, which leaves a later write there to the loop (``_answered``).
        self._resumed: dict[tuple[str, str, str], None] = {}
        self._thaws: asyncio.Task[None] | None = None
        self._sampler: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._thaws = asyncio.create_task(self._watch_thaws())
        self._sampler = asyncio.create_task(self._sample_forever())

    def close(self) -> None:
        for task in (self._thaws, self._sampler):
            if task is not None:
                task.cancel()

    def holds(self, session_id: str) -> bool:
        """The tripwire keeps the session stopped (paused, or kept paused)."""
        return any(
            t.session == session_id and t.state in (TripwireState.PAUSED, TripwireState.KEPT)
            for t in self.items.values()
        )

    def paused(self) -> list[TripwireNotice]:
        return [t.notice() for t in self.items.values() if t.state is TripwireState.PAUSED]

    def made_by_other(self, operation: str, root: str, path: str) -> bool:
        """Whether the kernel named someone other than ``operation`` writing ``path``
        (canonical) lately: a session, or a process outside every session."""
        real = os.path.realpath(root)
        rel = path[len(real.rstrip("/")) + 1 :] if path.startswith(real.rstrip("/") + "/") else path
        for key in ((root, rel), (real, rel)):
            known = self._fan_writers.get(key)
            if known is not None:
                writer = known[0]
                return (
                    not (writer.kind == "operation" and writer.id == operation) and writer.kind != "unknown"
                )
        return False

    # ------------------------------------------------------------------ naming writers

    def name(self, ev: FileEvent) -> Naming:
        """Who wrote ``ev`` (nobody is looked for in a quiet change: the console's own)."""
        if ev.quiet:
            return Naming([])
        named = self.writers(ev)
        if named:
            return Naming(named)
        writer = self._known_writer(ev)
        return Naming([], writer, self._suspects(ev) if writer is None else [])

    def raise_change(self, ev: FileEvent, naming: Naming, flood: Flood | None) -> None:
        """Act on a protected change as its naming says: a named session's tripwire, an
        operation's refusal, or the suspects of an unknown writer."""
        if ev.quiet:
            return
        if naming.named:
            self._tripwire(ev, naming.named, flood)
        elif naming.writer is not None and naming.writer.kind == "operation":
            self._operation_wrote(ev, naming.writer.id)
        elif naming.writer is None:
            self._unknown_writer(ev, naming.suspects or [], flood)

    def absorbed(self, ev: FileEvent, flood: Flood) -> None:
        """A change folded into an open flood: a session named for it that was not yet
        raised for this flood is raised now."""
        if ev.quiet:
            return
        fresh = [c for c in self.writers(ev) if c.session_id not in (flood.sessions or set())]
        if fresh:
            self._tripwire(ev, fresh, flood)

    def writers(self, ev: FileEvent) -> list[Candidate]:
        """The sessions with evidence of having written the changed file."""
        return self._writers_of(ev.workspace_root, ev.path, ev.changed_at)

    def fan_writer(self, root: str, path: str, changed_at: float) -> Writer | None:
        """Whose process the kernel reported writing ``path`` around ``changed_at``."""
        known = self._fan_writers.get((root, path))
        if known is not None and known[1] >= changed_at - FAN_WINDOW_S:
            return known[0]
        return None

    def _known_writer(self, ev: FileEvent) -> Writer | None:
        """A writer that is no session and is known for certain (an operation's process,
        or nobody's: the operator's, the daemon's); None when it is unknown."""
        writer = self.fan_writer(ev.workspace_root, ev.path, ev.changed_at)
        if writer is not None and (writer.kind == "operation" or (writer.kind == "nobody" and writer.firm)):
            return writer
        return None

    def _writers_of(self, root: str, path: str, changed_at: float) -> list[Candidate]:
        writer = self.fan_writer(root, path, changed_at)
        if writer is not None:
            # The kernel named the writer: that session alone, or no session at all when
            # the process is known to be none of theirs (an operation's, the operator's,
            # the daemon's: lineage.py says when that is certain). A writer that was gone
            # before it could be read is unknown, never nobody: the evidence decides.
            if writer.kind == "session":
                c = self._fan_candidate(writer.id)
                return [c] if c is not None else []
            if writer.kind == "operation" or (writer.kind == "nobody" and writer.firm):
                return []
        try:
            return self.evidence.candidates(self.sessions.sessions(), root, path, changed_at)
        except Exception:
            log.exception("attributing a protected change failed")
            return []

    async def _sample_forever(self) -> None:
        """The sessions' write counters, a few times a second while the tripwire is on."""
        while True:
            await asyncio.sleep(SAMPLE_EVERY_S)
            if self.policy().tripwire is Tripwire.OFF:
                continue
            sessions = self.sessions.sessions()
            if not any(s.has_processes for s in sessions):
                continue
            try:
                await asyncio.to_thread(self.evidence.sample, sessions)
            except Exception:
                log.exception("sampling sessions' write counters failed")

    # ------------------------------------------------------------------ stopping

    def _tripwire(self, ev: FileEvent, named: list[Candidate], flood: Flood | None = None) -> None:
        """Pause only on firm evidence: a single candidate that has the file open for
        write, or a single one with write I/O in the window working in the workspace.
        Anything weaker is an alert. A writer that has already exited is an item too.
        A flood raises each session once (``flood.sessions``)."""
        mode = self.policy().tripwire
        if mode is Tripwire.OFF or not named:
            return
        firm = len(named) == 1 and named[0].tier < 2
        if flood is not None and flood.sessions is not None:
            flood.sessions.update(c.session_id for c in named)
        diff = None if ev.flood else self.watcher.baseline_diff(ev.workspace_root, ev.path)
        for c in named:
            if self._answered(c.session_id, ev.workspace_root, ev.path):
                continue
            if mode is Tripwire.PAUSE and c.session_id in self._early:
                # The fast lane stopped it already and its item waits for this event: one
                # item, paused, however its evidence looks now (a frozen session's write
                # counters can read as a writer that exited).
                self._raise_early(c.session_id, ev, c.basis)
                continue
            alive = c.has_processes and self._has_processes(c.session_id)
            if not alive:
                if any(t.session == c.session_id and t.open for t in self.items.values()):
                    continue
                item = self._item(ev, c, diff, TripwireState.EXITED, flood)
                _, notice = self._history("tripwire", item, TripwireState.EXITED)
                self.events.publish(TripwireRaised(item=notice))
                self._alert(ev, c, exited=True)
                continue
            if mode is Tripwire.ALERT or not firm:
                self._alert(ev, c)
                continue
            if any(
                t.session == c.session_id and t.state is TripwireState.PAUSED for t in self.items.values()
            ):
                continue  # already stopped: one item per pause
            item = self._item(ev, c, diff, TripwireState.PAUSED, flood)
            self._stop_session(item)
            self.sessions.changed(c.session_id)
            _, notice = self._history("tripwire", item, TripwireState.PAUSED)
            self.events.publish(TripwireRaised(item=notice))
            log.warning("tripwire: %s (%s); session stopped", notice.summary, c.basis)

    def _answered(self, session_id: str, root: str, path: str) -> bool:
        """Whether a change of ``path`` by the session is one its item already stands for
        or the operator answered: the same write seen again late (its close when the
        session runs again, the close at its exit when killed, a second event of one
        write). A session held or killed cannot have written since; a resumed one is
        news only once the file is no longer what the operator accepted."""
        for t in self.items.values():
            if t.session != session_id or t.workspace_root != root:
                continue
            if path != t.path and path not in t.restore:
                continue
            if t.state in (TripwireState.PAUSED, TripwireState.KEPT, TripwireState.KILLED):
                return True
            if t.state is TripwireState.RESUMED and self.watcher.baseline_diff(root, path) == "":
                return True
        return False

    def on_hint(self, hint: Hint) -> None:
        """The sentinel saw a protected name change (console/watch/sentinel.py): stop a
        firmly identified writer now, without waiting for the debounced event. The rules
        are ``_tripwire``'s; anything short of a single firm, live candidate waits for
        the event, which is also what records the change and fills the item's diff."""
        writer = hint.writer if isinstance(hint.writer, Writer) else None
        if hint.pid is not None and writer is not None:
            self._fan_writers.pop((hint.root, hint.path), None)
            self._fan_writers[(hint.root, hint.path)] = (writer, hint.at)
            while len(self._fan_writers) > MAX_FAN_WRITERS:
                self._fan_writers.pop(next(iter(self._fan_writers)))
            if writer.kind == "operation" and self.on_operation_wrote is not None:
                self.on_operation_wrote(writer.id, hint.path)  # refused now, not at its end
        if self.policy().tripwire is not Tripwire.PAUSE:
            return
        if hint.kind is ChangeKind.ADDED and is_placeholder(hint.root, hint.path, hint.is_dir):
            return
        if hint.pid is None and not hint.renamed and self.watcher.fast_lane == "fanotify+inotify":
            # A file created or written: fanotify reports the write itself, with the pid,
            # a moment later. Stopping now, at the open, would show the operator an
            # empty file and stop the writer again at its write once resumed.
            return
        named = self._writers_of(hint.root, hint.path, hint.at)
        if len(named) != 1 or named[0].tier >= 2:
            return
        c = named[0]
        if hint.pid is None and c.basis == WRITE_IO and self.watcher.fast_lane == "fanotify+inotify":
            # A rename: write I/O nearby (a busy neighbour) is not enough to stop anyone
            # from here; the watcher's event decides.
            return
        if not (c.has_processes and self._has_processes(c.session_id)):
            return
        if any(t.session == c.session_id and t.state is TripwireState.PAUSED for t in self.items.values()):
            return
        if c.session_id in self._early or self._answered(c.session_id, hint.root, hint.path):
            return
        self._resumed.pop((c.session_id, hint.root, hint.path), None)  # a new write: stopped as any
        item = _new_item(c, hint.root, hint.path, hint.pattern, hint.kind.value)
        self._early[c.session_id] = item
        self._stop_session(item)
        self.sessions.changed(c.session_id)
        log.warning("tripwire: %s (%s); session stopped", item.to_wire()["summary"], c.basis)
        loop = asyncio.get_running_loop()
        loop.call_later(EARLY_WAIT_S, lambda: self._raise_early(c.session_id, None))

    def stop_now(self, hint: Hint) -> None:
        """In the fast lane's thread, under ``pause``: freeze the session the kernel named
        writing a protected path, before the hint reaches the loop (``on_hint`` then makes
        the item and completes the stop; its rules stop a session named by pid whenever
        it has processes). Only a cgroup's freeze, which the loop's resume undoes whole; in
        walk mode the loop stops the processes it will later continue."""
        writer = hint.writer
        if writer is None or writer.kind != "session" or self.policy().tripwire is not Tripwire.PAUSE:
            return
        if (writer.id, hint.root, hint.path) in self._resumed:
            return  # perhaps the resumed write closing; the loop compares the content
        if hint.kind is ChangeKind.ADDED and is_placeholder(hint.root, hint.path, hint.is_dir):
            return
        try:
            session = self.sessions.session(writer.id)
        except Exception:
            return  # not one of ours (another daemon's cgroup, a forged marker)
        cgroup = session.cgroup
        if cgroup is not None:
            with contextlib.suppress(OSError):
                cgroup.freeze(wait_s=0)

    def _raise_early(self, session_id: str, ev: FileEvent | None, basis: str = "") -> None:
        """A session the fast lane stopped becomes an item once its change is complete:
        when the watcher's event for it arrives (with its kind and the diff of what was
        written up to the stop), or after ``EARLY_WAIT_S`` (a change the watcher sees
        under another name, as through a symlinked ``.git/hooks``)."""
        item = self._early.pop(session_id, None)
        if item is None:
            return
        if ev is not None:
            item.kind = ev.kind.value
        if basis == PID_FANOTIFY:  # the kernel's word settles it, whatever stopped it first
            item.basis = basis
        item.diff = self.watcher.baseline_diff(item.workspace_root, item.path)
        item.restore = (
            self._restore_of(ev) if ev is not None else self._restore(item.workspace_root, [item.path])
        )
        self.items[item.id] = item
        _, notice = self._history("tripwire", item, TripwireState.PAUSED)
        self.events.publish(TripwireRaised(item=notice))

    # ------------------------------------------------------------------ unknown writers

    def _suspects(self, ev: FileEvent) -> list[Attribution]:
        """Everyone live in the workspace when a writer that could not be named changed a
        protected path there: sessions with processes and operations running whose own
        root is the workspace or inside it (a shell whose cwd is a parent, such as ``~``,
        works in every workspace below it and is not taken for a suspect of each)."""
        out: list[Attribution] = []
        seen: set[tuple[str, str]] = set()
        root = ev.workspace_root
        real = os.path.realpath(root)
        for a in (*ev.attribution, *self.attributions.active()):
            if (a.kind, a.id) in seen:
                continue
            if not (is_within(a.workspace_root, root) or is_within(os.path.realpath(a.workspace_root), real)):
                continue
            seen.add((a.kind, a.id))
            if a.kind == "session" and not self._has_processes(a.id):
                continue
            out.append(a)
        return out

    def _unknown_writer(self, ev: FileEvent, suspects: list[Attribution], flood: Flood | None) -> None:
        """Unknown is not nobody: while anyone is live in the workspace, a change whose
        writer could not be named is raised. ``alert``: an alert naming who was live;
        ``pause``: every live session there is stopped as a suspect (its own item), or,
        with only operations running, an item to acknowledge or revert."""
        mode = self.policy().tripwire
        if mode is Tripwire.OFF or not suspects:
            return
        if flood is not None and flood.sessions is not None:
            if "(unknown)" in flood.sessions:
                return
            flood.sessions.add("(unknown)")
        sessions = [a for a in suspects if a.kind == "session"]
        operations = [a for a in suspects if a.kind == "operation"]
        what = display_path(ev.path)
        if ev.flood:
            what = f"{ev.count:,} files under {what.rstrip('/')}/"
        live = ", ".join([*(f"session {a.id}" for a in sessions), *(f"operation {a.id}" for a in operations)])
        if mode is Tripwire.ALERT:
            self._raise_alert(
                ev,
                f"unknown:{ev.workspace_root}",
                {"operation": operations[0].id} if operations and not sessions else {},
                UNKNOWN_WRITER,
                lambda w: (
                    f"{w} changed by a writer that could not be named while {live} ran in the workspace"
                ),
            )
            return
        diff = None if ev.flood else self.watcher.baseline_diff(ev.workspace_root, ev.path)
        restore = self._restore_of(ev)
        count = flood.record.count if flood is not None else ev.count
        common: dict[str, Any] = {
            "workspace_root": ev.workspace_root,
            "path": ev.path,
            "pattern": ev.protected or "",
            "kind": ev.kind.value,
            "diff": diff,
            "basis": UNKNOWN_WRITER,
            "count": count,
            "restore": restore,
        }
        if not sessions:
            item = TripwireItem(
                id="t-" + secrets.token_hex(4),
                at=time.time(),
                session="",
                session_label="",
                state=TripwireState.ALERTED,
                operation=operations[0].id,
                **common,
            )
            self.items[item.id] = item
            _, notice = self._history("tripwire", item, TripwireState.ALERTED)
            self.events.publish(TripwireRaised(item=notice))
            self._raise_alert(
                ev,
                f"unknown:{ev.workspace_root}",
                {"operation": item.operation},
                UNKNOWN_WRITER,
                lambda _w: notice.summary,
            )
            return
        for a in sessions:
            if a.id in self._early or any(
                t.session == a.id and t.state is TripwireState.PAUSED for t in self.items.values()
            ):
                continue  # stopped already: its item stands
            item = TripwireItem(
                id="t-" + secrets.token_hex(4),
                at=time.time(),
                session=a.id,
                session_label=a.label[:200],
                state=TripwireState.PAUSED,
                suspect=True,
                **common,
            )
            self.items[item.id] = item
            self._stop_session(item)
            self.sessions.changed(a.id)
            _, notice = self._history("tripwire", item, TripwireState.PAUSED)
            self.events.publish(TripwireRaised(item=notice))
            log.warning("tripwire: %s", notice.summary)

    def _operation_wrote(self, ev: FileEvent, operation: str) -> None:
        """A sandboxed operation's own process wrote a protected path (a name it could
        create: existing ones are pinned read-only). Raised as an alert; the run is
        refused and the path removed when it ends (``on_operation_wrote``)."""
        if self.policy().tripwire is Tripwire.OFF:
            return
        self._raise_alert(
            ev,
            operation,
            {"operation": operation},
            PID_FANOTIFY,
            lambda what: f"operation {operation} wrote {what}; the run is refused",
        )
        if self.on_operation_wrote is not None:
            self.on_operation_wrote(operation, ev.path)

    def _restore_of(self, ev: FileEvent) -> dict[str, Previous]:
        """What the changed paths were at their baselines, for a revert."""
        return self._restore(ev.workspace_root, list(ev.members) if ev.flood else [ev.path])

    def _restore(self, root: str, paths: list[str]) -> dict[str, Previous]:
        out: dict[str, Previous] = {}
        for path in paths[:MAX_RESTORE]:
            try:
                previous = self.watcher.previous(root, path)
            except ValueError:
                continue
            if previous is not None:
                out[path] = previous
        return out

    def _fan_candidate(self, session_id: str) -> Candidate | None:
        try:
            session = self.sessions.session(session_id)
        except Exception:
            return None  # not one of ours (another daemon's cgroup, a forged marker)
        info = session.info()
        return Candidate(
            session_id,
            info.title or " ".join(info.argv),
            info.pid or None,
            PID_FANOTIFY,
            True,
            session.alive,
            0,
            session.has_processes,
        )

    def _item(
        self, ev: FileEvent, c: Candidate, diff: str | None, state: TripwireState, flood: Flood | None = None
    ) -> TripwireItem:
        count = flood.record.count if flood is not None else ev.count
        sample = flood.record.sample if flood is not None and isinstance(flood.record.sample, list) else ()
        item = _new_item(
            c,
            ev.workspace_root,
            ev.path,
            ev.protected or "",
            ev.kind.value,
            diff=diff,
            state=state,
            count=count,
            sample=tuple(sample),
            restore=self._restore_of(ev),
        )
        if flood is not None and flood.item is None:
            flood.item = item
        self.items[item.id] = item
        return item

    def _alert(self, ev: FileEvent, c: Candidate, *, exited: bool = False) -> None:
        who = f"session {c.session_id}" + (" (exited)" if exited else "")
        self._raise_alert(
            ev,
            c.session_id,
            {"session": c.session_id},
            c.basis,
            lambda what: f"{who} modified {what}",
            exited,
        )

    def _raise_alert(
        self,
        ev: FileEvent,
        who: str,
        named: dict[str, str],
        basis: str,
        summary: Callable[[str], str],
        exited: bool = False,
    ) -> None:
        """One ``alert`` on the watch stream, at most every ``ALERT_EVERY_S`` per writer
        (an exited writer's always: it will not come again)."""
        now = time.monotonic()
        if not exited and now - self._alerted.get(who, -1e9) < ALERT_EVERY_S:
            return
        self._alerted[who] = now
        what = display_path(ev.path)
        if ev.flood:
            what = f"{ev.count:,} files under {what.rstrip('/')}/"
        self.events.publish(
            WatchAlert(
                session=named.get("session", UNSET),
                operation=named.get("operation", UNSET),
                display_path=display_path(ev.path),
                pattern=ev.protected,
                basis=basis,
                exited=exited,
                count=ev.count,
                summary=summary(what),
            )
        )

    def _has_processes(self, session_id: str) -> bool:
        """Running, or processes left in its cgroup after the leader exited: either can
        be stopped."""
        try:
            return self.sessions.session(session_id).has_processes
        except Exception:
            return False

    def _stop_session(self, item: TripwireItem) -> None:
        """Freeze the session's cgroup (or SIGSTOP its group and known processes) now,
        then make sure every process is stopped (console/sessions/cgroups.py)."""
        manager = self.sessions
        try:
            session = manager.session(item.session)
            item.stop_mode = session.stop_mode
            session.pause_now()
        except Exception as exc:
            log.warning("could not stop session %s: %s", item.session, exc)
            return

        async def complete() -> None:
            try:
                item.stopped = await manager.pause(item.session)
            except Exception as exc:
                item.stopped = False
                log.warning("could not stop every process of session %s: %s", item.session, exc)
            finally:
                self._stopping.discard(item.session)
            if not item.stopped:
                log.warning("session %s: not every process could be confirmed stopped", item.session)
            self.sessions.changed(item.session)

        self._stopping.add(item.session)
        task = asyncio.create_task(complete())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ the operator's answers

    async def resolve(
        self, item_id: str, action: TripwireResolution, *, revert: bool | None = None, accept: bool = False
    ) -> TripwireNotice:
        """The operator's answer. ``resume`` makes the file's new content the baseline and
        must be confirmed (``accept``); ``kill`` puts the file back as its baseline unless
        told not to (``revert`` False), ``keep_paused`` only when told to."""
        item = self.items.get(item_id)
        if item is None or not (item.open or item.state is TripwireState.KEPT):
            raise NotFound(f"no open tripwire item {item_id}")
        what = display_path(item.path)
        if action is TripwireResolution.RESUME:
            if revert:
                raise InvalidParams(
                    "revert: resume keeps the new content; to put the file back, answer kill or "
                    "keep_paused with revert (or tripwire.revert)"
                )
            if not accept:
                raise InvalidParams(
                    f"accept: resuming makes the new content of {what} its baseline (later diffs start "
                    "from it); confirm with accept: true (agent-console tripwire resume ID --accept), or "
                    "answer kill or keep_paused with revert"
                )
        do_revert = revert if revert is not None else action is TripwireResolution.KILL and item.revertable
        if do_revert and not item.revertable:
            raise InvalidParams(
                f"revert: the previous content of {what} was not kept (only files up to 64 KiB are); "
                "answer without revert and put it back by hand"
            )
        manager = self.sessions
        if item.state in (TripwireState.EXITED, TripwireState.ALERTED):
            # The writer had already ended (or no session was concerned): an alert to acknowledge.
            if action is TripwireResolution.KILL and item.session and self._has_processes(item.session):
                await manager.kill(item.session)
                item.state = TripwireState.KILLED
            else:
                item.state = TripwireState.DISMISSED
        elif action is TripwireResolution.RESUME:
            for path in (item.path, *item.restore):
                self._resumed[(item.session, item.workspace_root, path)] = None
            while len(self._resumed) > MAX_RESUMED:
                self._resumed.pop(next(iter(self._resumed)))
            await manager.resume(item.session)
            item.state = TripwireState.RESUMED
        elif action is TripwireResolution.KILL:
            await manager.kill(item.session)
            item.state = TripwireState.KILLED
        else:
            item.state = TripwireState.KEPT
        reverted = False
        if do_revert:
            reverted = await self._put_back(item)
        if not reverted and item.count <= 1:  # a flood's files keep their (empty) baselines
            self.accepted.pop((item.workspace_root, item.path), None)
            self.accepted[(item.workspace_root, item.path)] = AcceptedChange(
                diff=item.diff, state=item.state.value, item=item.id, at=time.time()
            )
            while len(self.accepted) > MAX_ACCEPTED:
                self.accepted.pop(next(iter(self.accepted)))
            self.watcher.accept_baseline(item.workspace_root, item.path)
        if item.session:
            self.sessions.changed(item.session)
        stored, notice = self._history("tripwire_resolved", item, item.state)
        with contextlib.suppress(StoreUnavailable):  # logged by the callback
            await asyncio.wrap_future(stored)
        self.events.publish(TripwireResolved(item=notice))
        return notice

    async def revert(self, item_id: str) -> TripwireNotice:
        """Put the item's files back as they were before the change (any state)."""
        item = self.items.get(item_id)
        if item is None:
            raise NotFound(f"no tripwire item {item_id}")
        if not item.revertable:
            raise InvalidParams(
                f"the previous content of {display_path(item.path)} was not kept (only files up to "
                "64 KiB are); put it back by hand"
            )
        await self._put_back(item)
        notice = item.notice()
        self.events.publish(TripwireResolved(item=notice) if not item.open else TripwireRaised(item=notice))
        return notice

    # ------------------------------------------------------------------ reverting

    def own_revert(self, ev: FileEvent) -> bool:
        """The console's own write while putting a file back (revert.py): its temporary,
        and the reverted path itself for a moment, are not news."""
        if ev.flood:
            return False
        if ev.path.rpartition("/")[2].startswith(REVERT_PREFIX):
            return True
        until = self._reverting.get((ev.workspace_root, ev.path))
        if until is None:
            return False
        if time.monotonic() > until:
            del self._reverting[(ev.workspace_root, ev.path)]
            return False
        return (
            self.watcher.baseline_diff(ev.workspace_root, ev.path) in ("", None)
            or ev.kind is ChangeKind.DELETED
        )

    async def _put_back(self, item: TripwireItem) -> bool:
        """Revert every path of ``item`` (revert.py) and record it; True when all went
        back. A path that could not is said in ``item.reverted`` and the history."""
        done: list[str] = []
        failed: list[str] = []
        now = time.monotonic()
        for path, previous in item.restore.items():
            self._reverting[(item.workspace_root, path)] = now + REVERT_QUIET_S
            try:
                how = await asyncio.to_thread(self.watcher.put_back, item.workspace_root, path, previous)
            except (RevertError, ValueError, OSError) as exc:
                failed.append(f"{display_path(path)}: {exc}")
                continue
            done.append(how)
        if failed:
            item.reverted = f"not all: {failed[0]}" + (
                f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            )
        elif item.count > 1:
            item.reverted = f"{len(done)} files"
        else:
            item.reverted = done[0] if done else "nothing to do"
        stored, _ = self._history("tripwire_reverted", item, item.state)
        with contextlib.suppress(StoreUnavailable):
            await asyncio.wrap_future(stored)
        log.warning("tripwire: %s reverted: %s", item.id, item.reverted)
        return not failed

    # ------------------------------------------------------------------ thaw watch

    async def _watch_thaws(self) -> None:
        """A stopped session must stay stopped until the operator answers: someone who
        writes 0 to its ``cgroup.freeze`` (or sends SIGCONT in walk mode) is caught here
        within ``THAW_CHECK_S``, the session is stopped again and the item says so."""
        while True:
            await asyncio.sleep(THAW_CHECK_S)
            for item in list(self.items.values()):
                if item.state not in (TripwireState.PAUSED, TripwireState.KEPT) or not item.session:
                    continue
                if item.session in self._stopping:
                    continue
                try:
                    session = self.sessions.session(item.session)
                except Exception:  # noqa: S112 - gone since: nothing left to keep stopped
                    continue
                if not session.paused or not session.has_processes:
                    continue
                try:
                    thawed = await asyncio.to_thread(session.thawed)
                except Exception:
                    log.exception("could not check whether session %s is still stopped", item.session)
                    continue
                # The operator's own resume may have begun while the check ran: not a thaw.
                held = item.state in (TripwireState.PAUSED, TripwireState.KEPT) and session.paused
                if thawed and held:
                    self._thawed(item, session.stop_mode)

    def _thawed(self, item: TripwireItem, mode: str) -> None:
        item.thawed += 1
        self._stop_session(item)
        self.sessions.changed(item.session)
        _, notice = self._history("tripwire_thawed", item, item.state)
        self.events.publish(TripwireRaised(item=notice))
        how = "cgroup.freeze set to 0" if mode == CGROUP_MODE else "its processes continued"
        self.events.publish(
            WatchAlert(
                session=item.session,
                display_path=display_path(item.path),
                pattern=item.pattern,
                basis=item.basis,
                exited=False,
                count=item.count,
                summary=f"session {item.session} was resumed by someone other than the operator ({how}); "
                "stopped again",
            )
        )
        log.warning(
            "tripwire: session %s resumed by someone other than the operator; stopped again", item.session
        )

    def _history(
        self, kind: str, item: TripwireItem, state: TripwireState
    ) -> tuple[Future[list[int]], TripwireNotice]:
        """Write the item's history row; returns the write and the item as the consoles
        are told it, both from one wire form."""
        wire = item.to_wire()
        row = Event(
            kind=kind,
            at=time.time(),
            session_id=item.session,
            workspace_root=item.workspace_root,
            command=wire["display_path"],
            reason=item.pattern,
            verdict=state.value,
            note=wire["summary"],
            body={"item": wire},
        )
        future = self.store.append(row)
        future.add_done_callback(log_store_failure)
        return future, item.notice(wire)


def _new_item(c: Candidate, root: str, path: str, pattern: str, kind: str, **rest: Any) -> TripwireItem:
    """A fresh item naming the candidate session, with its basis."""
    return TripwireItem(
        id="t-" + secrets.token_hex(4),
        at=time.time(),
        session=c.session_id,
        session_label=c.label[:200],
        workspace_root=root,
        path=path,
        pattern=pattern,
        kind=kind,
        diff=rest.pop("diff", None),
        basis=c.basis,
        **rest,
    )


def log_store_failure(future: Any) -> None:
    exc = future.exception()
    if isinstance(exc, StoreUnavailable):
        log.error("could not record a watch event: %s", exc)
    elif exc is not None:
        log.error("recording a watch event failed: %r", exc)
