"""Checking the mounts bwrap made, before the command starts.

bwrap (0.8.0, and upstream as well) turns every bind source into a path string —
``--bind-fd`` included: it resolves the descriptor to its path when it parses the
command line and mounts that path later — and finds every mount point by name in the
new root, following symlinks on both sides. A directory on either path swapped for a
symlink in between (a write dir ``a/b/c/d/hooks`` whose ``d`` becomes ``../../../.git``)
lands a writable mount of whatever the symlink names wherever it names. Opening the
sources as descriptors (resolve.py) cannot close that by itself.

So bwrap is started with ``--info-fd`` (it tells the sandbox's pid) and ``--block-fd``
(the sandbox waits, fully set up, before running anything), and the daemon checks the
sandbox's mounts from outside before it lets it go:

1. setup is over when the sandbox's process has dropped its capabilities (``CapEff`` 0
   in /proc/PID/status: no mount can be made after that);
2. every bind is where it was asked for: its mount point, opened inside the sandbox's
   root without following any symlink, is the very object that was opened as its
   source (device and inode), read-only exactly when asked;
3. nothing else was mounted: every line of the sandbox's mountinfo is a copy of one of
   the host's own mounts (the read-only root brings those along), one of the binds
   asked for, or a fresh filesystem bwrap made (/dev, /proc, tmpfs), never another
   bind of a host directory;
4. every content pin is in place: its path, opened inside the sandbox without
   following symlinks, is read-only and holds the verified bytes. A pin mounted over a
   file that another process then renamed a new file onto is detached (Linux removes a
   mount from every namespace when its mount point is renamed over); the run is then
   refused as ``content_changed`` before anything executes.

Any difference and the sandbox is killed before the command runs (fail closed).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import re
import select
import signal
import time
from collections import Counter
from dataclasses import dataclass

from console.sandbox.resolve import RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, SYS_OPENAT2, _OpenHow

RESOLVE_IN_ROOT = 0x10
# How long bwrap may take to set the sandbox up before the run is refused. Hundreds of
# mounts (a workspace of many protected files) on a machine running two test suites have
# taken more than 10 s.
SETUP_TIMEOUT_S = 30.0
_PID = re.compile(rb'"child-pid":\s*(\d+)')


class MountMismatch(RuntimeError):
    """The sandbox's mounts are not the ones asked for; the message says which."""


class SetupTimedOut(MountMismatch):
    """bwrap did not finish the sandbox's setup in time: nothing was checked, nothing runs."""


class PinMismatch(MountMismatch):
    """A pinned file is not in place inside the sandbox (renamed over since it was
    mounted: the mount went with the old name); ``path`` says which."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path


MAX_PIN_CHECK_BYTES = 128 << 20


@dataclass(frozen=True, slots=True)
class Expected:
    path: str
    dev: int
    ino: int
    readonly: bool


def _unescape(field: str) -> str:
    if "\\" not in field:
        return field
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mountinfo(pid: int | str) -> list[tuple[str, str, str]]:
    """(mount point, major:minor, root) of every mount in ``pid``'s namespace."""
    fd = os.open(f"/proc/{pid}/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    out = []
    for line in b"".join(chunks).decode("utf-8", "surrogateescape").splitlines():
        parts = line.split(" ", 5)
        if len(parts) >= 5:
            out.append((_unescape(parts[4]), parts[2], _unescape(parts[3])))
    return out


_libc: ctypes.CDLL | None = None


def _read_pid(info_fd: int, deadline: float) -> int | None:
    data = b""
    # poll, not select: with many bound files the info pipe's fd is past FD_SETSIZE.
    poller = select.poll()
    poller.register(info_fd, select.POLLIN)
    while time.monotonic() < deadline:
        if not poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
            break
        chunk = os.read(info_fd, 4096)
        if not chunk:
            break
        data += chunk
        found = _PID.search(data)
        if found and b"}" in data[found.end() :]:
            return int(found.group(1))
    found = _PID.search(data)
    return int(found.group(1)) if found else None


def _setup_done(pid: int, deadline: float) -> bool | None:
    """Wait until ``pid`` has dropped its capabilities: True; False if it exited first
    (gone, or a zombie its parent has not reaped yet); None at the deadline."""
    delay = 0.0002
    while True:
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                status = f.read()
        except OSError:
            return False
        for line in status.splitlines():
            if line.startswith(b"CapEff:"):
                if int(line.split()[1], 16) == 0:
                    return True
                break
        if b"State:\tZ" in status:
            return False
        if time.monotonic() > deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 1.2, 0.0005)


