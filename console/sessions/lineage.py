"""Whose process a pid is, even after it exited: the writer of a protected file, named.

fanotify gives the pid of the process that wrote, created or renamed a file; by the time
the daemon reads ``/proc/PID`` a short-lived writer (``sh -c 'echo … > .git/hooks/x'``,
``cp``, ``mv``, ``git config``) may be gone. "Gone" must not read as "nobody", so the
answer here has four kinds (:class:`Writer`): a session's, an operation's, nobody's
(known to be outside every session), or unknown.

The evidence, best first:

1. **Lineage.** As root the daemon listens to the kernel's process events (the proc
   connector: every fork with its parent, every exit). Each session's leader and each
   sandboxed operation's launcher is registered when it starts, so a pid is a session's
   when a registered process is among its ancestors as they were at fork time: a double
   fork reparented to init, a process that cleared its environment marker or left its
   cgroup, and a writer that exited long ago are all still named.
2. **The live process.** Its cgroup (``…/s-ID``), else its environment marker.
3. **Seen alive.** The fast lane's permission events (``FAN_OPEN_PERM``) stop every
   process that opens a file in a hot directory until the daemon has read who it is
   (:meth:`Lineage.seen`); that answer is kept for a while.

Nobody is *firm* only when that is certain: the process (or its oldest known ancestor)
lives outside every session and its whole line was seen from a process older than the
daemon's listening, or cgroups are in force and the live process is in none of the
sessions'. Anything else is unknown, and the tripwire treats unknown as a suspect, never
as nobody.

Without the proc connector (not root, or the kernel lacks it) only 2 and 3 remain, and
``mode`` says so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import struct
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

from . import procs

log = logging.getLogger(__name__)

WriterKind = Literal["session", "operation", "nobody", "unknown"]
NO_LINEAGE_VAR = "AGENT_CONSOLE_NO_LINEAGE"  # "1": no proc connector (tests the fallback)
KEEP_S = 30.0  # an exited process's line is remembered this long
MAX_PROCESSES = 200_000  # lines remembered at most (the oldest go first)
MAX_HOPS = 64

_NETLINK_CONNECTOR = 11
_CN_IDX_PROC = 1
_CN_VAL_PROC = 1
_PROC_CN_MCAST_LISTEN = 1
_PROC_CN_MCAST_IGNORE = 2
_PROC_EVENT_FORK = 0x00000001
_PROC_EVENT_EXIT = 0x80000000
_NLMSG_DONE = 3
_NLMSG = struct.Struct("=IHHII")
_CN_MSG = struct.Struct("=IIIIHH")
_EVENT = struct.Struct("=IIQ")
_FORK = struct.Struct("=IIII")
_EXIT = struct.Struct("=II")
_SO_RCVBUFFORCE = 33


@dataclass(frozen=True, slots=True)
class Writer:
    """Who a pid was: ``kind`` and, for a session or operation, its ``id``. ``how`` says
    what showed it; ``firm`` (for nobody) that it is certain."""

    kind: WriterKind
    id: str = ""
    how: str = ""
    firm: bool = False

    @property
    def named(self) -> bool:
        return self.kind in ("session", "operation")


UNKNOWN = Writer("unknown", how="the process was gone before it could be read")


def live_writer(pid: int) -> Writer | None:
    """What ``/proc/PID`` says now: a session by its cgroup or environment marker, or
    nobody (not firm); None when the process cannot be read (gone)."""
    try:
        with open(f"/proc/{pid}/cgroup", "rb") as f:
            for line in f:
                if line.startswith(b"0::"):
                    last = line.rstrip(b"\n").rpartition(b"/")[2]
                    if last.startswith(b"s-") and b"agent-console" in line:
                        return Writer("session", last[2:].decode("ascii", "replace"), "cgroup")
    except OSError:
        return None
    needle = procs.MARKER_VAR.encode() + b"="
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if entry.startswith(needle):
                    sid = entry[len(needle) :].decode("ascii", "replace")
                    if sid:
                        return Writer("session", sid, "environment marker")
    except OSError:
        return None
    return Writer("nobody", how="a process outside every session")


class Lineage:
    """Forks, exits and registered roots; :meth:`writer_of` answers for one pid.

    Thread-safe: the connector is read by its own thread and, on demand, by whoever asks
    (so a fork reported just before a write is always counted)."""

    def __init__(self, *, cgroups: bool = False, listen: bool = True) -> None:
        self.cgroups = cgroups
        self._lock = threading.Lock()
        self._parent: OrderedDict[int, int] = OrderedDict()  # child -> parent (as forked)
        self._exited: dict[int, float] = {}
        self._owners: dict[int, Writer] = {}  # registered roots: session leaders, operations
        self._seen: OrderedDict[int, tuple[Writer, float]] = OrderedDict()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stop = False
        # Written by close(): a netlink socket's shutdown does not end a select on it.
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._started = time.time()
        self._started_ticks = _boot_ticks_now()
        self.lost = 0  # connector messages the kernel dropped (the socket overflowed)
        self.reason = ""
        if not listen or os.environ.get(NO_LINEAGE_VAR) == "1":
            self.reason = f"{NO_LINEAGE_VAR}=1" if listen else "not asked for"
        else:
            self._sock, self.reason = _connect()

    @property
    def mode(self) -> str:
        """ "proc connector" when forks are followed, else why not."""
        return "proc connector" if self._sock is not None else f"off ({self.reason})"

    @property
    def active(self) -> bool:
        return self._sock is not None

    def start(self) -> None:
        if self._sock is not None and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="lineage", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.send(_listen_message(_PROC_CN_MCAST_IGNORE))
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if self._thread is not None:
            self._thread.join(2)
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake_r = self._wake_w = -1

    # -- what the daemon tells it ------------------------------------------------------

    def register(self, pid: int, kind: WriterKind, ident: str) -> None:
        """``pid`` is the root of a session (its leader) or of an operation (its
        launcher): it and everything forked below it are that writer's."""
        if pid > 0:
            with self._lock:
                self._owners[pid] = Writer(kind, ident, "process lineage")

    def seen(self, pid: int) -> Writer | None:
        """Read ``pid`` now, while it is known to be alive (stopped in a permission
        event), and remember the answer; returns it."""
        found = live_writer(pid)
        if found is not None:
            with self._lock:
                self._seen.pop(pid, None)
                self._seen[pid] = (Writer(found.kind, found.id, f"{found.how}, read at open"), time.time())
                while len(self._seen) > 4096:
                    self._seen.popitem(last=False)
        return found

    # -- the answer ----------------------------------------------------------------------

    def writer_of(self, pid: int) -> Writer:
        """Whose process ``pid`` is (or was)."""
        if pid <= 0:
            return UNKNOWN
        live = live_writer(pid)
        if live is not None and live.kind == "session" and live.how == "cgroup":
            return live  # a cgroup cannot be entered or left without write access to the tree
        self._drain()
        with self._lock:
            chain = [pid]
            p = pid
            for _ in range(MAX_HOPS):
                parent = self._parent.get(p)
                if parent is None or parent in chain:
                    break
                chain.append(parent)
                p = parent
            owners = [(q, self._owners.get(q)) for q in chain]
            seen = self._seen.get(pid)
        for q, owner in owners:
            if owner is not None:
                return owner if q != pid else Writer(owner.kind, owner.id, "its own pid")
        if live is not None and live.kind == "session":
            return live
        for q in chain[1:]:
            ancestor = live_writer(q)
            if ancestor is not None and ancestor.kind == "session":
                return Writer("session", ancestor.id, f"process lineage ({ancestor.how} of an ancestor)")
        if seen is not None and time.time() - seen[1] < KEEP_S and seen[0].kind == "session":
            return seen[0]
        top = chain[-1]
        whole = self.active and self._older_than_listening(top)
        if live is not None:
            return Writer("nobody", how=live.how, firm=whole or self.cgroups)
        if len(chain) > 1 and whole:
            return Writer("nobody", how="process lineage from a process outside every session", firm=True)
        if seen is not None and time.time() - seen[1] < KEEP_S:
            return Writer("nobody", how=seen[0].how, firm=self.cgroups)
        return UNKNOWN

    def _older_than_listening(self, pid: int) -> bool:
        """``pid`` lives and started before the connector listened: every process
        below it was seen being forked."""
        st = procs.read_stat(pid)
        return st is not None and not st.zombie and st.start_ticks < self._started_ticks

    # -- the connector -------------------------------------------------------------------

    def _run(self) -> None:
        last_prune = time.monotonic()
        while not self._stop:
            sock = self._sock
            if sock is None:
                return
            try:
                ready, _, _ = select.select([sock.fileno(), self._wake_r], [], [], 1.0)
            except (OSError, ValueError):
                return
            if self._stop:
                return
            if ready:
                self._drain()
            now = time.monotonic()
            if now - last_prune > 5.0:
                last_prune = now
                self._prune()

    def _drain(self) -> None:
        sock = self._sock
        if sock is None:
            return
        with self._lock:
            while True:
                try:
                    data = sock.recv(65536, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    return
                except OSError as exc:
                    if exc.errno == 105:  # ENOBUFS: the kernel dropped events
                        self.lost += 1
                        continue
                    return
                if not data:
                    return
                self._parse(data)

    def _parse(self, data: bytes) -> None:
        offset = 0
        now = time.time()
        while offset + _NLMSG.size <= len(data):
            length, _type, _flags, _seq, _pid = _NLMSG.unpack_from(data, offset)
            body = offset + _NLMSG.size + _CN_MSG.size
            if length < _NLMSG.size or body + _EVENT.size > len(data):
                return
            what, _cpu, _ts = _EVENT.unpack_from(data, body)
            at = body + _EVENT.size
            if what == _PROC_EVENT_FORK and at + _FORK.size <= len(data):
                _ppid, parent, child_pid, child = _FORK.unpack_from(data, at)
                if child_pid == child:  # a process, not a thread
                    if child in self._exited:  # the pid was used again
                        del self._exited[child]
                        self._owners.pop(child, None)
                        self._seen.pop(child, None)
                    self._parent.pop(child, None)
                    self._parent[child] = parent
                    if len(self._parent) > MAX_PROCESSES:
                        self._parent.popitem(last=False)
            elif what == _PROC_EVENT_EXIT and at + _EXIT.size <= len(data):
                pid, tgid = _EXIT.unpack_from(data, at)
                if pid == tgid:
                    self._exited[pid] = now
            offset += (length + 3) & ~3

    def _prune(self) -> None:
        cutoff = time.time() - KEEP_S
        with self._lock:
            for pid in [p for p, t in self._exited.items() if t < cutoff]:
                del self._exited[pid]
                self._parent.pop(pid, None)
                self._owners.pop(pid, None)
                self._seen.pop(pid, None)


def _boot_ticks_now() -> int:
    """Clock ticks since boot, the unit of a process's start time in /proc/PID/stat."""
    try:
        with open("/proc/uptime", "rb") as f:
            return int(float(f.read().split()[0]) * procs.CLOCK_TICKS)
    except (OSError, ValueError, IndexError):
        return 0


def _listen_message(op: int) -> bytes:
    payload = struct.pack("=I", op)
    cn = _CN_MSG.pack(_CN_IDX_PROC, _CN_VAL_PROC, 0, 0, len(payload), 0) + payload
    return _NLMSG.pack(_NLMSG.size + len(cn), _NLMSG_DONE, 0, 0, os.getpid()) + cn


def _connect() -> tuple[socket.socket | None, str]:
    """A socket subscribed to the kernel's process events, or None and why not."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_CONNECTOR)
    except (OSError, AttributeError) as exc:
        return None, f"no proc connector: {getattr(exc, 'strerror', exc)}"
    try:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, 8 * 1024 * 1024)
        sock.bind((0, _CN_IDX_PROC))
        sock.send(_listen_message(_PROC_CN_MCAST_LISTEN))
    except OSError as exc:
        sock.close()
        why = "not root" if exc.errno in (1, 13) else (exc.strerror or str(exc))
        return None, f"no proc connector: {why}"
    return sock, ""
