"""One workspace root, watched by one worker thread.

The thread owns everything about the root — the watchfiles iterators, the stat index,
the rescan timer — so none of it needs a lock, and nothing heavy ever runs on the
event loop: the thread judges each batch (``lstat``, patterns, walks of new
directories) and hands finished records to the loop.

watchfiles is driven through its public ``watch()`` iterator with our own filter and
``yield_on_timeout``, so the thread can interleave up to three of them (directories
watched alone, subtrees watched whole, subtrees added since; see ``index.Plan`` and
``_sync_notifiers``), its rescans and its commands.
When an iterator dies — a file name that is not UTF-8 ends it for good, a full inotify
watch table ends it at start or later — the thread says why in the root's status,
restarts it (as a polling watcher when the limit is the cause), and rescans at once,
so the root never goes silent.
"""

from __future__ import annotations

import errno
import itertools
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import watchfiles

from console.contract.outcome import ChangeKind
from console.policy.patterns import ProtectedPaths
from console.watch.baseline import Baselines
from console.watch.events import Degradation, DegradationCode, RootStatus, Source
from console.watch.floods import Flood
from console.watch.index import Record, TreeIndex, lstat_or_none, stat_root
from console.watch.probe import kernel_dev, watched_inodes
from console.watch.scope import DEFAULT_SKIP_IN_GIT, DEFAULT_SKIP_NAMES, Scope

log = logging.getLogger("console.watch")

# Causes that clear themselves once they stop happening (after ``recover_after_s``).
_TRANSIENT: frozenset[DegradationCode] = frozenset({"non_utf8_name", "watcher_error", "missed_events"})
# A batch this large may have overflowed the kernel queue: rescan right after it.
_BIG_BATCH = 4096


@dataclass(frozen=True, slots=True)
class Tuning:
    debounce_ms: int = 40  # = the watcher default (watcher.py): a protected write is seen within ~50 ms
    step_ms: int = 10
    rescan_interval_s: float = 2.0
    settle_s: float = 1.0
    poll_delay_ms: int = 250
    force_polling: bool = False
    recover_after_s: float = 60.0
    retry_inotify_s: float = 300.0
    max_backoff_s: float = 5.0
    verify_interval_s: float = 10.0
    skip_names: frozenset[str] = DEFAULT_SKIP_NAMES
    skip_in_git: frozenset[str] = DEFAULT_SKIP_IN_GIT


# What the worker hands to the loop.
@dataclass(frozen=True, slots=True)
class RecordsItem:
    root: str
    records: Sequence[Record | Flood]  # floods: folded by the watcher (floods.py)
    at: float
    urgent: bool = False  # protected changes: delivered ahead of queued ordinary ones


@dataclass(frozen=True, slots=True)
class StatusItem:
    status: RootStatus


@dataclass(frozen=True, slots=True)
class MarkerItem:
    """Run on the loop once everything posted before it has been delivered."""

    callback: Callable[[], None]


Item = RecordsItem | StatusItem | MarkerItem


# "alone": directories watched non-recursively; "whole": subtrees watched recursively,
# started once; "extra": subtrees that appeared since "whole" started.
Role = Literal["alone", "whole", "extra"]


@dataclass(slots=True)
class _Notifier:
    role: Role
    entries: dict[str, int]  # watched directory -> its generation when the watch started
    polling: bool
    gen: Generator[set[tuple[watchfiles.Change, str]], None, None]


@dataclass(slots=True)
class _Policy:
    protected: ProtectedPaths
    done: Callable[[], None]


@dataclass(slots=True)
class _Flush:
    done: Callable[[], None]


@dataclass(slots=True)
class _Counters:
    restarts: int = 0
    rescans: int = 0
    missed: int = 0
    restart_times: deque[float] = field(default_factory=lambda: deque(maxlen=16))


