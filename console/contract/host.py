"""The few questions canonicalization must ask the filesystem, behind one interface.

Validation and fingerprinting are pure functions of an operation plus these answers, so
tests and the fingerprint test vectors can use a fixed, fake host while the daemon uses
:class:`OSHost`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pwd
import stat
import time
from collections.abc import Iterable
from typing import NamedTuple, Protocol

from console.contract.workspace import WorkspaceLimits

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
    def read_small_text(self, path: str, limit: int) -> str | None: ...
    def listdir(self, path: str) -> list[str]: ...


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
        # path -> (its missing answer, the anchor directory, the anchor's identity then)
        self._absent: dict[str, tuple[Resolved, str, tuple[int, int, int]]] = {}
        self._anchor_seen: tuple[str, int, tuple[int, int, int] | None] | None = None

    def resolve(self, path: str) -> Resolved:
        absent = self._absent.get(path)
        if absent is not None:
            still = self._still_absent(path, absent)
            if still is not None:
                return still
        hit = self._resolved.get(path)  # _existing's fresh hit, asked for on every request
        if hit is not None and time.monotonic() - hit[0] < self.RESOLVE_TTL:
            return hit[1]
        found = self._existing(path)
        return found if found is not None else self._missing(path)

    # A path found missing is remembered with its anchor: the nearest directory above it
    # that exists, with that directory's device, inode and mtime. Nothing can appear at
    # the path (or on the way to it) without an entry being added to the anchor, which
    # moves its mtime; so while the anchor is the same directory with the same mtime, the
    # path is still missing — one stat instead of an open, an lstat and a walk. Timestamps
    # are coarse (a clock tick), so an anchor changed in the last SETTLE_NS is not trusted.
    SETTLE_NS = 50_000_000
    MAX_ABSENT = 4096
    # One stat of an anchor answers for the candidates one parse asks about together
    # (``python -m name``: name.py, name/__init__.py, name/__main__.py).
    ANCHOR_REUSE_NS = 200_000

    def _still_absent(self, path: str, absent: tuple[Resolved, str, tuple[int, int, int]]) -> Resolved | None:
        answer, anchor, ident = absent
        now = time.monotonic_ns()
        seen = self._anchor_seen
        if seen is not None and seen[0] == anchor and now - seen[1] < self.ANCHOR_REUSE_NS:
            current = seen[2]  # the same parse asking about the anchor's next candidate
        else:
            try:
                st = os.stat(anchor)
            except OSError:
                current = None
            else:
                current = (st.st_dev, st.st_ino, st.st_mtime_ns)
            self._anchor_seen = (anchor, now, current)
        if current == ident:
            return answer
        del self._absent[path]
        return None

    def _remember_absent(self, path: str, answer: Resolved, anchor: str, st: os.stat_result) -> None:
        if time.time_ns() - st.st_mtime_ns < self.SETTLE_NS:
            return
        if len(self._absent) >= self.MAX_ABSENT:
            self._absent.clear()
        self._absent[path] = (answer, anchor, (st.st_dev, st.st_ino, st.st_mtime_ns))

    def _existing(self, path: str) -> Resolved | None:
        """What an existing path names, from the cache when it is fresh; None when it names
        nothing (not cached here: a missing path is remembered only with its anchor,
        :meth:`_still_absent`, so that something created a moment later is seen)."""
        now = time.monotonic()
        hit = self._resolved.get(path)
        if hit is not None and now - hit[0] < self.RESOLVE_TTL:
            return hit[1]
        found = self._opened(path)
        if found is not None:
            if len(self._resolved) > 4096:
                self._resolved.clear()
            self._resolved[path] = (now, found)
        return found

    def _missing(self, path: str) -> Resolved:
        """Where a path that names nothing would be: what ``os.path.realpath`` says.

        Up from the path to the nearest ancestor that exists: when that is a directory and
        the next name down has no entry at all (not even a dangling symlink), the answer is
        the ancestor's canonical path (cached like any existing one) joined with the rest,
        which is how realpath builds it, without its stat of every component: those made
        the candidate files of ``python -m name`` most of a request's parsing.
        ``tests/contract/test_host_resolve.py`` holds the two equal.
        """
        rest: list[str] = []
        here = path
        while True:
            parent, name = os.path.split(here)
            if not name or name in (".", "..") or not parent.startswith("/"):
                return Resolved(os.path.realpath(path), "missing")
            rest.append(name)
            above = self._existing(parent)
            if above is not None:
                break
            here = parent
        if above.kind == "dir":
            anchor: os.stat_result | None = None
            try:
                anchor = os.stat(above.path)  # before the lstat: a later entry moves its mtime
                os.lstat(here)
            except FileNotFoundError:
                answer = Resolved(os.path.join(above.path, *reversed(rest)), "missing")
                if anchor is not None:
                    self._remember_absent(path, answer, above.path, anchor)
                return answer
            except OSError:
                pass
        return Resolved(os.path.realpath(path), "missing")

    # How often a path whose file was replaced while it was being resolved is resolved
    # again (an editor's save, `mv new old`: the path names a file all along).
    REPLACED_RETRIES = 3

    @classmethod
    def _resolve(cls, path: str) -> Resolved:
        """Resolved afresh, no cache (a missing path as ``os.path.realpath`` names it)."""
        found = cls._opened(path)
        return Resolved(os.path.realpath(path), "missing") if found is None else found

    @classmethod
    def _opened(cls, path: str) -> Resolved | None:
        """What an existing path names; None when it names nothing (now)."""
        # The kernel resolves an O_PATH descriptor (open, fstat, readlink, close), where
        # os.path.realpath walks every component and a stat follows.
        for _ in range(cls.REPLACED_RETRIES + 1):
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                return None
            try:
                st = os.fstat(fd)
                resolved = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                return None
            finally:
                os.close(fd)
            # " (deleted)": the file opened was unlinked or renamed over since; the path
            # may name its replacement, which the next pass opens.
            if not resolved.endswith(" (deleted)"):
                break
        if not resolved.startswith("/") or resolved.endswith(" (deleted)"):
            return None
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

    def read_small_text(self, path: str, limit: int) -> str | None:
        """A regular file's text (UTF-8, undecodable bytes replaced) when it holds at most
        ``limit`` bytes; None when absent, not a regular file, unreadable or larger. For
        scanning what a script sources or a makefile includes (console/contract/content.py)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                return None
            data = b""
            while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):
                data += chunk
            return None if len(data) > limit else data.decode("utf-8", "replace")
        except OSError:
            return None
        finally:
            os.close(fd)

    MAX_LISTED = 4096

    def listdir(self, path: str) -> list[str]:
        """The names in a directory, sorted, at most :data:`MAX_LISTED` (for ``go generate``'s
        files); empty when it is not a readable directory."""
        try:
            with os.scandir(path) as entries:
                names = []
                for entry in entries:
                    names.append(entry.name)
                    if len(names) >= self.MAX_LISTED:
                        break
        except OSError:
            return []
        return sorted(names)


def host_workspace_limits(private: Iterable[str] = ()) -> WorkspaceLimits:
    """The refusals for this host: every passwd entry's home and ``$HOME`` (each also in
    its canonical form), plus the console's private directories given by the caller."""
    homes: set[str] = set()
    with contextlib.suppress(OSError):
        homes.update(entry.pw_dir for entry in pwd.getpwall())
    if os.environ.get("HOME"):
        homes.add(os.environ["HOME"])
    homes.update(os.path.realpath(h) for h in list(homes) if h.startswith("/"))
    private = [str(p) for p in private]
    private += [os.path.realpath(p) for p in private]
    return WorkspaceLimits.of(homes, private)
