"""The asyncio face of the watcher: what the daemon calls.

Each root has a worker thread (``root.RootWorker``) that does every blocking or heavy
step. The loop only numbers, attributes and delivers finished records, at most
``chunk`` per callback, so a 20,000-file burst never holds the loop for long.
Events, status changes and flush/ready markers reach the loop through one ordered
queue: when ``flush()`` returns, every event it covers has been delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections import deque
from collections.abc import Callable

from console.contract.outcome import ChangeKind
from console.policy.patterns import ProtectedPaths
from console.watch.attribution import Attributions
from console.watch.baseline import Baselines, Previous
from console.watch.events import FileEvent, WatchStatus
from console.watch.floods import Flood, coalesce
from console.watch.index import Record
from console.watch.revert import put_back
from console.watch.root import Item, MarkerItem, RecordsItem, RootWorker, StatusItem, Tuning
from console.watch.scope import DEFAULT_SKIP_IN_GIT, DEFAULT_SKIP_NAMES
from console.watch.sentinel import NO_FAST_LANE_VAR, Hint, Sentinel, WriterOf

log = logging.getLogger("console.watch")


def normalize_root(root: str) -> str:
    """The form roots are keyed by: absolute, normalized, valid UTF-8, not ``/``."""
    if not isinstance(root, str) or not root or "\x00" in root:
        raise ValueError("a workspace root is a non-empty path")
    if not os.path.isabs(root):
        raise ValueError("a workspace root must be an absolute path")
    try:
        root.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a workspace root must be valid UTF-8") from None
    norm = os.path.normpath(root)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if norm == "/":
        raise ValueError("the filesystem root is not a workspace")
    return norm


def _resolver(fut: asyncio.Future[None]) -> Callable[[], None]:
    """A callback (run on the loop) that resolves ``fut`` unless it already is."""

    def resolve() -> None:
        if not fut.done():
            fut.set_result(None)

    return resolve


def _urgent(item: Item) -> bool:
    return isinstance(item, RecordsItem) and item.urgent


def _relative(path: str) -> str:
    if not isinstance(path, str) or not path or path.startswith("/") or "\x00" in path:
        raise ValueError("path must be relative to the workspace root")
    parts = path.split("/")
    if ".." in parts or "" in parts or "." in parts:
        raise ValueError("path must be a normalized relative path")
    return path


class WorkspaceWatcher:
    """Watches workspace roots and reports every change, classified and attributed.

    ``protected_for(root)`` gives the protected patterns of a root (called on
    ``add_root`` and ``policy_changed``). ``on_event`` and ``on_status`` are called on
    the event loop and must be quick (append to a queue, write a row); an exception
    they raise is logged and the next event is still delivered. ``on_hint``, when
    given, is called on the loop as soon as a protected name changes in one of the
    sentinel's hot directories (sentinel.py), ahead of the event that follows.
    """

    def __init__(
        self,
        *,
        protected_for: Callable[[str], ProtectedPaths],
        attributions: Attributions,
        on_event: Callable[[FileEvent], None],
        on_status: Callable[[WatchStatus], None],
        rescan_interval_s: float = 2.0,
        debounce_ms: int = 40,
        step_ms: int = 10,
        settle_s: float = 1.0,
        poll_delay_ms: int = 250,
        force_polling: bool = False,
        recover_after_s: float = 60.0,
        verify_interval_s: float = 10.0,
        skip_names: frozenset[str] = DEFAULT_SKIP_NAMES,
        skip_in_git: frozenset[str] = DEFAULT_SKIP_IN_GIT,
        first_seq: int = 1,
        chunk: int = 256,
        on_hint: Callable[[Hint], None] | None = None,
        writer_of: Callable[[int], WriterOf] | None = None,
        seen: Callable[[int], object] | None = None,
        stop_now: Callable[[Hint], None] | None = None,
    ) -> None:
        if not 0.05 <= rescan_interval_s <= 3600:
            raise ValueError("rescan_interval_s must be between 0.05 and 3600 seconds")
        if not 1 <= step_ms <= debounce_ms <= 10_000:
            raise ValueError("need 1 <= step_ms <= debounce_ms <= 10000")
        if not 10 <= poll_delay_ms <= 60_000:
            raise ValueError("poll_delay_ms must be between 10 and 60000")
        if settle_s < 0 or recover_after_s < 0 or verify_interval_s <= 0:
            raise ValueError("settle_s and recover_after_s must be >= 0, verify_interval_s > 0")
        if first_seq < 0 or chunk < 1:
            raise ValueError("first_seq must be >= 0 and chunk >= 1")
        self._protected_for = protected_for
        self._attributions = attributions
        self._on_event = on_event
        self._on_status = on_status
        self._tuning = Tuning(
            debounce_ms=debounce_ms,
            step_ms=step_ms,
            rescan_interval_s=rescan_interval_s,
            settle_s=settle_s,
            poll_delay_ms=poll_delay_ms,
            force_polling=force_polling,
            recover_after_s=recover_after_s,
            verify_interval_s=verify_interval_s,
            skip_names=frozenset(skip_names),
            skip_in_git=frozenset(skip_in_git),
        )
        self._seq = itertools.count(first_seq)
        self._chunk = chunk
        self._workers: dict[str, RootWorker] = {}
        self._ready: dict[str, asyncio.Future[None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: deque[Item] = deque()
        self._offset = 0
        self._draining = False
        self._closed = False
        self._on_hint = on_hint
        fast = on_hint is not None and os.environ.get(NO_FAST_LANE_VAR) != "1"
        self._sentinel = Sentinel(self._post_hint, writer_of, seen, stop_now) if fast else None

    # -- roots ---------------------------------------------------------------------------

    async def add_root(self, root: str) -> None:
        """Start watching ``root`` (idempotent). Returns once the baselines are taken.

        A root that does not exist yet is accepted and reported ``degraded`` with
        ``root_missing`` until it appears; a path that is not a directory is refused.
        """
        if self._closed:
            raise RuntimeError("the watcher is closed")
        root = normalize_root(root)
        self._loop = asyncio.get_running_loop()
        if root in self._ready:
            await asyncio.shield(self._ready[root])
            return
        if os.path.lexists(root) and not os.path.isdir(root):
            raise ValueError("the workspace root is not a directory")
        protected = self._protected(root)
        ready: asyncio.Future[None] = self._loop.create_future()
        worker = RootWorker(root, protected, self._tuning, self._post, Baselines(root))
        self._workers[root] = worker
        self._ready[root] = ready
        worker.start(_resolver(ready))
        if self._sentinel is not None:
            self._sentinel.set_root(root, protected)
        await asyncio.shield(ready)

    async def remove_root(self, root: str) -> None:
        root = normalize_root(root)
        worker = self._workers.pop(root, None)
        self._ready.pop(root, None)
        if worker is None:
            return
        if self._sentinel is not None:
            self._sentinel.remove_root(root)
        worker.stop()
        await asyncio.to_thread(worker.join)
        self._on_status_safe()

    def roots(self) -> tuple[str, ...]:
        return tuple(self._workers)

    def status(self) -> WatchStatus:
        return WatchStatus(tuple(w.status() for w in self._workers.values()))

    async def flush(self, root: str | None = None) -> None:
        """Return once every change made before the call has been delivered.

        Covers what inotify or polling report and one rescan; a change the event stream
        cannot see (a write through a hard link from outside) may need the next
        periodic rescan (``rescan_interval_s`` + ``settle_s``)."""
        await self._each(root, lambda w, done: w.flush(done))

    async def policy_changed(self, root: str | None = None) -> None:
        """Ask ``protected_for`` again and re-classify (the daemon calls this after a
        config reload). Paths that stay protected keep their baselines."""

        def ask(w: RootWorker, done: Callable[[], None]) -> None:
            protected = self._protected(w.root)
            if self._sentinel is not None:
                self._sentinel.set_root(w.root, protected)
            w.set_protected(protected, done)

        await self._each(root, ask)

    @property
    def fast_lane(self) -> str:
        """How protected names in the hot directories are seen without debounce:
        "fanotify+inotify" (with the writer's pid), "inotify", or "off"."""
        return self._sentinel.mode if self._sentinel is not None else "off"

    async def settle(self, timeout_s: float = 0.5) -> None:
        """Return once the fast lane has read what the kernel has queued for it (and
        delivered the hints), or after ``timeout_s``: a change's writer, when the
        kernel reported it, is known by then."""
        sentinel, loop = self._sentinel, asyncio.get_running_loop()
        if sentinel is None or sentinel.mode != "fanotify+inotify":
            return
        done: asyncio.Future[None] = loop.create_future()
        resolve = _resolver(done)
        sentinel.flush(lambda: self._post_marker(resolve))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done, timeout_s)

    def _post_marker(self, callback: Callable[[], None]) -> None:
        """From the sentinel's thread, after its hints: run ``callback`` on the loop."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(callback)

    @property
    def open_gate(self) -> bool:
        """Opens in the hot directories wait until the opener is read (gate.py)."""
        return self._sentinel is not None and self._sentinel.gated

    def deep_dirs(self, root: str) -> int:
        """Directories of ``root`` in the fast lane's deep group (0: none, or no fanotify)."""
        return self._sentinel.deep_dirs(normalize_root(root)) if self._sentinel is not None else 0

    async def close(self) -> None:
        self._closed = True
        workers = list(self._workers.values())
        self._workers.clear()
        self._ready.clear()
        if self._sentinel is not None:
            await asyncio.to_thread(self._sentinel.close)
        for w in workers:
            w.stop()
        for w in workers:
            await asyncio.to_thread(w.join)
        self._queue.clear()

    # -- baselines -------------------------------------------------------------------------

    def baseline_diff(self, root: str, path: str) -> str | None:
        """Unified diff of a protected small text file from its baseline to now.

        The baseline is the content when the root was first watched (empty for a file
        created later) and stays until ``accept_baseline``: the diff is cumulative.
        None when the path has no baseline (not protected, binary, over 64 KiB) or is
        not small text now; ``""`` when it is unchanged. The text is untrusted.
        """
        worker = self._workers.get(normalize_root(root))
        if worker is None:
            return None
        return worker.baselines.diff(_relative(path))

    def previous(self, root: str, path: str) -> Previous | None:
        """What ``path`` was at its baseline (for a revert); None when nothing was kept."""
        worker = self._workers.get(normalize_root(root))
        if worker is None:
            return None
        return worker.baselines.previous(_relative(path))

    def put_back(self, root: str, path: str, previous: Previous) -> str:
        """Make ``path`` what ``previous`` says (revert.py), then its baseline; blocking.
        Raises ``RevertError`` with the reason."""
        done = put_back(normalize_root(root), _relative(path), previous)
        self.accept_baseline(root, path)
        return done

    def accept_baseline(self, root: str, path: str) -> bool:
        """Make the current content the baseline (the operator has seen the change)."""
        worker = self._workers.get(normalize_root(root))
        if worker is None:
            return False
        return worker.baselines.accept(_relative(path))

    # -- plumbing ------------------------------------------------------------------------

    def _protected(self, root: str) -> ProtectedPaths:
        protected = self._protected_for(root)
        if not isinstance(protected, ProtectedPaths):
            raise TypeError("protected_for must return a ProtectedPaths")
        return protected

    async def _each(self, root: str | None, ask: Callable[[RootWorker, Callable[[], None]], None]) -> None:
        if root is None:
            workers = list(self._workers.values())
        else:
            worker = self._workers.get(normalize_root(root))
            workers = [worker] if worker is not None else []
        loop = asyncio.get_running_loop()
        futures = []
        for w in workers:
            fut: asyncio.Future[None] = loop.create_future()
            ask(w, _resolver(fut))
            futures.append(fut)
        if futures:
            await asyncio.gather(*futures)

    def _post(self, item: Item) -> None:
        """Called from worker threads: protected records are folded into floods here,
        off the loop (floods.py)."""
        loop = self._loop
        if loop is None:
            return
        if isinstance(item, RecordsItem):
            worker = self._workers.get(item.root)
            if worker is not None and any(
                isinstance(r, Record) and r.protected is not None for r in item.records
            ):
                records = [r for r in item.records if isinstance(r, Record)]
                folded = coalesce(records, worker.index.scope.protected, worker.baselines)
                item = RecordsItem(item.root, folded, item.at, item.urgent)
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is listening any more
            loop.call_soon_threadsafe(self._enqueue, item)

    def _post_hint(self, hint: Hint) -> None:
        """Called from the sentinel's thread."""
        loop = self._loop
        if loop is None or self._closed:
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._deliver_hint, hint)

    def _deliver_hint(self, hint: Hint) -> None:
        if self._closed or hint.root not in self._workers or self._on_hint is None:
            return
        try:
            self._on_hint(hint)
        except Exception:
            log.exception("an on_hint subscriber failed")

    def _enqueue(self, item: Item) -> None:
        queue = self._queue
        if isinstance(item, RecordsItem) and item.urgent:
            # Ahead of ordinary records still waiting (a burst's), behind other urgent
            # ones and behind the item being delivered.
            pos = 1 if self._offset else 0
            while pos < len(queue) and _urgent(queue[pos]):
                pos += 1
            queue.insert(pos, item)
        else:
            queue.append(item)
        if not self._draining:
            self._draining = True
            asyncio.get_running_loop().call_soon(self._drain)

    def _drain(self) -> None:
        budget = self._chunk
        queue = self._queue
        while queue and budget > 0:
            item = queue[0]
            if isinstance(item, RecordsItem):
                start = self._offset
                end = min(len(item.records), start + budget)
                for rec in item.records[start:end]:
                    self._deliver(item.root, rec, item.at)
                budget -= end - start
                if end >= len(item.records):
                    queue.popleft()
                    self._offset = 0
                else:
                    self._offset = end
            elif isinstance(item, StatusItem):
                queue.popleft()
                if item.status.root in self._workers:
                    self._on_status_safe()
            else:
                queue.popleft()
                assert isinstance(item, MarkerItem)
                item.callback()
        if queue:
            asyncio.get_running_loop().call_soon(self._drain)
        else:
            self._draining = False

    def _deliver(self, root: str, rec: Record | Flood, at: float) -> None:
        if self._closed:
            return
        event = self._flood_event(root, rec, at) if isinstance(rec, Flood) else self._event(root, rec, at)
        try:
            self._on_event(event)
        except Exception:
            log.exception("an on_event subscriber failed")

    def _flood_event(self, root: str, flood: Flood, at: float) -> FileEvent:
        recs = flood.records
        kinds = {r.kind for r in recs}
        first = recs[0]
        changed_at = min(r.changed_at for r in recs)
        return FileEvent(
            seq=next(self._seq),
            at=at,
            changed_at=changed_at,
            workspace_root=root,
            path=flood.group or ".",
            kind=first.kind if len(kinds) == 1 else ChangeKind.MODIFIED,
            protected=first.protected,
            is_dir=True,
            symlink_escape=any(r.symlink_escape for r in recs),
            size=None,
            mode=None,
            attribution=self._attributions.at(root, flood.group or first.path, changed_at),
            source=first.source,
            count=len(recs),
            members=tuple(r.path for r in recs),
            quiet=flood.quiet,
            group=flood.group,
        )

    def _event(self, root: str, rec: Record, at: float) -> FileEvent:
        return FileEvent(
            seq=next(self._seq),
            at=at,
            changed_at=rec.changed_at,
            workspace_root=root,
            path=rec.path,
            kind=rec.kind,
            protected=rec.protected,
            is_dir=rec.is_dir,
            symlink_escape=rec.symlink_escape,
            size=rec.size,
            mode=rec.mode,
            attribution=self._attributions.at(root, rec.path, rec.changed_at),
            source=rec.source,
            quiet=rec.quiet,
            group=rec.group,
        )

    def _on_status_safe(self) -> None:
        if self._closed:
            return
        try:
            self._on_status(self.status())
        except Exception:
            log.exception("an on_status subscriber failed")
