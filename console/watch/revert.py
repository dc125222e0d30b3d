"""Putting a protected file back as its baseline was (a tripwire item's "revert").

The file was changed by someone the operator does not trust, who may still have
processes (a session kept paused) or may have prepared the way: a parent directory
swapped for a symlink would make a plain ``open`` write the baseline's bytes wherever it
points. So every directory on the way is opened below the workspace root without
following a symlink, and the file is replaced by a rename from a fresh temporary in the
same directory (never written through: a symlink or hardlink in its place is replaced,
not followed). The workspace root may itself be a symlink (the operator chose it). A file that did not exist is removed. A directory in the file's place is
left alone and said so: the operator decides about a tree.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat

from console.watch.baseline import Previous

REVERT_PREFIX = ".agent-console-revert-"  # the temporary's name: the console's own, never reported


class RevertError(RuntimeError):
    """The file could not be put back; the message says why (and what to do)."""


def _open_dir(root: str, parts: list[str]) -> int:
    """The directory ``parts`` below ``root`` (the root itself may be a symlink: the
    operator named it; nothing below it may)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(root, flags & ~os.O_NOFOLLOW)
    except OSError as exc:
        raise RevertError(f"the workspace cannot be opened: {exc.strerror}") from None
    for part in parts:
        try:
            nfd = os.open(part, flags, dir_fd=fd)
        except OSError as exc:
            os.close(fd)
            why = "is a symlink or not a directory" if exc.errno in (20, 40) else (exc.strerror or "")
            raise RevertError(f"{part}/ on the way {why} now; put the file back by hand") from None
        os.close(fd)
        fd = nfd
    return fd


def put_back(root: str, rel: str, previous: Previous) -> str:
    """Make ``root``/``rel`` what ``previous`` says; returns what was done ("removed",
    "restored", "already so"). Raises :class:`RevertError`."""
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts):
        raise RevertError(f"not a path inside the workspace: {rel!r}")
    *folders, name = parts
    if not previous.exists:
        try:
            dfd = _open_dir(root, folders)
        except RevertError:
            if not os.path.lexists(os.path.join(root, rel)):
                return "already so"
            raise
        try:
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                return "already so"
            if stat.S_ISDIR(st.st_mode):
                raise RevertError(f"{rel} is a directory now; remove it by hand if it should go")
            os.unlink(name, dir_fd=dfd)
            return "removed"
        finally:
            os.close(dfd)
    dfd = _open_dir(root, folders)
    try:
        with contextlib.suppress(FileNotFoundError):
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                raise RevertError(f"{rel} is a directory now; remove it by hand, then revert again")
        tmp = f"{REVERT_PREFIX}{secrets.token_hex(6)}"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd
        )
        try:
            try:
                view = memoryview(previous.data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, stat.S_IMODE(previous.mode))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise RevertError(f"could not write {rel}: {exc.strerror}") from None
        return "restored"
    finally:
        os.close(dfd)