class RootWorker:
    def __init__(
        self,
        root: str,
        protected: ProtectedPaths,
        tuning: Tuning,
        post: Callable[[Item], None],
        baselines: Baselines,
    ) -> None:
        self.root = root
        self.tuning = tuning
        self._post = post
        self.baselines = baselines
        self.index = TreeIndex(root, self._scope(protected), baselines)
        self._stop = threading.Event()
        self._commands: queue.SimpleQueue[_Policy | _Flush] = queue.SimpleQueue()
        self._notifiers: list[_Notifier] = []
        self._unverified: dict[str, float] = {}
        self._next_entry_check = 0.0
        self._started = False
        self._polling = tuning.force_polling
        self._polling_since = 0.0
        self._root_missing = False
        self._restart_at: float | None = None
        self._next_rescan = 0.0
        self._last_apply_s = 0.0
        self._last_batch_at = 0.0
        self._reasons: dict[DegradationCode, Degradation] = {}
        self._last_seen: dict[DegradationCode, float] = {}
        self._counts = _Counters()
        self._state: Literal["starting", "ok", "degraded", "stopped"] = "starting"
        self._published: tuple[Any, ...] | None = None
        self._status_lock = threading.Lock()
        self._snapshot = RootStatus(root=root, state="starting", mode="none")
        self._thread = threading.Thread(target=self._run, name=f"watch:{root}", daemon=True)

    # -- control (any thread) ----------------------------------------------------------

    def start(self, ready: Callable[[], None]) -> None:
        self._ready = ready
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def flush(self, done: Callable[[], None]) -> None:
        self._commands.put(_Flush(done))

    def set_protected(self, protected: ProtectedPaths, done: Callable[[], None]) -> None:
        self._commands.put(_Policy(protected, done))

    def status(self) -> RootStatus:
        with self._status_lock:
            return self._snapshot

    # -- the thread ----------------------------------------------------------------------

    def _scope(self, protected: ProtectedPaths) -> Scope:
        return Scope(protected, self.tuning.skip_names, self.tuning.skip_in_git)

    def _run(self) -> None:
        try:
            self._begin()
        except Exception:
            log.exception("watcher for a workspace failed to start")
            self._degrade("watcher_error", "the watcher failed to start; retrying")
            self._restart_at = time.monotonic() + 1.0
        self._state = "ok"
        self._publish()
        self._post(MarkerItem(self._ready))
        while not self._stop.is_set():
            try:
                self._cycle()
            except Exception:
                log.exception("watcher cycle failed")
                self._degrade("watcher_error", "the watcher hit an internal error; restarted it")
                self._close_notifiers()
                self._schedule_restart()
                self._stop.wait(0.2)
        self._close_notifiers()
        while True:  # answer pending commands so nobody waits forever
            try:
                self._post(MarkerItem(self._commands.get_nowait().done))
            except queue.Empty:
                break
        self._state = "stopped"
        self._publish(force=True)

    def _begin(self) -> None:
        if self.index.build(report=False, out=[], source="rescan"):
            self._sync_notifiers(restart_all=True)
        else:
            self._root_missing = True
            self._degrade("root_missing", "the workspace directory does not exist; waiting for it")
        self._next_rescan = time.monotonic() + self.tuning.rescan_interval_s

    def _cycle(self) -> None:
        flushes = self._run_commands()
        if self._notifiers:
            self._pull()
            if flushes:
                self._pull()  # one more round: everything written before the flush is in
        else:
            self._stop.wait(self.tuning.step_ms / 1000)
        now = time.monotonic()
        if self._restart_at is not None and now >= self._restart_at and not self._root_missing:
            self._rescan()  # bring the index (and so the plan) up to date first
            if self._restart_at is not None and not self._root_missing:
                # Only what died restarts, unless the mode changed (inotify <-> polling).
                switched = any(n.polling != self._polling for n in self._notifiers)
                self._sync_notifiers(restart_all=switched)
        elif self._notifiers and self.index.plan_dirty:
            self._sync_notifiers()
        retry_inotify = now - self._polling_since >= self.tuning.retry_inotify_s
        if self._polling and not self.tuning.force_polling and self._notifiers and retry_inotify:
            self._polling = False
            self._sync_notifiers(restart_all=True)
        if flushes or self._rescan_due(now):
            if self._notifiers and not flushes:
                self._pull()  # take what the stream already holds, so the rescan does not race it
            self._rescan()
        for f in flushes:
            self._post(MarkerItem(f.done))
        self._expire_reasons()
        self._publish()

    def _rescan_due(self, now: float) -> bool:
        """Due on schedule, but put off while the event stream is busy (a burst): the
        rescan would compete with it and find nothing it is not about to report. Never
        put off for more than three intervals, so an overflow is still caught."""
        if now < self._next_rescan:
            return False
        busy = now - self._last_batch_at < max(0.5, 2 * self.tuning.debounce_ms / 1000)
        return not busy or now >= self._next_rescan + 3 * self.tuning.rescan_interval_s

    def _run_commands(self) -> list[_Flush]:
        flushes: list[_Flush] = []
        while True:
            try:
                cmd = self._commands.get_nowait()
            except queue.Empty:
                return flushes
            if isinstance(cmd, _Flush):
                flushes.append(cmd)
                continue
            self._apply_policy(cmd.protected)
            self._post(MarkerItem(cmd.done))

    def _apply_policy(self, protected: ProtectedPaths) -> None:
        if protected.patterns == self.index.scope.protected.patterns:
            return
        # Paths that stay protected keep the baseline they had; new ones get theirs now.
        self.index = TreeIndex(self.root, self._scope(protected), self.baselines)
        if self.index.build(report=False, out=[], source="rescan") and self._notifiers:
            self._sync_notifiers(restart_all=True)
        self._next_rescan = time.monotonic()

    # -- events ---------------------------------------------------------------------------

    def _keep(self, change: watchfiles.Change, path: str) -> bool:
        rel = self.index.rel(path)
        if rel is None:
            return False
        parent = rel.rpartition("/")[0]
        return not (parent and self.index.scope.under_skipped(parent))

    def _make(self, role: Role, entries: dict[str, int]) -> _Notifier:
        gen = watchfiles.watch(
            *[self.index.abs(p) for p in entries],
            watch_filter=self._keep,
            debounce=self.tuning.debounce_ms,
            step=self.tuning.step_ms,
            stop_event=self._stop,
            rust_timeout=1,
            yield_on_timeout=True,
            debug=False,
            raise_interrupt=False,
            force_polling=self._polling,
            poll_delay_ms=self.tuning.poll_delay_ms,
            recursive=role != "alone",
            ignore_permission_denied=False,
        )
        return _Notifier(role, entries, self._polling, gen)

    def _pull(self) -> None:
        for n in list(self._notifiers):
            if n not in self._notifiers:
                continue
            try:
                changes = next(n.gen)
            except StopIteration:
                return
            except Exception as exc:
                self._notifiers.remove(n)  # a watchfiles iterator that raised is finished
                self._failed(exc)
                return
            if changes:
                self._apply(changes, "poll" if n.polling else "inotify")

    def _apply(self, changes: set[tuple[watchfiles.Change, str]], source: Source) -> None:
        t0 = time.monotonic()
        out: list[Record] = []
        urgent: list[Record] = []

        def hand_over(first: list[Record]) -> None:
            urgent.extend(first)
            self._post(RecordsItem(self.root, first, time.time(), urgent=True))

        self.index.apply_raw(changes, source, out, urgent=hand_over)
        self._last_batch_at = time.monotonic()
        self._last_apply_s = self._last_batch_at - t0
        if source == "inotify":
            for r in itertools.chain(urgent, out):
                if r.is_dir and r.kind is ChangeKind.ADDED and len(self._unverified) < 100_000:
                    self._unverified[r.path] = t0
        if out:
            self._post(RecordsItem(self.root, out, time.time()))
        if len(changes) >= _BIG_BATCH:
            self._next_rescan = min(self._next_rescan, time.monotonic() + self.tuning.settle_s)

    def _sync_notifiers(self, *, restart_all: bool = False) -> None:
        """Make the running iterators match the plan, restarting as little as possible.

        Starting a recursive watchfiles watcher walks its whole tree with the GIL held
        (about 4 us per entry), so the big "whole" iterator is started once and kept:
        subtrees that appear later (a new top-level directory, a replaced one) go to a
        small "extra" iterator. The big one restarts only when one of its subtrees gained
        a skipped directory (to stop spending watches on it), on failure, on a policy
        change, or when switching between inotify and polling. New iterators start
        before the old ones are drained and closed, so a restart loses nothing.
        """
        self._restart_at = None
        plan = self.index.plan()
        dirs = self.index.dirs
        want_alone = {p: dirs[p].gen for p in plan.alone}
        want_whole = {p: dirs[p].gen for p in plan.whole}
        current = {} if restart_all else {n.role: n for n in self._notifiers}
        specs: dict[Role, dict[str, int]] = {}
        alone = current.get("alone")
        if alone is None or alone.entries != want_alone:
            specs["alone"] = want_alone
        base = current.get("whole")
        if base is None or any(p in dirs and p not in want_whole for p in base.entries):
            specs["whole"] = want_whole
            specs["extra"] = {}
        else:
            extra = current.get("extra")
            covered = {*base.entries.items(), *(extra.entries.items() if extra else ())}
            keep = {p: i for p, i in (extra.entries.items() if extra else ()) if want_whole.get(p) == i}
            missing = {p: i for p, i in want_whole.items() if (p, i) not in covered}
            if missing or (extra is not None and keep != extra.entries):
                specs["extra"] = {**keep, **missing}
        if not specs:
            return
        fresh: list[_Notifier] = []
        try:
            for role, entries in specs.items():
                if entries:
                    fresh.append(self._make(role, entries))
            primed = [(n, next(n.gen)) for n in fresh]
        except StopIteration:
            return
        except Exception as exc:
            for n in fresh:
                n.gen.close()
            self._failed(exc)  # the old iterators, if any, keep watching until the retry
            return
        before = self._watched()
        replaced = [n for n in self._notifiers if n.role in specs or restart_all]
        kept = [n for n in self._notifiers if n not in replaced]
        self._notifiers = kept + fresh
        source: Source = "poll" if self._polling else "inotify"
        for _n, changes in primed:
            if changes:
                self._apply(changes, source)
        for n in replaced:
            try:
                changes = next(n.gen)
                if changes:
                    self._apply(changes, "poll" if n.polling else "inotify")
            except Exception:  # it may be the one that failed; its successor covers it
                log.debug("draining a replaced watcher failed", exc_info=True)
            n.gen.close()
        if self._started:
            self._counts.restarts += 1
        self._started = True
        self._cover_gap(before, source)
        if self._polling:
            self._degrade(
                "watch_limit",
                "the inotify watch limit (fs.inotify.max_user_watches or max_user_instances) was "
                f"reached; polling every {self.tuning.poll_delay_ms} ms instead",
            )
        else:
            self._clear("watch_limit")

    def _watched(self) -> dict[tuple[str, bool], int]:
        """(directory, recursively?) -> generation, for everything the iterators watch."""
        return {(p, n.role != "alone"): ino for n in self._notifiers for p, ino in n.entries.items()}

    def _cover_gap(self, before: dict[tuple[str, bool], int], source: Source) -> None:
        """A directory is blind between our walk of it and the moment notify watches it.
        Now that it is watched, list what was not watched before again: whatever appeared
        in between is reported here (and its late raw event, if any, is suppressed)."""
        out: list[Record] = []
        if not before:
            self.index.rescan(out)  # first start: everything since the initial walk
            self._emit(out, counted=False)
            return
        for entry, ino in self._watched().items():
            if before.get(entry) != ino:
                path, whole = entry
                if path in self.index.dirs:
                    self.index.sync_dir(path, deep=whole, source=source, out=out)
        self._emit(out, counted=False)

    def _close_notifiers(self) -> None:
        for n in self._notifiers:
            n.gen.close()
        self._notifiers = []

    def _schedule_restart(self) -> None:
        now = time.monotonic()
        times = self._counts.restart_times
        times.append(now)
        recent = sum(1 for t in times if now - t < 30)
        delay = 0.0 if recent <= 3 else min(self.tuning.max_backoff_s, 0.25 * 2 ** (recent - 3))
        self._restart_at = now + delay
        self._next_rescan = now  # whatever the dead iterator held is lost: look now

    def _failed(self, exc: BaseException) -> None:
        msg = str(exc)
        low = msg.lower()
        err = getattr(exc, "errno", None)
        if "decode path" in low:
            self._degrade(
                "non_utf8_name",
                "a file name that is not valid UTF-8 stopped the event stream; restarted it and rescanned",
            )
        elif "watch limit" in low or "too many open files" in low or err in (errno.ENOSPC, errno.EMFILE):
            if not self._polling:
                self._polling = True
                self._polling_since = time.monotonic()
        elif isinstance(exc, FileNotFoundError):
            self.index.plan_dirty = True  # a planned directory vanished before notify got to it
        elif isinstance(exc, PermissionError):
            self._degrade("unreadable", "a directory could not be read; it is rescanned, not watched")
        else:
            self._degrade("watcher_error", f"the event stream failed ({type(exc).__name__}); restarted it")
            log.warning("watchfiles failed: %s", type(exc).__name__)
        self._schedule_restart()

    # -- rescans ------------------------------------------------------------------------

    def _rescan(self) -> None:
        t0 = time.monotonic()
        out: list[Record] = []
        st = stat_root(self.root)
        if st is None:
            if not self._root_missing:
                self._root_missing = True
                self._close_notifiers()
                self.index.drop_all(out, "rescan")
                self._degrade("root_missing", "the workspace directory is gone; waiting for it")
            self._emit(out, counted=False)
            self._next_rescan = t0 + min(self.tuning.rescan_interval_s, 0.5)
            return
        if self._root_missing or "" not in self.index.dirs:
            self._root_missing = False
            self._clear("root_missing")
            self.index.build(report=True, out=out, source="rescan")
            self._emit(out, counted=False)
            self._sync_notifiers(restart_all=True)
        elif st.st_ino != self.index.root_ino:
            self.index.root_ino = st.st_ino
            self.index.sync_dir("", deep=True, source="rescan", out=out)
            self._emit(out, counted=False)
            self._sync_notifiers(restart_all=True)
        else:
            young = time.time() - max(
                self.tuning.settle_s, 3 * self._last_apply_s + self.tuning.debounce_ms / 1000
            )
            self.index.rescan(out, young=young)
            self._emit(out, counted=True)
            self._verify_watches()
        self._counts.rescans += 1
        took = time.monotonic() - t0
        interval = self.tuning.rescan_interval_s
        if not self._notifiers or self._restart_at is not None:
            interval = min(interval, 0.5)
        self._next_rescan = time.monotonic() + max(interval, 20 * took)

    def _verify_watches(self) -> None:
        """Check with the kernel that what should be watched is.

        A directory that appeared inside a watched tree and has no watch means the
        kernel refused it (the watch limit): fall back to polling. A planned directory
        without a watch (deleted and recreated while events were lost, so nothing told
        us) is started again. Reads /proc/self/fdinfo: new directories are checked once
        settled, planned ones every ``verify_interval_s``.
        """
        if self._polling or not self._notifiers or self._restart_at is not None:
            return
        now = time.monotonic()
        due = [rel for rel, t in self._unverified.items() if t <= now - self.tuning.settle_s]
        check_entries = now >= self._next_entry_check
        if not due and not check_entries:
            return
        for rel in due:
            del self._unverified[rel]
        watched = watched_inodes()
        if watched is None:
            return

        def unwatched(rel: str) -> bool:
            node = self.index.dirs.get(rel)
            st = lstat_or_none(self.index.abs(rel))
            if node is None or st is None or st.st_ino != node.ino:
                return False  # gone or replaced since: the rescan drops or renews it
            return (kernel_dev(st.st_dev), st.st_ino) not in watched

        blind = sum(1 for rel in due if unwatched(rel))
        if blind:
            log.warning("inotify refused watches for %d new directories; polling", blind)
            self._polling = True
            self._polling_since = now
            self._sync_notifiers(restart_all=True)
            return
        if check_entries:
            self._next_entry_check = now + self.tuning.verify_interval_s
            dirs = self.index.dirs
            live = {
                p for n in self._notifiers for p, gen in n.entries.items() if p in dirs and dirs[p].gen == gen
            }
            dead = [p for p in sorted(live) if unwatched(p)]
            for p in dead:
                self.index.renew(p)
            if dead:
                log.info("%d watched directories had lost their watch; watching them again", len(dead))
                self._sync_notifiers()

    def _emit(self, out: list[Record], *, counted: bool) -> None:
        if not out:
            return
        if counted:
            self._counts.missed += len(out)
            self._degrade(
                "missed_events",
                f"the periodic rescan found {len(out)} change(s) that the event stream did not report",
            )
            self._publish()  # whoever reads these events can already see why in the status
        self._post(RecordsItem(self.root, out, time.time()))

    # -- status -------------------------------------------------------------------------

    def _degrade(self, code: DegradationCode, message: str) -> None:
        now = time.time()
        self._last_seen[code] = time.monotonic()
        old = self._reasons.get(code)
        if old is None or old.message != message:
            self._reasons[code] = Degradation(code, message, old.since if old else now)

    def _clear(self, code: DegradationCode) -> None:
        self._reasons.pop(code, None)

    def _expire_reasons(self) -> None:
        now = time.monotonic()
        for code in list(self._reasons):
            if code in _TRANSIENT and now - self._last_seen.get(code, now) >= self.tuning.recover_after_s:
                del self._reasons[code]
        if not self._polling:
            self._clear("watch_limit")
        if not self.index.unreadable and "unreadable" in self._reasons:
            self._clear("unreadable")

    def _publish(self, *, force: bool = False) -> None:
        reasons = tuple(sorted(self._reasons.values(), key=lambda r: r.code))
        state = self._state
        if state in ("ok", "degraded"):
            state = "degraded" if reasons else "ok"
        mode: Literal["inotify", "polling", "none"] = (
            "none" if self._root_missing or state == "stopped" else "polling" if self._polling else "inotify"
        )
        snap = RootStatus(
            root=self.root,
            state=state,
            mode=mode,
            reasons=reasons,
            watched_dirs=len(self.index.dirs),
            protected_entries=len(self.index.prot),
            restarts=self._counts.restarts,
            rescans=self._counts.rescans,
            missed_by_events=self._counts.missed,
        )
        with self._status_lock:
            self._snapshot = snap
        shape = (state, mode, tuple((r.code, r.message) for r in reasons))
        if force or shape != self._published:
            self._published = shape
            self._post(StatusItem(snap))
