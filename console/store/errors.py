"""The two ways a store call fails: the store cannot write, or the call conflicts.

The daemon fails closed on :class:`StoreUnavailable` (it denies with
``store_unavailable``); a :class:`StoreConflict` is a caller bug or a lost race, such
as a second decision for the same request.
"""

from __future__ import annotations

import errno
import sqlite3


class StoreUnavailable(Exception):
    """The history could not be read or made durable; nothing of the call was committed.

    ``reason`` is a stable code: ``disk_full``, ``read_only``, ``io_error``, ``locked``,
    ``corrupt``, ``cannot_open``, ``in_use``, ``newer_schema``, ``closed`` or ``internal``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class StoreConflict(ValueError):
    """The call contradicts what is stored (a duplicate grant id, a second decision)."""


_SQLITE_REASONS = {
    "SQLITE_FULL": "disk_full",
    "SQLITE_READONLY": "read_only",
    "SQLITE_IOERR": "io_error",
    "SQLITE_BUSY": "locked",
    "SQLITE_LOCKED": "locked",
    "SQLITE_CORRUPT": "corrupt",
    "SQLITE_NOTADB": "corrupt",
    "SQLITE_CANTOPEN": "cannot_open",
    "SQLITE_PERM": "read_only",
    "SQLITE_AUTH": "read_only",
}

_ERRNO_REASONS = {
    errno.ENOSPC: "disk_full",
    errno.EDQUOT: "disk_full",
    errno.EROFS: "read_only",
    errno.EACCES: "read_only",
    errno.EPERM: "read_only",
}

_HINTS = {
    "disk_full": "free space on the disk that holds the state directory",
    "read_only": "the state directory or database file is not writable",
    "io_error": "the disk reported an I/O error",
    "locked": "another program holds the database lock",
    "corrupt": "the file is damaged or not an agent-console database",
    "cannot_open": "the database file cannot be opened",
}


def unavailable(exc: BaseException, doing: str) -> StoreUnavailable:
    """Translate a sqlite3 or OS error into a StoreUnavailable with a plain message."""
    if isinstance(exc, StoreUnavailable):
        return exc
    reason = "internal"
    if isinstance(exc, sqlite3.Error):
        name = getattr(exc, "sqlite_errorname", "") or ""
        for prefix, code in _SQLITE_REASONS.items():
            if name.startswith(prefix):
                reason = code
                break
        else:
            text = str(exc).lower()
            if "disk is full" in text:
                reason = "disk_full"
            elif "readonly" in text or "read-only" in text:
                reason = "read_only"
            elif "not a database" in text or "malformed" in text:
                reason = "corrupt"
            elif "i/o" in text:
                reason = "io_error"
    elif isinstance(exc, OSError):
        reason = _ERRNO_REASONS.get(exc.errno or 0, "io_error")
    hint = _HINTS.get(reason, "")
    message = f"history store unavailable while {doing}: {exc}"
    if hint:
        message += f" ({hint})"
    return StoreUnavailable(reason, message)
