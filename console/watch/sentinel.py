"""A fast lane for protected writes: no debounce, and the writer's pid where the kernel gives it.

The main watcher (root.py) debounces and indexes everything, so a protected write waits
behind ``debounce_ms`` and, during a burst, behind thousands of ordinary records. For a
tripwire that must stop the writer within tens of milliseconds that is too slow. The
sentinel is one thread with its own raw inotify descriptor on a handful of directories
per root (the root itself, ``.git``, ``.git/hooks``, ``.git/info``, ``.claude``,
``.github/workflows``) and no debounce: a protected name changing there becomes a
``Hint`` on the loop at once. A hint is only a prompt to look for the writer now; the
record that follows through the main watcher stays the one that is classified, diffed
and kept.

inotify follows a watched directory's symlink, so ``.git/hooks`` pointing into the
workspace is watched where it points, and a change there is still ``.git/hooks/NAME``.
Linux only; where inotify is missing the sentinel stays off and the main watcher alone
reports (a little later).

Where the daemon may use fanotify (CAP_SYS_ADMIN), the lane also reads the kernel's own
account of who acted (fanotify.py), in two FID groups (``FAN_REPORT_DFID_NAME``):
creation, rename into and out of a name, link (``O_TMPFILE`` + ``linkat`` included),
deletion, writes and attribute changes, each with the acting pid:

- the **hot** group marks the hot directories above and the directories of protected
  links' targets; the open gate (gate.py) holds every open there until the opener has
  been read, so a writer that exits at once is still known;
- the **deep** group marks every other directory of the root that the watcher does
  not skip (up to ``MAX_DEEP_DIRS``; a new directory is marked when it appears) for
  names only, and each protected file in them for its writes, so a deep protected path
  (``src/.env.local``, ``deploy/id_rsa``) is seen as fast while an ordinary write costs
  its writer no event. It is read in small chunks, the hot group again between them.

The pid is mapped to its writer (``writer_of``: console/sessions/lineage.py) in this
thread, before anything else: a session's, an operation's, nobody's or unknown; a
session's is stopped from this thread too (``stop_now``), before the hint crosses to the
event loop. A creation waits up to ``CREATE_GRACE_S`` for the write that usually follows
(so the writer is stopped with its first bytes written, and the operator sees them), and
is a hint on its own when the file already holds bytes or no write comes (a link, a
rename, an empty file).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import re
import select
import stat
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from console.contract.outcome import ChangeKind
from console.policy.patterns import ProtectedPaths
from console.watch import fanotify
from console.watch.gate import OpenGate
from console.watch.noise import is_init_config, quiet_reason
from console.watch.scope import Scope

log = logging.getLogger("console.watch")

HOT_DIRS = ("", ".git", ".git/hooks", ".git/info", ".claude", ".github/workflows")

_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_IGNORED = 0x8000
_IN_ISDIR = 0x40000000
_IN_ONLYDIR = 0x01000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
)
_HEADER = struct.Struct("iIII")
NO_FANOTIFY_VAR = "AGENT_CONSOLE_NO_FANOTIFY"  # "1": inotify only (tests the fallback)
NO_FAST_LANE_VAR = "AGENT_CONSOLE_NO_FAST_LANE"  # "1": no sentinel at all (the watcher alone)
MAX_DEEP_DIRS = 20_000  # directories per root in the deep group
CREATE_GRACE_S = 0.003  # a creation waits this long for its first write
WALK_STEP = 32  # directories marked per turn of the loop (events are read between turns)
DEEP_CHUNK = 16 * 1024  # bytes of deep events read at once (a few hundred events) ...
DEEP_READS = 16  # ... this many times per turn, the hot group read again after each
REPEAT_S = 0.1  # one hint per path per this long
RECHECK_S = 1.0
LINKS_EVERY_S = 0.05  # names come and go in a hot directory: look for new links this often at most
MAX_ALIASES = 256  # protected links followed per root  # look again for hot directories that did not exist


class WriterOf(Protocol):
    """Who a pid was (console/sessions/lineage.py ``Writer``)."""

    @property
    def kind(self) -> str: ...  # session | operation | nobody | unknown
    @property
    def id(self) -> str: ...
    @property
    def how(self) -> str: ...
    @property
    def firm(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Hint:
    root: str
    path: str  # relative to root
    kind: ChangeKind
    is_dir: bool
    at: float  # wall clock when the sentinel read it
    pattern: str
    pid: int | None = None  # the writer, when fanotify reported it
    writer: WriterOf | None = None  # whose process the pid is (None: no pid)
    renamed: bool = False  # moved into or out of the name


def _kind(mask: int) -> ChangeKind:
    if mask & (_IN_CREATE | _IN_MOVED_TO):
        return ChangeKind.ADDED
    if mask & (_IN_DELETE | _IN_MOVED_FROM):
        return ChangeKind.DELETED
    return ChangeKind.MODIFIED


def _quiet(root: str, rel: str, *, is_dir: bool) -> bool:
    """What the watcher reports quietly (noise.py, floods.annotate) is no reason to stop
    anyone: editors' and git's own files, a new directory (its files are reported one
    by one), a new repository's default config. Judged on what is there now; a config
    that grows past git's defaults is still caught by the watcher's own event."""
    if is_dir or quiet_reason(rel, is_dir=False) is not None:
        return True
    return (rel == ".git/config" or rel.endswith("/.git/config")) and is_init_config(os.path.join(root, rel))


def _repeated(last: dict[Any, float], key: Any, now: float) -> bool:
    """Seen within ``REPEAT_S`` (a writer's many writes make one hint); else noted now.
    Bounded: the memory is dropped whole past 4,096 keys."""
    if now - last.get(key, -1e9) < REPEAT_S:
        return True
    if len(last) > 4096:
        last.clear()
    last[key] = now
    return False


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1  # noqa: B018 - probe
    except (OSError, AttributeError):
        return None
    return libc


_TMPFILE = re.compile(r"#\d+")  # how the kernel names an O_TMPFILE before it is linked


@dataclass(slots=True)
class _Dir:
    """A directory marked in an FID group: where it is, and what it stands for."""

    real: str
    places: list[tuple[str, str]] = field(default_factory=list)  # (root, relative path)
    hot: bool = False
    deep: bool = False


@dataclass(slots=True)
class _Created:
    """A creation waiting ``CREATE_GRACE_S`` for its first write."""

    deadline: float
    at: float
    pattern: str
    writer: WriterOf | None


class Sentinel:
    """One thread; one inotify descriptor and two FID groups over a few directories per
    root (the hot ones) and the rest of it (the deep ones)."""

    def __init__(
        self,
        on_hint: Callable[[Hint], None],
        writer_of: Callable[[int], WriterOf] | None = None,
        seen: Callable[[int], object] | None = None,
        stop_now: Callable[[Hint], None] | None = None,
    ) -> None:
        self._on_hint = on_hint
        self._stop_now = stop_now
        self._writer_of = writer_of
        self._hot = self._deep = -1
        self._gate: OpenGate | None = None
        self._lock = threading.Lock()
        self._roots: dict[str, ProtectedPaths] = {}
        self._scopes: dict[str, Scope] = {}
        self._wds: dict[int, tuple[str, str]] = {}  # wd -> (root, hot dir)
        self._watched: set[tuple[str, str]] = set()
        self._last: dict[Any, float] = {}
        self._last_fan: dict[Any, float] = {}
        self._created: dict[tuple[str, str, int], _Created] = {}
        # Directories in the FID groups, by file handle; and by real path.
        self._dirs: dict[bytes, _Dir] = {}
        self._by_real: dict[str, bytes] = {}
        self._deep_count: dict[str, int] = {}
        self._walks: deque[tuple[str, str]] = deque()
        self._flushes: list[Callable[[], None]] = []
        self._files: set[str] = set()  # protected files in deep directories, marked for writes
        self.overflows = 0
        self.truncated: set[str] = set()  # roots with more directories than the deep group takes
        # Protected symlinks in the hot directories protect their targets: real target
        # file -> (root, the link's path), and the targets' directories watched for it.
        self._aliases: dict[str, tuple[str, str]] = {}
        self._alias_wds: dict[str, int] = {}  # real directory -> inotify wd
        self._wd_dir: dict[int, str] = {}
        self._alias_marked: set[str] = set()
        self._links_dirty = False
        self._links_at = 0.0
        self._libc = _libc()
        self._fd = -1
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._stop = False
        self._next_check = 0.0
        self._thread: threading.Thread | None = None
        if self._libc is not None:
            fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
            if fd >= 0:
                self._fd = fd
        if self._fd < 0:
            log.info("the fast protected-path lane is off (no inotify); the watcher alone reports")
        elif writer_of is not None and fanotify.available() and os.environ.get(NO_FANOTIFY_VAR) != "1":
            flags = fanotify.FAN_REPORT_DFID_NAME | fanotify.FAN_UNLIMITED_QUEUE
            self._hot = fanotify.init(flags)
            if self._hot >= 0:
                self._deep = fanotify.init(flags)
                if seen is not None:
                    gate = OpenGate(seen)
                    self._gate = gate if gate.active else None

    @property
    def mode(self) -> str:
        """What the lane uses: "fanotify+inotify", "inotify" or "off"."""
        if self._fd < 0:
            return "off"
        return "fanotify+inotify" if self._hot >= 0 else "inotify"

    @property
    def gated(self) -> bool:
        """Opens in the hot directories wait until the opener is read (gate.py)."""
        return self._gate is not None and self._gate.active

    def deep_dirs(self, root: str) -> int:
        with self._lock:
            return self._deep_count.get(root, 0)

    @property
    def active(self) -> bool:
        return self._fd >= 0

    def set_root(self, root: str, protected: ProtectedPaths) -> None:
        if not self.active:
            return
        with self._lock:
            fresh = root not in self._roots
            self._roots[root] = protected
            self._scopes[root] = Scope(protected)
            self._check_dirs(root)
            if fresh and self._deep >= 0:
                self._walks.append((root, ""))
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="watch:sentinel", daemon=True)
            self._thread.start()
        else:
            self._wake()

    def remove_root(self, root: str) -> None:
        with self._lock:
            self._roots.pop(root, None)
            self._scopes.pop(root, None)
            for wd, (r, _) in list(self._wds.items()):
                if r == root:
                    self._rm_watch(wd)
            self._forget(root, "")
            self._deep_count.pop(root, None)
            self.truncated.discard(root)
            self._scan_links(root)  # no longer a root: its links are forgotten

    def close(self) -> None:
        self._stop = True
        self._wake()
        if self._thread is not None:
            self._thread.join(2)
        if self._gate is not None:
            self._gate.close()
        with self._lock:
            for fd in (self._fd, self._hot, self._deep, self._wake_r, self._wake_w):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._fd = self._hot = self._deep = self._wake_r = self._wake_w = -1

    def flush(self, done: Callable[[], None]) -> None:
        """Call ``done`` (from the lane's thread) once everything the kernel has queued
        so far has been read and its hints given, creations still waiting included."""
        with self._lock:
            self._flushes.append(done)
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    # -- marks -------------------------------------------------------------------------------

    def _register(self, real: str, place: tuple[str, str] | None, *, hot: bool) -> bool:
        """Mark directory ``real`` in the hot or deep group (under the lock); ``place`` is
        the (root, path) it stands for. False when the kernel refused."""
        group = self._hot if hot else self._deep
        mask = fanotify.NAMES_MASK if hot else fanotify.DEEP_MASK
        if group < 0:
            return False
        handle = self._by_real.get(real)
        entry = self._dirs.get(handle) if handle is not None else None
        if entry is None or (hot and not entry.hot) or (not hot and not entry.deep):
            if not fanotify.mark(group, real, mask):
                return False
            if entry is None:
                handle = fanotify.handle_of(real)
                if handle is None:
                    fanotify.mark(group, real, mask, remove=True)
                    return False
                entry = self._dirs.setdefault(handle, _Dir(real))
                if entry.real != real:  # the directory was moved: it is known by its new name
                    if self._by_real.get(entry.real) == handle:
                        del self._by_real[entry.real]
                    entry.real = real
                old = self._by_real.get(real)
                if old is not None and old != handle:
                    self._dirs.pop(old, None)
                self._by_real[real] = handle
            if hot:
                entry.hot = True
                if self._gate is not None:
                    self._gate.mark(real)
            else:
                entry.deep = True
        if place is not None and place not in entry.places:
            entry.places.append(place)
        return True

    def _mark_file(self, path: str, *, again: bool = False) -> None:
        """Writes to a protected file in a deep directory (whose own mark leaves writes
        out): a mark on the file itself (``again``: the name may be a new inode now)."""
        if self._deep < 0 or (path in self._files and not again) or len(self._files) >= MAX_DEEP_DIRS:
            return
        if fanotify.mark(self._deep, path, fanotify.FILE_MASK):
            self._files.add(path)

    def _forget(self, root: str, rel: str) -> None:
        """Drop the places below ``rel`` of ``root`` (a directory removed or moved away;
        under the lock). Its marks went with the inode or stay harmlessly on a moved one."""
        prefix = f"{rel}/" if rel else ""
        for handle, entry in list(self._dirs.items()):
            kept = [
                (r, p)
                for r, p in entry.places
                if r != root or not (p == rel or p.startswith(prefix) or not rel)
            ]
            if len(kept) != len(entry.places):
                removed = len(entry.places) - len(kept)
                entry.places = kept
                if entry.deep and not entry.hot:
                    self._deep_count[root] = max(0, self._deep_count.get(root, 0) - removed)
                if not entry.places and not entry.hot:
                    del self._dirs[handle]
                    if self._by_real.get(entry.real) == handle:
                        del self._by_real[entry.real]
                    if self._deep >= 0:
                        fanotify.mark(self._deep, entry.real, fanotify.DEEP_MASK, remove=True)

    def _walk_step(self) -> None:
        """Mark up to ``WALK_STEP`` directories of the pending walks in the deep group."""
        budget = WALK_STEP
        while budget > 0:
            self._drain_hot()
            with self._lock:
                if not self._walks:
                    return
                root, rel = self._walks.popleft()
                scope = self._scopes.get(root)
                if scope is None:
                    continue
                if self._deep_count.get(root, 0) >= MAX_DEEP_DIRS:
                    self.truncated.add(root)
                    continue
                if rel and scope.under_skipped(rel):
                    continue
                path = os.path.join(root, rel) if rel else root
                hot = rel in HOT_DIRS
                if not hot:
                    try:
                        st = os.lstat(path)
                    except OSError:
                        continue
                    if not stat.S_ISDIR(st.st_mode):
                        continue
                    if self._register(path, (root, rel), hot=False):
                        self._deep_count[root] = self._deep_count.get(root, 0) + 1
                budget -= 1
            try:
                with os.scandir(path) as it:
                    entries = [
                        (e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False))
                        for e in it
                    ]
            except OSError:
                continue
            with self._lock:
                protected = self._roots.get(root)
                for name, is_dir, is_file in entries:
                    child = f"{rel}/{name}" if rel else name
                    if is_dir:
                        self._walks.append((root, child))
                    elif (
                        is_file and not hot and protected is not None and protected.match(child, is_dir=False)
                    ):
                        self._mark_file(f"{path}/{name}")

    # -- the thread ------------------------------------------------------------------------

    def _check_dirs(self, root: str) -> None:
        """Watch each hot directory of ``root`` that exists now (under the lock)."""
        assert self._libc is not None
        for rel in HOT_DIRS:
            if (root, rel) in self._watched:
                continue
            path = os.path.join(root, rel) if rel else root
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), _MASK)
            if wd >= 0:
                self._wds[wd] = (root, rel)
                self._watched.add((root, rel))
                self._register(os.path.realpath(path), (root, rel), hot=True)
        self._scan_links(root)

    def _scan_links(self, root: str) -> None:
        """Follow protected symlinks in the hot directories to the files they name (under
        the lock): a write to ``scripts/hook`` is a write to ``.git/hooks/pre-commit``
        when that is a link to it. At most ``MAX_ALIASES`` per root."""
        assert self._libc is not None
        protected = self._roots.get(root)
        found: dict[str, tuple[str, str]] = {}
        for hot in HOT_DIRS if protected is not None else ():
            assert protected is not None
            try:
                entries = list(os.scandir(os.path.join(root, hot) if hot else root))
            except OSError:
                continue
            for entry in entries:
                rel = f"{hot}/{entry.name}" if hot else entry.name
                try:
                    link = entry.is_symlink()
                except OSError:
                    continue
                if not link or protected.match(rel, is_dir=False) is None:
                    continue
                target = os.path.realpath(entry.path)
                if os.path.isfile(target) and len(found) < MAX_ALIASES:
                    found[target] = (root, rel)
        for target, where in list(self._aliases.items()):
            if where[0] == root and target not in found:
                del self._aliases[target]
        self._aliases.update(found)
        needed = {os.path.dirname(t) for t in self._aliases}
        for folder in needed - set(self._alias_wds):
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(folder), _MASK)
            if wd >= 0:
                self._alias_wds[folder] = wd
                self._wd_dir[wd] = folder
            if folder not in self._alias_marked and self._register(folder, None, hot=True):
                self._alias_marked.add(folder)
        for folder in set(self._alias_wds) - needed:
            wd = self._alias_wds.pop(folder)
            self._wd_dir.pop(wd, None)
            if wd not in self._wds:
                self._libc.inotify_rm_watch(self._fd, wd)
        self._alias_marked &= needed

    def _rm_watch(self, wd: int) -> None:
        assert self._libc is not None
        key = self._wds.pop(wd, None)
        if key is not None:
            self._watched.discard(key)
            self._libc.inotify_rm_watch(self._fd, wd)
            for entry in self._dirs.values():
                if key in entry.places and entry.hot:
                    entry.places.remove(key)  # watched again where the name points next

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        for group in (self._hot, self._deep):
            if group >= 0:
                poller.register(group, select.POLLIN)
        while not self._stop:
            timeout = (LINKS_EVERY_S if self._links_dirty else RECHECK_S) * 1000
            if self._walks:
                timeout = 0
            if self._created:
                soonest = min(c.deadline for c in self._created.values())
                timeout = min(timeout, max(0.0, (soonest - time.monotonic()) * 1000))
            try:
                ready = poller.poll(timeout)
            except OSError:
                continue
            if self._stop:
                return
            fds = {fd for fd, _ in ready}
            if self._wake_r in fds:
                with contextlib.suppress(OSError):
                    os.read(self._wake_r, 4096)
            # The hot group first, and again between small reads of the deep one: a burst
            # of ordinary files there never delays a hook's writer by more than a chunk.
            if self._hot in fds:
                self._drain_hot()
            if self._deep >= 0 and self._deep in fds:
                self._read_deep()
            if self._fd in fds:
                try:
                    data = os.read(self._fd, 64 * 1024)
                except BlockingIOError:
                    data = b""
                except OSError:
                    log.exception("the fast protected-path lane failed; the watcher alone reports")
                    return
                try:
                    self._parse(data)
                except Exception:
                    log.exception("the fast protected-path lane could not read an event")
            self._expire_created()
            if self._flushes:
                self._flush()
            if self._walks:
                try:
                    self._walk_step()
                except Exception:
                    log.exception("marking a workspace's directories failed")
            now = time.monotonic()
            if now >= self._next_check or (self._links_dirty and now - self._links_at >= LINKS_EVERY_S):
                self._next_check = now + RECHECK_S
                self._links_dirty, self._links_at = False, now
                with self._lock:
                    for root in list(self._roots):
                        self._check_dirs(root)

    # -- FID events -----------------------------------------------------------------------

    def _drain_hot(self) -> None:
        while self._hot >= 0:
            try:
                self._parse_names(os.read(self._hot, 256 * 1024))
            except BlockingIOError:
                return
            except Exception:
                log.exception("the fanotify lane could not read an event")
                return

    def _read_deep(self) -> None:
        for _ in range(DEEP_READS):
            try:
                data = os.read(self._deep, DEEP_CHUNK)
            except BlockingIOError:
                return
            try:
                self._parse_names(data)
            except Exception:
                log.exception("the fanotify lane could not read an event")
            self._drain_hot()

    def _parse_names(self, data: bytes) -> None:
        at = time.time()
        for ev in fanotify.read_names(data):
            if ev.mask & fanotify.FAN_Q_OVERFLOW:
                self.overflows += 1
                continue
            with self._lock:
                entry = self._dirs.get(ev.directory)
                places = list(entry.places) if entry is not None else []
                real = entry.real if entry is not None else ""
                alias = self._aliases.get(f"{real}/{ev.name}") if entry is not None else None
            if entry is None or ev.name in (".", ""):
                continue
            if ev.mask & fanotify.FAN_ONDIR:
                with self._lock:
                    for root, rel in places:
                        child = f"{rel}/{ev.name}" if rel else ev.name
                        if ev.mask & fanotify.GONE_MASK:
                            self._forget(root, child)
                        if ev.mask & fanotify.ADDED_MASK and self._deep >= 0:
                            self._walks.append((root, child))
                continue
            targets = [(root, f"{rel}/{ev.name}" if rel else ev.name) for root, rel in places]
            if alias is not None:
                targets.append(alias)
            for root, rel in targets:
                self._fid_hint(root, rel, ev, at, real)

    def _fid_hint(self, root: str, rel: str, ev: fanotify.NameEvent, at: float, real: str) -> None:
        with self._lock:
            protected = self._roots.get(root)
        if protected is None:
            return
        pattern = protected.match_in(root, rel, is_dir=False)
        if pattern is None or _quiet(root, rel, is_dir=False):
            return
        mask = ev.mask
        if _TMPFILE.fullmatch(ev.name) and not os.path.lexists(f"{real}/{ev.name}"):
            return  # an O_TMPFILE being written: its link, if any, is the change
        if mask & fanotify.ADDED_MASK and real:
            with self._lock:  # its writes from now on (a deep directory's mark has none)
                self._mark_file(f"{real}/{ev.name}", again=True)
        elif mask & fanotify.GONE_MASK:
            with self._lock:
                self._files.discard(f"{real}/{ev.name}")
        key = (root, rel, ev.pid)
        now = time.monotonic()
        if (
            mask & fanotify.ADDED_MASK
            and not mask & fanotify.FAN_MODIFY
            and mask & fanotify.FAN_CREATE
            and not _written(f"{real}/{ev.name}")
        ):
            if key not in self._created:
                writer = self._writer(ev.pid)  # read now: it may be gone by the deadline
                self._created[key] = _Created(now + CREATE_GRACE_S, at, pattern, writer)
            return
        created = self._created.pop(key, None)
        if mask & fanotify.ADDED_MASK or created is not None:
            kind = ChangeKind.ADDED
        elif mask & fanotify.GONE_MASK:
            kind = ChangeKind.DELETED
        else:
            kind = ChangeKind.MODIFIED
        if _repeated(self._last_fan, key, now):
            return
        writer = (
            created.writer if created is not None and created.writer is not None else self._writer(ev.pid)
        )
        renamed = bool(mask & (fanotify.FAN_MOVED_TO | fanotify.FAN_MOVED_FROM))
        self._hint(Hint(root, rel, kind, False, at, pattern, ev.pid, writer, renamed))

    def _flush(self) -> None:
        with self._lock:
            waiting, self._flushes = self._flushes, []
        for group in (self._hot, self._deep):
            while group >= 0:
                try:
                    self._parse_names(os.read(group, 256 * 1024))
                except BlockingIOError:
                    break
                except Exception:
                    log.exception("the fanotify lane could not read an event")
                    break
        self._expire_created(force=True)
        for done in waiting:
            try:
                done()
            except Exception:
                log.exception("a fast-lane flush callback failed")

    def _expire_created(self, *, force: bool = False) -> None:
        if not self._created:
            return
        now = time.monotonic()
        for key, created in list(self._created.items()):
            if created.deadline > now and not force:
                continue
            del self._created[key]
            root, rel, pid = key
            if _repeated(self._last_fan, key, now):
                continue
            self._hint(
                Hint(root, rel, ChangeKind.ADDED, False, created.at, created.pattern, pid, created.writer)
            )

    def _writer(self, pid: int) -> WriterOf | None:
        if self._writer_of is None:
            return None
        try:
            return self._writer_of(pid)
        except Exception:
            log.exception("could not tell whose process %d is", pid)
            return None

    # -- inotify events -------------------------------------------------------------------

    def _parse(self, data: bytes) -> None:
        at = time.time()
        offset = 0
        recheck = False
        rewatch: set[tuple[str, str]] = set()
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            raw = data[offset + _HEADER.size : offset + _HEADER.size + length].rstrip(b"\0")
            offset += _HEADER.size + length
            with self._lock:
                where = self._wds.get(wd)
                if mask & _IN_IGNORED:
                    self._wds.pop(wd, None)
                    if where is not None:
                        self._watched.discard(where)
                    continue
                if mask & (_IN_DELETE_SELF | _IN_MOVE_SELF) and where is not None:
                    self._rm_watch(wd)  # watched again where the name points next
                    recheck = True
                    continue
                alias_dir = self._wd_dir.get(wd)
                if (where is None and alias_dir is None) or not raw:
                    continue
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue  # the main watcher reports names that are not UTF-8
            is_dir = bool(mask & _IN_ISDIR)
            for root, rel in self._places(where, alias_dir, name):
                if mask & (_IN_CREATE | _IN_MOVED_TO | _IN_DELETE | _IN_MOVED_FROM):
                    self._links_dirty = True  # perhaps a link made or pointed elsewhere
                    if rel in HOT_DIRS:
                        rewatch.add((root, rel))  # a new directory, or a directory link moved
                if self._hot < 0:  # with fanotify, its events (with the pid) are the hints
                    self._hint_inotify(root, rel, mask, is_dir, at)
        if recheck or rewatch:
            with self._lock:
                for wd, key in list(self._wds.items()):
                    if key in rewatch:
                        self._rm_watch(wd)
                for root in list(self._roots):
                    self._check_dirs(root)

    def _places(
        self, where: tuple[str, str] | None, alias_dir: str | None, name: str
    ) -> list[tuple[str, str]]:
        """The protected paths an event's name stands for: in a hot directory, and as
        the target of a protected link."""
        out = []
        if where is not None:
            root, hot = where
            out.append((root, f"{hot}/{name}" if hot else name))
        if alias_dir is not None:
            with self._lock:
                alias = self._aliases.get(f"{alias_dir}/{name}")
            if alias is not None:
                out.append(alias)
        return out

    def _hint_inotify(self, root: str, rel: str, mask: int, is_dir: bool, at: float) -> None:
        with self._lock:
            protected = self._roots.get(root)
        if protected is None:
            return
        pattern = protected.match_in(root, rel, is_dir=is_dir)
        if pattern is None or _quiet(root, rel, is_dir=is_dir):
            return
        if _repeated(self._last, (root, rel), time.monotonic()):
            return
        renamed = bool(mask & (_IN_MOVED_TO | _IN_MOVED_FROM))
        self._hint(Hint(root, rel, _kind(mask), is_dir, at, pattern, renamed=renamed))

    def _hint(self, hint: Hint) -> None:
        if self._stop_now is not None and hint.writer is not None and hint.writer.kind == "session":
            # The kernel named a session's process: it may be stopped from here, before
            # the hint crosses to the event loop (a tight writer makes hundreds of writes
            # in the time that takes).
            try:
                self._stop_now(hint)
            except Exception:
                log.exception("could not stop the writer from the fast lane")
        try:
            self._on_hint(hint)
        except Exception:
            log.exception("a protected-path hint subscriber failed")


def _written(path: str) -> bool:
    """A file just created already holds bytes (written before its mark, or linked in
    whole): nothing more to wait for."""
    try:
        return os.lstat(path).st_size > 0
    except OSError:
        return False
