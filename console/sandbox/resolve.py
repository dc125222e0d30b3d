"""Opening the paths the sandbox mounts: once, component by component, never through a symlink.

A path checked when a request arrives and mounted later by name can be swapped for a
symlink in between, and the mount lands on the symlink's target. So every source the
sandbox binds is opened here as an ``O_PATH`` descriptor, and bubblewrap is handed the
descriptor (``--bind-fd``), not the name: what was opened is what is mounted.

With ``openat2`` (Linux 5.6+) a whole path is resolved in one call with
``RESOLVE_NO_SYMLINKS`` (a symlink anywhere in it fails with ELOOP) and, below an open
directory, ``RESOLVE_BENEATH`` (nothing resolves outside it). Without it the same is done
by hand: one ``O_PATH|O_NOFOLLOW`` open per component, each checked not to be a symlink.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from dataclasses import dataclass

SYS_OPENAT2 = 437  # x86_64, aarch64 and the other architectures with the unified table
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08

_FLAGS = os.O_PATH | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class ResolveError(OSError):
    """``path`` cannot be opened as it was checked; ``why`` says how in a few words."""

    def __init__(self, path: str, why: str, code: int = 0) -> None:
        super().__init__(code, why)
        self.path = path
        self.why = why


@dataclass(frozen=True, slots=True)
class Opened:
    """An ``O_PATH`` descriptor and what it refers to (taken from the descriptor)."""

    fd: int
    st: os.stat_result

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)


_libc: ctypes.CDLL | None = None
_have_openat2: bool | None = None


def _openat2(dirfd: int, path: str) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
    if not path.startswith("/"):
        resolve |= RESOLVE_BENEATH
    how = _OpenHow(_FLAGS, 0, resolve)
    for _ in range(8):  # EAGAIN: a concurrent rename or mount; the kernel asks to retry
        fd = int(
            _libc.syscall(
                ctypes.c_long(SYS_OPENAT2),
                ctypes.c_int(dirfd),
                ctypes.c_char_p(os.fsencode(path)),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        )
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code != errno.EAGAIN:
            raise OSError(code, os.strerror(code))
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))


def _walk(dirfd: int, path: str) -> int:
    """The portable way: one ``O_PATH|O_NOFOLLOW`` open per component."""
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise OSError(errno.EXDEV, "path is not canonical")
    fd = os.open("/", _FLAGS | os.O_DIRECTORY) if path.startswith("/") else os.dup(dirfd)
    try:
        for i, part in enumerate(parts):
            nfd = os.open(part, _FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nfd
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
            if i < len(parts) - 1 and not stat.S_ISDIR(mode):
                raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        return fd
    except BaseException:
        os.close(fd)
        raise


def have_openat2() -> bool:
    """Whether the kernel has ``openat2`` (asked once)."""
    global _have_openat2
    if _have_openat2 is None:
        try:
            os.close(_openat2(-100, "/"))  # AT_FDCWD
            _have_openat2 = True
        except OSError:
            _have_openat2 = False
    return _have_openat2


def open_path(path: str, *, beneath: int | None = None, relative: str = "") -> Opened:
    """Open ``path`` (absolute), or ``relative`` below the directory descriptor ``beneath``.

    Raises :class:`ResolveError` saying "is a symlink (or passes through one)", "does not
    exist" or "is not a directory on the way" instead of following anything.
    """
    if beneath is None:
        dirfd, target = -100, path
    else:
        dirfd, target = beneath, relative or "."
    if "\x00" in target:
        raise ResolveError(path, "contains a NUL byte")
    try:
        if target == ".":
            fd = os.dup(dirfd)
        elif have_openat2():
            fd = _openat2(dirfd, target)
        else:
            fd = _walk(dirfd, target)
    except OSError as exc:
        raise ResolveError(path, _why(exc.errno), exc.errno or 0) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise ResolveError(path, _why(exc.errno), exc.errno or 0) from None
    return Opened(fd, st)


def _why(code: int | None) -> str:
    if code == errno.ELOOP:
        return "is a symlink (or passes through one)"
    if code == errno.ENOENT:
        return "does not exist"
    if code == errno.ENOTDIR:
        return "is not a directory on the way"
    if code == errno.EXDEV:
        return "leads outside the directory it must stay in"
    if code in (errno.EACCES, errno.EPERM):
        return "cannot be opened (permission denied)"
    if code == errno.EMFILE or code == errno.ENFILE:
        return "cannot be opened (too many open files)"
    return f"cannot be opened ({os.strerror(code or 0)})"
