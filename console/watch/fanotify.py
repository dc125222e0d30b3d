"""The few fanotify calls the fast lane makes, and the events it reads.

Two kinds of group (fanotify(7)):

- **FID groups** (``FAN_REPORT_DFID_NAME``): an event names the directory (by its file
  handle) and the entry's name, with the pid of the process that acted, and covers what
  a descriptor-based group cannot see: creation, rename (``FAN_MOVED_TO``), link (an
  ``O_TMPFILE`` made visible by ``linkat`` is a ``FAN_CREATE``) and deletion, as well as
  writes and attribute changes. No descriptor is opened per event.
- **a permission group** (``FAN_CLASS_CONTENT``, ``FAN_OPEN_PERM``): the kernel holds the
  opening process until the daemon answers, so the daemon reads who it is while it is
  certainly alive (gate.py). It only ever answers "allow".

All need CAP_SYS_ADMIN for what is used here (an unprivileged group may watch names,
but the kernel hides other processes' pids from it and refuses permission events);
without it :func:`available` is false and the lane runs on inotify alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import struct
from dataclasses import dataclass

FAN_CLOEXEC = 0x1
FAN_NONBLOCK = 0x2
FAN_CLASS_CONTENT = 0x4
FAN_UNLIMITED_QUEUE = 0x10
FAN_REPORT_DFID_NAME = 0x00000C00
FAN_MARK_ADD = 0x1
FAN_MARK_REMOVE = 0x2
FAN_MARK_DONT_FOLLOW = 0x4

FAN_ACCESS = 0x1
FAN_MODIFY = 0x2
FAN_ATTRIB = 0x4
FAN_CLOSE_WRITE = 0x8
FAN_MOVED_FROM = 0x40
FAN_MOVED_TO = 0x80
FAN_CREATE = 0x100
FAN_DELETE = 0x200
FAN_Q_OVERFLOW = 0x4000
FAN_OPEN_PERM = 0x10000
FAN_ONDIR = 0x40000000
FAN_EVENT_ON_CHILD = 0x08000000
FAN_ALLOW = 0x1

# The hot directories: every change to every entry, writes included.
NAMES_MASK = (
    FAN_CREATE
    | FAN_MOVED_TO
    | FAN_MOVED_FROM
    | FAN_DELETE
    | FAN_MODIFY
    | FAN_ATTRIB
    | FAN_ONDIR
    | FAN_EVENT_ON_CHILD
)
# The other directories: names only (a write to each ordinary file would cost every
# writer an event); the protected files among them get a mark of their own for writes.
DEEP_MASK = NAMES_MASK & ~FAN_MODIFY
FILE_MASK = FAN_MODIFY
ADDED_MASK = FAN_CREATE | FAN_MOVED_TO
GONE_MASK = FAN_DELETE | FAN_MOVED_FROM

_AT_FDCWD = -100
_AT_SYMLINK_FOLLOW = 0x400
_META = struct.Struct("=IBBHQii")  # event_len, vers, reserved, metadata_len, mask, fd, pid
_INFO = struct.Struct("=BBH")  # info_type, pad, len
_HANDLE = struct.Struct("=Ii")  # handle_bytes, handle_type
_RESPONSE = struct.Struct("=iI")
_INFO_DFID_NAME = 2
_INFO_DFID = 3
_FSID = 8
MAX_HANDLE = 128


class _FileHandle(ctypes.Structure):
    _fields_ = [
        ("handle_bytes", ctypes.c_uint),
        ("handle_type", ctypes.c_int),
        ("f_handle", ctypes.c_ubyte * MAX_HANDLE),
    ]


def _load() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
        libc.fanotify_mark.argtypes = [
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint64,
            ctypes.c_int,
            ctypes.c_char_p,
        ]
        libc.name_to_handle_at.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.POINTER(_FileHandle),
            ctypes.POINTER(ctypes.c_int),
            ctypes.c_int,
        ]
    except (OSError, AttributeError):
        return None
    return libc


_libc = _load()


def _sys_admin() -> bool:
    """CAP_SYS_ADMIN in effect: without it the kernel hides other processes' pids from a
    group (and refuses permission events), which leaves the lane nothing to name."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"CapEff:"):
                    return bool(int(line.split()[1], 16) & (1 << 21))
    except (OSError, ValueError, IndexError):
        return False
    return False


