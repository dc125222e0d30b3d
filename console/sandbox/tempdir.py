"""Private temp roots: one owner-only scratch directory per run, removed only if still ours.

A command's TMPDIR and caches live in a fresh directory so runs cannot see each other's
files and nothing is left behind. Removal is where such directories usually go wrong:
between creation and clean-up someone may replace the directory with a symlink to
something precious. So the root remembers the device and inode it created, clean-up
refuses to touch a path that no longer is that directory, and the removal itself walks
by file descriptors and never follows a symlink (links the command made inside are
unlinked, not followed).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable

PREFIX = "agent-console-run-"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PATH_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class TempRootError(RuntimeError):
    """The temp root could not be created safely; the message says why."""


class PrivateTempRoot:
    """An owner-only scratch directory below ``base``; see the module docstring."""

    __slots__ = ("_closed", "_identity", "base", "name", "path")

    def __init__(self, base: str) -> None:
        self.base = _checked_base(base)
        self._closed: bool | None = None
        base_fd = os.open(self.base, _DIR_FLAGS)
        try:
            for _ in range(8):
                name = PREFIX + secrets.token_hex(8)
                try:
                    os.mkdir(name, 0o700, dir_fd=base_fd)
                except FileExistsError:
                    continue
                break
            else:
                raise TempRootError(f"could not create a unique directory in {self.base}")
            fd = os.open(name, _DIR_FLAGS, dir_fd=base_fd)
            try:
                st = os.fstat(fd)
                if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
                    raise TempRootError(f"{self.base}: a new directory is not private to this user")
                os.mkdir("tmp", 0o700, dir_fd=fd)
            finally:
                os.close(fd)
        finally:
            os.close(base_fd)
        self.name = name
        self.path = os.path.join(self.base, name)
        self._identity = (st.st_dev, st.st_ino)

    @property
    def tmp(self) -> str:
        """The one subdirectory made up front, for TMPDIR (see environment.py)."""
        return os.path.join(self.path, "tmp")

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def close(self) -> bool:
        """Remove the root if it is still the directory created; idempotent.

        Returns True when removed (or already gone), False when the path was replaced
        (by a symlink or another directory) or could not be emptied, and was therefore
        left alone. Later calls return the first call's answer.
        """
        if self._closed is None:
            self._closed = self._remove()
        return self._closed

    def _remove(self) -> bool:
        try:
            base_fd = os.open(self.base, _DIR_FLAGS)
        except OSError:
            return False
        try:
            return _remove_at(base_fd, self.name, lambda st: (st.st_dev, st.st_ino) == self._identity)
        finally:
            os.close(base_fd)

    def __enter__(self) -> PrivateTempRoot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PrivateTempRoot({self.path!r}, closed={self.closed})"


def _checked_base(base: str) -> str:
    if not base or not os.path.isabs(base):
        raise TempRootError("the temp base must be an absolute path")
    real = os.path.realpath(base)
    try:
        st = os.stat(real)
    except OSError as exc:
        raise TempRootError(f"temp base {real}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise TempRootError(f"temp base {real} is not a directory")
    shared = stat.S_IMODE(st.st_mode) & 0o022
    if shared and not st.st_mode & stat.S_ISVTX:
        raise TempRootError(f"temp base {real} is writable by others and not sticky; use a private directory")
    if st.st_uid not in (0, os.geteuid()):
        raise TempRootError(f"temp base {real} belongs to another user")
    return real


def _empty(dir_fd: int, device: int) -> None:
    """Remove everything below ``dir_fd`` without following symlinks or leaving the filesystem."""
    with os.scandir(dir_fd) as entries:
        names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
    for name, is_dir in names:
        if is_dir:
            # Another device is a mount point: refused, and the parent then stays too.
            _remove_at(dir_fd, name, lambda st: st.st_dev == device)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dir_fd)


def sweep(base: str) -> int:
    """Remove temp roots a previous daemon left in ``base`` (it was killed mid-run).

    Call once at daemon start, before any run: every ``agent-console-run-*`` directory
    there belongs to a dead run. Only real directories owned by this user are removed,
    with the same descriptor-based walk as :meth:`PrivateTempRoot.close`. Returns how
    many were removed.
    """
    base_fd = os.open(_checked_base(base), _DIR_FLAGS)
    try:
        with os.scandir(base_fd) as entries:
            names = [e.name for e in entries if e.name.startswith(PREFIX) and e.is_dir(follow_symlinks=False)]
        uid = os.geteuid()
        return sum(_remove_at(base_fd, name, lambda st: st.st_uid == uid) for name in names)
    finally:
        os.close(base_fd)


def _remove_at(base_fd: int, name: str, accept: Callable[[os.stat_result], bool]) -> bool:
    """Remove directory ``name`` below ``base_fd`` if ``accept`` approves what is there now.

    True when removed or already gone; False when refused (a symlink, a file, another
    directory) or when something inside could not be removed.
    """
    try:
        path_fd = os.open(name, _PATH_FLAGS, dir_fd=base_fd)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # ELOOP/ENOTDIR: a symlink or a file stands there now
    try:
        st = os.fstat(path_fd)
        if not accept(st):
            return False
        # The command may have made the directory unreadable; the O_PATH descriptor is that
        # very directory (no symlink), so chmod through it and reopen it.
        own = f"/proc/self/fd/{path_fd}"
        os.chmod(own, 0o700)
        fd = os.open(own, _DIR_FLAGS & ~os.O_NOFOLLOW)
        try:
            _empty(fd, st.st_dev)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=base_fd)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False
    finally:
        os.close(path_fd)
