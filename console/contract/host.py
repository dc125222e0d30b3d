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
from typing import NamedTuple, Protocol

DEFAULT_TRUSTED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class Resolved(NamedTuple):
    """A path made canonical, and what is there: dir, exec (an executable regular file),
    file, other, or missing (then ``path`` is only lexically resolved)."""

    path: str
    kind: str


class Host(Protocol):
    def resolve(self, path: str) -> Resolved: ...
    def which(self, name: str) -> str | None: ...
    def file_sha256(self, path: str) -> str | None: ...


class OSHost:
    """The real filesystem, with executables looked up on a trusted PATH.

    The trusted PATH is the console's own (never the agent's environment), so an agent
    cannot make ``git`` mean a script it dropped somewhere.
    """

    # A lookup is reused for this long (seconds): PATH directories are root-owned and
    # change rarely, a scan costs a stat per entry, and the caller resolves the result.
    WHICH_TTL = 2.0
    # Canonical forms are reused this long. System calls are the bulk of validating an
    # operation, and a decision binds the canonical path it saw: the sandbox runs exactly
    # that path, so a symlink swapped meanwhile cannot redirect an approval.
    RESOLVE_TTL = 1.0

    def __init__(self, trusted_path: str = DEFAULT_TRUSTED_PATH) -> None:
        self.trusted_path = trusted_path
        self._which: dict[str, tuple[float, str]] = {}
        self._resolved: dict[str, tuple[float, Resolved]] = {}

    def resolve(self, path: str) -> Resolved:
        now = time.monotonic()
        hit = self._resolved.get(path)
        if hit is not None and now - hit[0] < self.RESOLVE_TTL:
            return hit[1]
        found = self._resolve(path)
        if found.kind != "missing":  # something created a moment later must be seen
            if len(self._resolved) > 4096:
                self._resolved.clear()
            self._resolved[path] = (now, found)
        return found

    @staticmethod
    def _resolve(path: str) -> Resolved:
        # The kernel resolves an O_PATH descriptor (open, fstat, readlink, close), where
        # os.path.realpath walks every component and a stat follows.
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return Resolved(os.path.realpath(path), "missing")
        try:
            st = os.fstat(fd)
            resolved = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return Resolved(os.path.realpath(path), "missing")
        finally:
            os.close(fd)
        if not resolved.startswith("/") or resolved.endswith(" (deleted)"):
            return Resolved(os.path.realpath(path), "missing")
        if stat.S_ISDIR(st.st_mode):
            kind = "dir"
        elif stat.S_ISREG(st.st_mode):
            kind = "exec" if st.st_mode & 0o111 else "file"
        else:
            kind = "other"
        return Resolved(resolved, kind)

    @staticmethod
    def is_executable_file(path: str) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111)

    def which(self, name: str) -> str | None:
        now = time.monotonic()
        hit = self._which.get(name)
        if hit is not None and now - hit[0] < self.WHICH_TTL:
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