def available() -> bool:
    return _libc is not None and _sys_admin()


def init(flags: int) -> int:
    """A new group (``O_RDONLY`` descriptors for permission events); -1 when refused."""
    if _libc is None:
        return -1
    fd: int = _libc.fanotify_init(
        FAN_CLOEXEC | FAN_NONBLOCK | flags, os.O_RDONLY | os.O_CLOEXEC | os.O_LARGEFILE
    )
    return fd


def mark(group: int, path: str, mask: int, *, remove: bool = False) -> bool:
    """An inode mark on ``path`` (followed if it is a symlink); True when the kernel took it.

    A removal does not follow a final symlink: marks are put on real paths, so a link
    there now is a directory swapped for one since, and following it would unmark the
    link's target, another watched directory."""
    if _libc is None or group < 0:
        return False
    flags = FAN_MARK_REMOVE | FAN_MARK_DONT_FOLLOW if remove else FAN_MARK_ADD
    return bool(_libc.fanotify_mark(group, flags, mask, _AT_FDCWD, os.fsencode(path)) == 0)


def handle_of(path: str) -> bytes | None:
    """The file handle of ``path`` (followed), as events name it: type and bytes."""
    if _libc is None:
        return None
    fh = _FileHandle()
    fh.handle_bytes = MAX_HANDLE
    mount = ctypes.c_int()
    if _libc.name_to_handle_at(
        _AT_FDCWD, os.fsencode(path), ctypes.byref(fh), ctypes.byref(mount), _AT_SYMLINK_FOLLOW
    ):
        return None
    return struct.pack("=i", fh.handle_type) + bytes(fh.f_handle[: fh.handle_bytes])


@dataclass(frozen=True, slots=True)
class NameEvent:
    mask: int
    pid: int
    directory: bytes  # the directory's handle (handle_of's form)
    name: str  # "." for the directory itself


def read_names(data: bytes) -> list[NameEvent]:
    """The events of one ``read`` from an FID group (names that are not UTF-8 are given
    with surrogate escapes; an overflow is an event with an empty directory)."""
    out: list[NameEvent] = []
    offset = 0
    while offset + _META.size <= len(data):
        length, _vers, _r, meta, mask, _fd, pid = _META.unpack_from(data, offset)
        if length < _META.size:
            break
        end = offset + length
        if mask & FAN_Q_OVERFLOW:
            out.append(NameEvent(mask, pid, b"", ""))
        at = offset + meta
        while at + _INFO.size <= end:
            kind, _pad, size = _INFO.unpack_from(data, at)
            if size < _INFO.size:
                break
            if kind in (_INFO_DFID_NAME, _INFO_DFID):
                hstart = at + _INFO.size + _FSID
                nbytes, htype = _HANDLE.unpack_from(data, hstart)
                raw = data[hstart + _HANDLE.size : hstart + _HANDLE.size + nbytes]
                name = "."
                if kind == _INFO_DFID_NAME:
                    tail = data[hstart + _HANDLE.size + nbytes : at + size]
                    name = tail.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
                out.append(NameEvent(mask, pid, struct.pack("=i", htype) + raw, name))
                break
            at += size
        offset = end
    return out


@dataclass(frozen=True, slots=True)
class OpenEvent:
    fd: int
    pid: int


def read_opens(data: bytes) -> list[OpenEvent]:
    """The permission events of one ``read`` (each holds a descriptor to answer and close)."""
    out: list[OpenEvent] = []
    offset = 0
    while offset + _META.size <= len(data):
        length, _vers, _r, _meta, _mask, fd, pid = _META.unpack_from(data, offset)
        if length < _META.size:
            break
        if fd >= 0:
            out.append(OpenEvent(fd, pid))
        offset += length
    return out


def allow(group: int, event: OpenEvent) -> None:
    """Let the held open go on, and close the event's descriptor."""
    try:
        os.write(group, _RESPONSE.pack(event.fd, FAN_ALLOW))
    finally:
        with contextlib.suppress(OSError):
            os.close(event.fd)
