"""Baselines: the content of small protected files, to show a change as a diff and to
put the file back as it was.

A baseline is taken when a root is first watched (or when a file becomes protected);
a protected file created later gets an empty baseline and is remembered as *absent*
(putting it back means removing it), so its diff shows all of it. The baseline then
stays put: the diff is cumulative since the last state the operator accepted
(``accept``), so an agent cannot hide a change by writing twice. Regular files up to
``MAX_BASELINE_BYTES`` are kept with their mode, binary ones too (for a revert); only
those without NUL bytes count as text and get a diff. They are opened without
following symlinks and without blocking (a FIFO named ``.env`` must not hang the
watcher). The total kept per root is bounded.
"""

from __future__ import annotations

import difflib
import os
import stat
import threading
from dataclasses import dataclass

MAX_BASELINE_BYTES = 64 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Previous:
    """A protected file as it was: absent (``exists`` False), or its bytes and mode."""

    exists: bool
    data: bytes = b""
    mode: int = 0o644


def read_small_text(path: str, limit: int = MAX_BASELINE_BYTES) -> bytes | None:
    """The content of ``path`` if it is a regular text file of at most ``limit`` bytes."""
    found = read_small(path, limit)
    if found is None or b"\x00" in found[0]:
        return None
    return found[0]


def read_small(path: str, limit: int = MAX_BASELINE_BYTES) -> tuple[bytes, int] | None:
    """The content and permission bits of ``path`` if it is a regular file of at most
    ``limit`` bytes (binary or not)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, limit + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                return None
        data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data, stat.S_IMODE(st.st_mode)


class Baselines:
    """Baselines of one root, keyed by relative path; safe to use from several threads."""

    def __init__(self, root: str, total_limit: int = MAX_TOTAL_BYTES) -> None:
        self.root = root
        self.total_limit = total_limit
        self._lock = threading.Lock()
        self._data: dict[str, bytes] = {}
        self._modes: dict[str, int] = {}
        self._absent: set[str] = set()  # baselines of files that did not exist
        self._total = 0
        self.truncated = False

    def _abs(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    def _put_locked(self, rel: str, data: bytes, mode: int = 0o644, *, absent: bool = False) -> None:
        old = self._data.pop(rel, None)
        self._absent.discard(rel)
        if old is not None:
            self._total -= len(old)
        if self._total + len(data) > self.total_limit:
            self.truncated = True
            return
        self._data[rel] = data
        self._modes[rel] = mode
        if absent:
            self._absent.add(rel)
        self._total += len(data)

    def take(self, rel: str) -> None:
        """Keep the current content of ``rel`` as its baseline, when it is a small file
        and has none yet (only ``accept`` moves an existing baseline)."""
        if self.has(rel):
            return
        found = read_small(self._abs(rel))
        if found is None:
            return
        with self._lock:
            if rel not in self._data:
                self._put_locked(rel, *found)

    def take_empty(self, rel: str) -> None:
        """A file created after watching began: its baseline is empty and absent (unless
        it has one)."""
        with self._lock:
            if rel not in self._data:
                self._put_locked(rel, b"", absent=True)

    def previous(self, rel: str) -> Previous | None:
        """What ``rel`` was at its baseline; None when nothing was kept (too large)."""
        with self._lock:
            data = self._data.get(rel)
            if data is None:
                return None
            if rel in self._absent:
                return Previous(False)
            return Previous(True, data, self._modes.get(rel, 0o644))

    def has(self, rel: str) -> bool:
        with self._lock:
            return rel in self._data

    def get(self, rel: str) -> bytes | None:
        with self._lock:
            return self._data.get(rel)

    def accept(self, rel: str) -> bool:
        """Make the current content the new baseline; False if it is not small text
        (a deleted file's baseline becomes empty)."""
        path = self._abs(rel)
        if not os.path.lexists(path):
            with self._lock:
                self._put_locked(rel, b"", absent=True)
            return True
        found = read_small(path)
        with self._lock:
            if found is None:
                old = self._data.pop(rel, None)
                self._absent.discard(rel)
                if old is not None:
                    self._total -= len(old)
                return False
            self._put_locked(rel, *found)
        return True

    def forget(self, rel: str) -> None:
        with self._lock:
            self._absent.discard(rel)
            old = self._data.pop(rel, None)
            if old is not None:
                self._total -= len(old)

    def diff(self, rel: str) -> str | None:
        """Unified diff from the baseline to the current content.

        None when there is no baseline or the current file is not small text; ``""``
        when nothing changed. The text is untrusted: show it escaped, never as markup.
        """
        before = self.get(rel)
        if before is None or b"\x00" in before:
            return None
        path = self._abs(rel)
        if os.path.lexists(path):
            after = read_small_text(path)
            if after is None:
                return None
        else:
            after = b""
        if after == before:
            return ""
        a = before.decode("utf-8", "replace").splitlines(keepends=True)
        b = after.decode("utf-8", "replace").splitlines(keepends=True)
        label = os.fsencode(rel).decode("utf-8", "backslashreplace")
        lines = difflib.unified_diff(a, b, fromfile=f"a/{label}", tofile=f"b/{label}")
        return "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
        )
