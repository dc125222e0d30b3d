"""Bytes in a sealed memfd: what bwrap reads from a descriptor (its arguments, a seccomp
filter, a file it copies in) cannot be changed after it was written, not even by the
daemon that holds it."""

from __future__ import annotations

import fcntl
import os

SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def sealed(data: bytes, name: str = "agent-console") -> int:
    """A close-on-exec memfd holding ``data``, sealed, read from its start; raises OSError."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
