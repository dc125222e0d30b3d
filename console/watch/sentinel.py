"""A fast lane for the few directories where a protected write is most likely.

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

Where the daemon may use fanotify (CAP_SYS_ADMIN), the same directories also get an
inode mark for writes to their children (``FAN_MODIFY | FAN_CLOSE_WRITE`` with
``FAN_EVENT_ON_CHILD``: a few marks, not a filesystem-wide one, so it costs nothing
elsewhere). Its events carry the writer's pid, which ``writer_of`` maps to a session
(its cgroup, else its environment marker) in this thread, before the writer can exit:
"pid from fanotify", the one basis that names the writer even beside another session
writing in the same workspace.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import select
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from console.contract.outcome import ChangeKind
from console.policy.patterns import ProtectedPaths
from console.watch.noise import is_init_config, quiet_reason

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
REPEAT_S = 0.1  # one hint per path per this long
RECHECK_S = 1.0
LINKS_EVERY_S = 0.05  # names come and go in a hot directory: look for new links this often at most
MAX_ALIASES = 256  # protected links followed per root  # look again for hot directories that did not exist


@dataclass(frozen=True, slots=True)
class Hint:
    root: str
    path: str  # relative to root
    kind: ChangeKind
    is_dir: bool
    at: float  # wall clock when the sentinel read it
    pattern: str
    pid: int | None = None  # the writer, when fanotify reported it
    session: str | None = None  # the writer's session (None: not a session's process)
    renamed: bool = False  # moved into or out of the name: no write fanotify would report


def _kind(mask: int) -> ChangeKind:
    if mask & (_IN_CREATE | _IN_MOVED_TO):
        return ChangeKind.ADDED
    if mask & (_IN_DELETE | _IN_MOVED_FROM):
        return ChangeKind.DELETED
    return ChangeKind.MODIFIED


_FAN_CLOEXEC = 0x1
_FAN_NONBLOCK = 0x2
_FAN_MARK_ADD = 0x1
_FAN_MARK_REMOVE = 0x2
_FAN_MODIFY = 0x2
_FAN_CLOSE_WRITE = 0x8
_FAN_EVENT_ON_CHILD = 0x08000000
_FAN_MASK = _FAN_MODIFY | _FAN_CLOSE_WRITE | _FAN_EVENT_ON_CHILD
_AT_FDCWD = -100
_FAN_META = struct.Struct("IBBHQii")  # event_len, vers, reserved, metadata_len, mask, fd, pid


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
    with contextlib.suppress(AttributeError):
        libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
        libc.fanotify_mark.argtypes = [
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint64,
            ctypes.c_int,
            ctypes.c_char_p,
        ]
    return libc


class Sentinel:
    """One thread, one inotify descriptor, a few directories per root."""

    def __init__(
        self, on_hint: Callable[[Hint], None], writer_of: Callable[[int], str | None] | None = None
    ) -> None:
        self._on_hint = on_hint
        self._writer_of = writer_of
        self._fan = -1
        self._marked: dict[str, tuple[str, str]] = {}  # real directory -> (root, hot dir)
        self._lock = threading.Lock()
        self._roots: dict[str, ProtectedPaths] = {}
        self._wds: dict[int, tuple[str, str]] = {}  # wd -> (root, hot dir)
        self._watched: set[tuple[str, str]] = set()
        self._last: dict[tuple[str, str], float] = {}
        self._last_fan: dict[tuple[tuple[str, str], int], float] = {}
        self._modified: dict[tuple[tuple[str, str], int], float] = {}  # written since opened
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
        elif (
            writer_of is not None
            and hasattr(self._libc, "fanotify_init")
            and os.environ.get(NO_FANOTIFY_VAR) != "1"
        ):
            assert self._libc is not None
            fan = self._libc.fanotify_init(
                _FAN_CLOEXEC | _FAN_NONBLOCK, os.O_RDONLY | os.O_CLOEXEC | os.O_LARGEFILE
            )
            if fan >= 0:
                self._fan = fan

    @property
    def mode(self) -> str:
        """What the lane uses: "fanotify+inotify", "inotify" or "off"."""
        if self._fd < 0:
            return "off"
        return "fanotify+inotify" if self._fan >= 0 else "inotify"

    @property
    def active(self) -> bool:
        return self._fd >= 0

    def set_root(self, root: str, protected: ProtectedPaths) -> None:
        if not self.active:
            return
        with self._lock:
            self._roots[root] = protected
            self._check_dirs(root)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="watch:sentinel", daemon=True)
            self._thread.start()

    def remove_root(self, root: str) -> None:
        with self._lock:
            self._roots.pop(root, None)
            for wd, (r, _) in list(self._wds.items()):
                if r == root:
                    self._rm_watch(wd)
            self._scan_links(root)  # no longer a root: its links are forgotten

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(2)
        with self._lock:
            for fd in (self._fd, self._fan, self._wake_r, self._wake_w):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._fd = self._fan = self._wake_r = self._wake_w = -1

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
                if self._fan >= 0:
                    real = os.path.realpath(path)
                    if (
                        self._libc.fanotify_mark(
                            self._fan, _FAN_MARK_ADD, _FAN_MASK, _AT_FDCWD, os.fsencode(real)
                        )
                        == 0
                    ):
                        self._marked[real] = (root, rel)
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
            if self._fan >= 0 and folder not in self._marked:
                mark = self._libc.fanotify_mark(
                    self._fan, _FAN_MARK_ADD, _FAN_MASK, _AT_FDCWD, os.fsencode(folder)
                )
                if mark == 0:
                    self._alias_marked.add(folder)
        for folder in set(self._alias_wds) - needed:
            wd = self._alias_wds.pop(folder)
            self._wd_dir.pop(wd, None)
            if wd not in self._wds:
                self._libc.inotify_rm_watch(self._fd, wd)
        for folder in self._alias_marked - needed:
            self._alias_marked.discard(folder)
            if self._fan >= 0 and folder not in self._marked:
                self._libc.fanotify_mark(
                    self._fan, _FAN_MARK_REMOVE, _FAN_MASK, _AT_FDCWD, os.fsencode(folder)
                )

    def _rm_watch(self, wd: int) -> None:
        assert self._libc is not None
        key = self._wds.pop(wd, None)
        if key is not None:
            self._watched.discard(key)
            self._libc.inotify_rm_watch(self._fd, wd)
            for real, where in list(self._marked.items()):
                if where == key:
                    del self._marked[real]
                    if self._fan >= 0:  # gone already, or pointing elsewhere now: either way
                        self._libc.fanotify_mark(
                            self._fan, _FAN_MARK_REMOVE, _FAN_MASK, _AT_FDCWD, os.fsencode(real)
                        )

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        if self._fan >= 0:
            poller.register(self._fan, select.POLLIN)
        while not self._stop:
            try:
                ready = poller.poll((LINKS_EVERY_S if self._links_dirty else RECHECK_S) * 1000)
            except OSError:
                continue
            if self._stop:
                return
            if any(fd == self._fd for fd, _ in ready):
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
            if self._fan >= 0 and any(fd == self._fan for fd, _ in ready):
                try:
                    self._parse_fan(os.read(self._fan, 64 * 1024))
                except BlockingIOError:
                    pass
                except Exception:
                    log.exception("the fanotify lane could not read an event")
            now = time.monotonic()
            if now >= self._next_check or (self._links_dirty and now - self._links_at >= LINKS_EVERY_S):
                self._next_check = now + RECHECK_S
                self._links_dirty, self._links_at = False, now
                with self._lock:
                    for root in list(self._roots):
                        self._check_dirs(root)

    def _parse_fan(self, data: bytes) -> None:
        at = time.time()
        offset = 0
        while offset + _FAN_META.size <= len(data):
            length, _vers, _r, _meta, mask, efd, pid = _FAN_META.unpack_from(data, offset)
            offset += max(length, _FAN_META.size)
            if efd < 0:
                continue  # a queue overflow: the inotify lane and the watcher still report
            try:
                target = os.readlink(f"/proc/self/fd/{efd}")
            except OSError:
                continue
            finally:
                os.close(efd)
            if target.endswith(" (deleted)"):
                continue  # unlinked already (a swap file, a temporary): nothing to stop for
            folder, _, name = target.rpartition("/")
            with self._lock:
                alias = self._aliases.get(target)
                where = self._marked.get(folder)
                protected = self._roots.get((alias or where or ("", ""))[0])
            if alias is not None:
                root, rel = alias
            elif where is None or not name:
                continue
            else:
                root, hot = where
                rel = f"{hot}/{name}" if hot else name
            if protected is None:
                continue
            pattern = protected.match(rel, is_dir=False)
            if pattern is None or _quiet(root, rel, is_dir=False):
                continue
            key = (root, rel)
            now = time.monotonic()
            if not mask & _FAN_MODIFY:
                # A close after writes already reported is not a new change (it can come
                # after the operator resumed the writer): only an empty write is news.
                if self._modified.pop((key, pid), None) is not None:
                    continue
            else:
                if len(self._modified) > 4096:
                    self._modified.clear()
                self._modified[(key, pid)] = now
            if _repeated(self._last_fan, (key, pid), now):
                continue
            session = None
            if self._writer_of is not None:
                try:
                    session = self._writer_of(pid)
                except Exception:
                    log.exception("could not tell whose process %d is", pid)
            self._hint(Hint(root, rel, ChangeKind.MODIFIED, False, at, pattern, pid, session))

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
        pattern = protected.match(rel, is_dir=is_dir)
        if pattern is None or _quiet(root, rel, is_dir=is_dir):
            return
        if _repeated(self._last, (root, rel), time.monotonic()):
            return
        renamed = bool(mask & (_IN_MOVED_TO | _IN_MOVED_FROM))
        self._hint(Hint(root, rel, _kind(mask), is_dir, at, pattern, renamed=renamed))

    def _hint(self, hint: Hint) -> None:
        try:
            self._on_hint(hint)
        except Exception:
            log.exception("a protected-path hint subscriber failed")
