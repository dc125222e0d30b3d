"""Finding, measuring and ending a session's processes without signalling strangers.

A PID names a process only while that process lives; afterwards the kernel may hand
it to an unrelated one. Every signal here therefore goes through a `ProcHandle`
(PID plus start time): it opens a pidfd, which pins one process, checks that the
pinned process still has the recorded start time, and signals through the pidfd.
A reused PID fails the check and is left alone.

A session's processes are more than the leader's descendants: a double-forked child
is reparented to init, and a daemonising one leaves the session too. Membership is
therefore the union of the leader's descendants, everything in its session or
process group, everything carrying the session's marker in its environment (set at
spawn, inherited unless cleared), and everything seen as a member before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import NamedTuple

import psutil

MARKER_VAR = "AGENT_CONSOLE_SESSION"


class ProcHandle(NamedTuple):
    pid: int
    create_time: float

    @classmethod
    def of(cls, pid: int) -> ProcHandle | None:
        try:
            return cls(pid, psutil.Process(pid).create_time())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None

    def alive(self) -> bool:
        """Running (or stopped) and still the same process; a zombie counts as gone."""
        try:
            p = psutil.Process(self.pid)
            return p.create_time() == self.create_time and p.status() != psutil.STATUS_ZOMBIE
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False

    def signal(self, sig: int) -> bool:
        """Send `sig` if the PID still names this process. True when sent."""
        try:
            fd = os.pidfd_open(self.pid)
        except (ProcessLookupError, PermissionError):
            return False
        try:
            try:
                if psutil.Process(self.pid).create_time() != self.create_time:
                    return False  # the PID was reused: not ours
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                return False
            try:
                signal.pidfd_send_signal(fd, sig)
            except (ProcessLookupError, PermissionError):
                return False
            return True
        finally:
            os.close(fd)


def _protected() -> set[int]:
    """This process and its ancestors: never members, whatever they carry."""
    out = {0, 1, os.getpid()}
    with contextlib.suppress(psutil.Error):
        out.update(p.pid for p in psutil.Process().parents())
    return out


class ProcessTable:
    """One scan of /proc: parent links of every visible process. Built once per
    sampling tick and shared by all sessions, so cost does not grow per session."""

    def __init__(self) -> None:
        self.procs: dict[int, psutil.Process] = {}
        self.children: dict[int, list[int]] = defaultdict(list)
        # process_iter keeps its Process objects between calls, so cpu_percent()
        # measures from the previous tick.
        for p in psutil.process_iter(["ppid"]):
            ppid = p.info["ppid"]
            self.procs[p.pid] = p
            if ppid is not None:
                self.children[ppid].append(p.pid)

    def descendants(self, roots: Iterable[int]) -> set[int]:
        seen: set[int] = set()
        stack = [r for r in roots if r in self.procs]
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            stack.extend(self.children.get(pid, ()))
        return seen


def members(
    leader: ProcHandle,
    marker: str,
    known: Iterable[ProcHandle] = (),
    *,
    leader_unreaped: bool,
    deep: bool = True,
) -> set[ProcHandle]:
    """Live processes belonging to the session led by `leader` (see module doc).

    Session and group ids are matched only while the leader is unreaped: until then
    its PID, and so the session id, cannot name anyone else (the kernel keeps a PID
    while any process still uses it as a session or group id, and ours is held by
    the unreaped leader). `deep` adds the environment-marker scan, which reads every
    visible process's environment.
    """
    table = ProcessTable()
    protected = _protected()
    roots = {h.pid for h in (leader, *known) if h.alive()}
    if leader_unreaped:
        for pid in table.procs:
            if pid in protected:
                continue
            try:
                if os.getsid(pid) == leader.pid or os.getpgid(pid) == leader.pid:
                    roots.add(pid)
            except OSError:
                continue
    if deep:
        for pid, p in table.procs.items():
            if pid in protected or pid in roots:
                continue
            try:
                if p.environ().get(MARKER_VAR) == marker:
                    roots.add(pid)
            except (psutil.Error, OSError):
                continue
    out: set[ProcHandle] = set()
    for pid in table.descendants(roots) - protected:
        h = ProcHandle.of(pid)
        if h is not None and h.alive():
            out.add(h)
    return out


async def terminate(
    leader: ProcHandle,
    marker: str,
    *,
    known: Iterable[ProcHandle] = (),
    grace_s: float = 3.0,
    leader_unreaped: Callable[[], bool],
) -> set[ProcHandle]:
    """TERM and HUP (what a closing terminal sends; interactive shells ignore TERM)
    plus CONT (for stopped ones) to the session's process group and every member,
    wait up to `grace_s` for them to go, then KILL whatever is left, until a
    scan finds nothing. Returns the processes that were signalled.

    `leader_unreaped()` says the leader is not yet reaped, so its PID (the process
    group id) cannot have been reused and the group may be signalled as a whole.
    It is asked afresh each time, since the leader may be reaped meanwhile.
    """
    signalled: set[ProcHandle] = set()
    found = await asyncio.to_thread(members, leader, marker, known, leader_unreaped=leader_unreaped())
    if leader_unreaped():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCONT):
                os.killpg(leader.pid, sig)
    for h in found:
        if h.signal(signal.SIGTERM):
            h.signal(signal.SIGHUP)
            h.signal(signal.SIGCONT)
            signalled.add(h)
    deadline = time.monotonic() + max(grace_s, 0.0)
    remaining = {h for h in found if h.alive()}
    while remaining and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        remaining = {h for h in remaining if h.alive()}
    known_all = set(known) | signalled
    for _ in range(50):
        found = await asyncio.to_thread(members, leader, marker, known_all, leader_unreaped=leader_unreaped())
        if not found:
            break
        for h in found:
            if h.signal(signal.SIGKILL):
                signalled.add(h)
        known_all |= found
        await asyncio.sleep(0.02)
    return signalled


class Usage(NamedTuple):
    cpu_percent: float  # of one core, summed over the processes
    rss_bytes: int  # summed resident set sizes (shared pages counted once per process)
    processes: int
    handles: frozenset[ProcHandle]


def usage(table: ProcessTable, leader_pid: int) -> Usage:
    """CPU and memory of the leader and its descendants, from a shared table."""
    cpu = 0.0
    rss = 0
    handles = []
    for pid in table.descendants([leader_pid]):
        p = table.procs[pid]
        try:
            with p.oneshot():
                cpu += p.cpu_percent(None)
                rss += p.memory_info().rss
                handles.append(ProcHandle(pid, p.create_time()))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return Usage(cpu, rss, len(handles), frozenset(handles))