def _open_in_root(root_fd: int, path: str, flags: int = os.O_PATH) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    libc = _libc
    how = _OpenHow(flags | os.O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    fd = int(
        libc.syscall(
            ctypes.c_long(SYS_OPENAT2),
            ctypes.c_int(root_fd),
            ctypes.c_char_p(os.fsencode(path)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return fd


def _dev(st_dev: int) -> str:
    return f"{os.major(st_dev)}:{os.minor(st_dev)}"


def _check_pins(root_fd: int, pinned: list[tuple[str, str]]) -> None:
    """Each pinned path, opened inside the sandbox without following symlinks, is read-only
    and holds exactly the verified bytes (digest), else :class:`PinMismatch`."""
    for path, digest in pinned:
        try:
            fd = _open_in_root(root_fd, path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError as exc:
            raise PinMismatch(path, f"not reachable inside the sandbox ({exc.strerror})") from None
        try:
            if not os.fstatvfs(fd).f_flag & os.ST_RDONLY:
                raise PinMismatch(path, "writable: the pin is not in place")
            hashed = hashlib.sha256()
            size = 0
            while chunk := os.read(fd, 1 << 20):
                size += len(chunk)
                if size > MAX_PIN_CHECK_BYTES:
                    raise PinMismatch(path, "larger than any pin")
                hashed.update(chunk)
        finally:
            os.close(fd)
        if hashed.hexdigest() != digest:
            raise PinMismatch(path, "other bytes than the ones verified: the pin is not in place")


def check(
    pid: int,
    expected: list[Expected],
    extra_points: Counter[str],
    pinned: list[tuple[str, str]] | None = None,
) -> None:
    """Raise :class:`MountMismatch` unless ``pid``'s mounts are the expected ones.

    ``extra_points``: further mount points bwrap makes from host objects (the temp root,
    /dev/null over hidden files), with how many mounts each. ``pinned``: (path, sha256)
    of the content pins, which must be in place (:class:`PinMismatch` otherwise).
    """
    root_fd = os.open(f"/proc/{pid}/root", os.O_PATH | os.O_CLOEXEC)
    try:
        _check_pins(root_fd, pinned or [])
        for want in expected:
            try:
                fd = _open_in_root(root_fd, want.path)
            except OSError as exc:
                raise MountMismatch(
                    f"{want.path}: not reachable inside the sandbox ({exc.strerror})"
                ) from None
            try:
                st = os.fstat(fd)
                readonly = bool(os.fstatvfs(fd).f_flag & os.ST_RDONLY)
            finally:
                os.close(fd)
            if (st.st_dev, st.st_ino) != (want.dev, want.ino):
                raise MountMismatch(f"{want.path}: another directory was mounted there")
            if readonly != want.readonly:
                raise MountMismatch(f"{want.path}: mounted {'read-only' if readonly else 'writable'}")
    finally:
        os.close(root_fd)
    host = mountinfo("self")
    host_keys = Counter(host)
    host_devs = {dev for _, dev, _ in host}
    host_set = set(host)
    tty_devs = {dev for point, dev, _ in host if point == "/dev/pts"}
    ours = Counter(w.path for w in expected) + extra_points
    for line in mountinfo(pid):
        point, dev, root = line
        if host_keys[line] > 0:
            host_keys[line] -= 1  # the host's own mount, brought along by the read-only root
        elif ours[point] > 0:
            ours[point] -= 1  # a bind asked for, checked above
        elif dev not in host_devs:
            continue  # a filesystem bwrap made (tmpfs, proc, devpts, mqueue)
        elif point.startswith("/dev/") and root == point[4:]:
            continue  # bwrap's device nodes, bound from the host's /dev
        elif point == "/dev/console" and dev in tty_devs:
            continue  # the session's terminal, bound by bwrap as the console
        elif line in host_set and any(point.startswith(w.path.rstrip("/") + "/") for w in expected):
            continue  # a host mount inside a bound directory, brought along by the bind
        else:
            raise MountMismatch(f"{point}: an unexpected mount in the sandbox")


def _kill(*pids: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def confirm(
    bwrap_pid: int,
    info_fd: int,
    block_fd: int,
    expected: list[Expected],
    extra_points: Counter[str],
    timeout_s: float = SETUP_TIMEOUT_S,
    pinned: list[tuple[str, str]] | None = None,
) -> bool:
    """Check a started sandbox and let it run; False when bwrap exited during setup
    (its own error is on its stderr). On a mismatch, bwrap is killed before the command
    could start and :class:`MountMismatch` is raised."""
    deadline = time.monotonic() + timeout_s
    child = _read_pid(info_fd, deadline)
    if child is None:
        return False
    done = _setup_done(child, deadline)
    if done is None:
        _kill(bwrap_pid, child)
        raise SetupTimedOut(f"the sandbox did not finish its setup in {timeout_s:.0f} s")
    if not done:
        # bwrap's setup failed (its error is on its stderr). A zombie child still has its
        # /proc entry: asking whether that exists called this failure a timeout.
        return False
    try:
        check(child, expected, extra_points, pinned)
    except MountMismatch:
        _kill(bwrap_pid, child)
        raise
    except OSError as exc:
        _kill(bwrap_pid, child)
        if exc.errno == errno.ENOENT:
            return False
        raise MountMismatch(f"the sandbox's mounts cannot be checked ({exc.strerror})") from None
    os.write(block_fd, b"\x01")
    return True
