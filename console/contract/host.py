"""The few questions canonicalization must ask the filesystem, behind one interface.

Validation and fingerprinting are pure functions of an operation plus these answers, so
tests and the fingerprint test vectors can use a fixed, fake host while the daemon uses
:class:`OSHost`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from typing import Protocol

DEFAULT_TRUSTED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class Host(Protocol):
    def realpath(self, path: str) -> str: ...
    def is_dir(self, path: str) -> bool: ...
    def is_executable_file(self, path: str) -> bool: ...
    def which(self, name: str) -> str | None: ...
    def file_sha256(self, path: str) -> str | None: ...


class OSHost:
    """The real filesystem, with executables looked up on a trusted PATH.

    The trusted PATH is the console's own (never the agent's environment), so an agent
    cannot make ``git`` mean a script it dropped somewhere.
    """

    # A lookup is reused for this long (seconds) if the file is still an executable:
    # PATH directories are root-owned and change rarely, and a scan costs a stat per entry.
    WHICH_TTL = 2.0

    def __init__(self, trusted_path: str = DEFAULT_TRUSTED_PATH) -> None:
        self.trusted_path = trusted_path
        self._which: dict[str, tuple[float, str]] = {}

    def realpath(self, path: str) -> str:
        # The kernel resolves an O_PATH descriptor in two syscalls where
        # os.path.realpath walks every component; fall back for paths that do not exist.
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return os.path.realpath(path)
        try:
            resolved = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return os.path.realpath(path)
        finally:
            os.close(fd)
        return resolved if resolved.startswith("/") else os.path.realpath(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_executable_file(self, path: str) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111)

    def which(self, name: str) -> str | None:
        now = time.monotonic()
        hit = self._which.get(name)
        if hit is not None and now - hit[0] < self.WHICH_TTL and self.is_executable_file(hit[1]):
            return hit[1]
        found = self._scan(name)
        if found is not None:
            if len(self._which) > 4096:
                self._which.clear()
            self._which[name] = (now, found)
        return found

    def _scan(self, name: str) -> str | None:
        for directory in self.trusted_path.split(os.pathsep):
            if not directory or not os.path.isabs(directory):
                continue
            candidate = os.path.join(directory, name)
            if self.is_executable_file(candidate):
                return candidate
        return None

    def file_sha256(self, path: str) -> str | None:
        """Digest of a regular file's bytes; None when absent or not a regular file."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            digest = hashlib.sha256()
            while chunk := os.read(fd, 1 << 20):
                digest.update(chunk)
            return digest.hexdigest()
        finally:
            os.close(fd)
