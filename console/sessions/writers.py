"""Which session wrote a file: the evidence the kernel gives without fanotify.

The watcher learns that a protected file changed, not who changed it. Two kinds of
evidence name a session, both read from /proc for the session's processes (its cgroup's
members, else its leader and the descendants the usage sampler found):

- **open for write**: a process of the session holds the changed file open with
  ``O_WRONLY`` or ``O_RDWR`` (``/proc/PID/fd`` and ``fdinfo``);
- **write I/O in window**: the session's write counters (``/proc/PID/io``: ``wchar``
  and ``write_bytes``; a reaped child's are added to its parent's) grew between the last
  sample taken before the change and now. A session that wrote nothing in that window
  is never named, whatever its directory.

Samples are taken every ``interval`` by the daemon (a few per second, only the
counters), plus the leader's counters at exit (read from the zombie before it is
reaped), so a session that writes and exits at once is still named.

Terminal output counts as write I/O (it is a ``write``), so a chatty session near a
change is a candidate; that is why "write I/O in window" alone pauses only a single
candidate working in the workspace (see ``Candidate``). Among several such candidates,
those whose ``write_bytes`` grew (file data, not terminal output) are preferred.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import procs

if TYPE_CHECKING:
    from .session import Session

PID_FANOTIFY = "pid from fanotify"
OPEN_FOR_WRITE = "open for write"
WRITE_IO = "write I/O in window"
UNATTRIBUTED = "unattributed"
KEEP_S = 30.0  # samples kept per session (and after it ended)
CACHE_S = 0.05  # one /proc pass serves the events delivered within this


@dataclass(frozen=True, slots=True)
class Candidate:
    session_id: str
    label: str
    pid: int | None
    basis: str  # OPEN_FOR_WRITE | WRITE_IO
    in_workspace: bool  # its cwd or an open file is under the workspace (real paths)
    alive: bool  # the leader runs
    io_bytes: int
    has_processes: bool = True  # alive, or processes left in its cgroup (they can be frozen)
    storage_bytes: int = 0  # write_bytes grown: file data, not terminal output

    @property
    def tier(self) -> int:
        if self.basis in (PID_FANOTIFY, OPEN_FOR_WRITE):
            return 0
        return 1 if self.in_workspace else 2


@dataclass(slots=True)
class _Sample:
    at: float
    io: dict[tuple[int, float], procs.IoCounters]  # (pid, start time) -> counters


@dataclass(slots=True)
class _Now:
    at: float
    io: dict[tuple[int, float], procs.IoCounters]
    writing: set[str]  # real paths open for write
    places: list[str]  # cwds and every open path (real)
    alive: bool


@dataclass(slots=True)
class _History:
    samples: deque[_Sample] = field(default_factory=lambda: deque(maxlen=int(KEEP_S * 8)))


def _read(pids: Iterable[int]) -> tuple[dict[tuple[int, float], procs.IoCounters], set[str], list[str]]:
    io: dict[tuple[int, float], procs.IoCounters] = {}
    writing: set[str] = set()
    places: list[str] = []
    for pid in pids:
        st = procs.read_stat(pid)
        counters = procs.read_io(pid)
        if st is None or counters is None or st.zombie:
            continue
        io[(pid, st.create_time)] = counters
        with contextlib.suppress(OSError):
            places.append(os.readlink(f"/proc/{pid}/cwd"))
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if not target.startswith("/") or target.startswith("/dev/"):
                continue
            places.append(target)
            if _writable(pid, fd):
                writing.add(target)
    return io, writing, places


def _writable(pid: int, fd: str) -> bool:
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as f:
            for line in f:
                if line.startswith(b"flags:"):
                    return int(line.split()[1], 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except (OSError, ValueError, IndexError):
        return False
    return False


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class WriterEvidence:
    """Per-session write samples and the candidates for one change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # sample() runs in a worker thread
        self._history: dict[str, _History] = {}
        self._now: dict[str, _Now] = {}
        self._now_at = 0.0

    def sample(self, sessions: Iterable[Session]) -> None:
        """Record the counters of every session that has processes (a few times a second)."""
        now = time.time()
        taken: dict[str, _Sample] = {}
        for s in sessions:
            if not s.has_processes:
                continue
            io: dict[tuple[int, float], procs.IoCounters] = {}
            for pid in s.member_pids():
                st = procs.read_stat(pid)
                counters = procs.read_io(pid)
                if st is not None and counters is not None and not st.zombie:
                    io[(pid, st.create_time)] = counters
            taken[s.id] = _Sample(now, io)
        with self._lock:
            for sid, sample in taken.items():
                self._history.setdefault(sid, _History()).samples.append(sample)
            for sid in [k for k in self._history if k not in taken]:
                h = self._history[sid]
                if not h.samples or h.samples[-1].at < now - KEEP_S:
                    del self._history[sid]

    def _current(self, sessions: Iterable[Session], changed_at: float) -> dict[str, _Now]:
        """One /proc pass, reused for ``CACHE_S`` by changes it can have seen (a pass
        taken before the change cannot show its writer holding the file open)."""
        now = time.time()
        if now - self._now_at < CACHE_S and self._now_at >= changed_at:
            return self._now
        out: dict[str, _Now] = {}
        for s in sessions:
            if s.has_processes:
                pids = s.member_pids()
                io, writing, places = _read(pids)
                places = [os.path.realpath(p) for p in places]
                writing = {os.path.realpath(p) for p in writing}
                if not places:
                    places = [s.info().cwd]
                out[s.id] = _Now(now, io, writing, places, s.alive)
            elif s.id in self._history or s.last_io is not None:
                out[s.id] = _Now(now, {}, set(), [s.info().cwd], False)
        self._now, self._now_at = out, now
        return out

    def candidates(
        self, sessions: Iterable[Session], workspace_root: str, path: str, changed_at: float
    ) -> list[Candidate]:
        """Sessions with evidence of writing ``path`` (relative to ``workspace_root``)
        at ``changed_at``, best evidence first; only the best tier is returned."""
        sessions = list(sessions)
        by_id = {s.id: s for s in sessions}
        root = os.path.realpath(workspace_root)
        target = os.path.join(root, path)
        target_real = os.path.realpath(target)
        since = changed_at - 0.02  # ctime comes from a coarse clock
        found: list[Candidate] = []
        for sid, now in self._current(sessions, changed_at).items():
            s = by_id[sid]
            info = s.info()
            if not now.alive and not now.io and (info.ended_at or 0) < since - 1.0:
                continue
            opened = target in now.writing or target_real in now.writing
            wchar, storage = self._delta(sid, s, now, since)
            if not opened and wchar + storage <= 0:
                continue
            inside = any(_under(p, root) for p in now.places)
            found.append(
                Candidate(
                    sid,
                    info.title or " ".join(info.argv),
                    info.pid or None,
                    OPEN_FOR_WRITE if opened else WRITE_IO,
                    inside,
                    now.alive,
                    wchar + storage,
                    now.alive or bool(now.io),
                    storage,
                )
            )
        if not found:
            return []
        best = min(c.tier for c in found)
        named = [c for c in found if c.tier == best]
        if len(named) > 1 and named[0].basis == WRITE_IO:
            # Terminal output is wchar too; a session that dirtied file pages is the
            # likelier writer than one that only printed (a prompt, a progress bar).
            storing = [c for c in named if c.storage_bytes > 0]
            if storing:
                named = storing
        return named

    def _delta(self, sid: str, s: Session, now: _Now, since: float) -> tuple[int, int]:
        """(wchar, write_bytes) grown since the last sample before ``since``."""
        with self._lock:
            history = self._history.get(sid)
            samples = list(history.samples) if history is not None else []
        base: _Sample | None = None
        for sample in reversed(samples):
            if sample.at <= since:
                base = sample
                break
        created = s.info().created_at
        if base is not None:
            started_after = base.at
        elif created >= since - 1.0:
            # A young session with no sample before the change: all its I/O is in the window.
            base, started_after = _Sample(created, {}), 0.0
        else:
            # No sample from before the change: only processes started since count.
            base, started_after = _Sample(since, {}), since
        wchar = storage = 0
        for key, value in now.io.items():
            before = base.io.get(key)
            if before is None and key[1] < started_after:
                continue
            before = before or procs.IoCounters(0, 0)
            wchar += max(0, value.wchar - before.wchar)
            storage += max(0, value.write_bytes - before.write_bytes)
        if not now.alive and s.last_io is not None:
            at, counters = s.last_io
            leader_key = next((k for k in base.io if k[0] == s.info().pid), None)
            if at >= since and (leader_key is not None or started_after == 0.0):
                before = base.io[leader_key] if leader_key is not None else procs.IoCounters(0, 0)
                wchar += max(0, counters.wchar - before.wchar)
                storage += max(0, counters.write_bytes - before.write_bytes)
        return wchar, storage
