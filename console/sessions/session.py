"""One PTY session as the daemon runs it: the child, its screen, ring and recording.

Everything happens on the event loop and nothing here ever waits for a client. The
master side of the PTY is non-blocking and read from a loop reader; each read is
handed, in this order, to the ring buffer, the screen and the recording, then
offered to attached clients (whose buffers are bounded, see `attach.py`). Reading is
capped per wake-up so one flooding session cannot starve the others or the daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ptyprocess import PtyProcess

from . import procs
from .attach import DEFAULT_MAX_PENDING, Attachment, Snapshot
from .cgroups import CGROUP_MODE, WALK_MODE, SessionCgroup
from .info import (
    InputOverflow,
    Mode,
    ReadOnlyClient,
    SessionError,
    SessionInfo,
    SessionNotRunning,
    SessionStats,
    Status,
)
from .recording import Recorder, screen_from_recording
from .ring import ReadResult, RingBuffer

if TYPE_CHECKING:
    from console.terminal import Screen

log = logging.getLogger(__name__)

READ_SIZE = 64 * 1024
READ_BUDGET = 256 * 1024  # per wake-up; the loop then serves others before reading on
INPUT_MAX = 1024 * 1024  # input queued while the program does not read
EXIT_LINGER_S = 0.25  # after the leader exits, how long to wait for the last output
LEFTOVER_GRACE_S = 1.0  # TERM-to-KILL grace for processes outliving their leader
MAX_SIZE = 4096

META = "meta.json"
RECORDING = "output.cast"

EventKind = Literal["created", "status", "exited", "lost", "removed", "title"]


def check_size(cols: int, rows: int) -> None:
    if not (
        isinstance(cols, int) and isinstance(rows, int) and 1 <= cols <= MAX_SIZE and 1 <= rows <= MAX_SIZE
    ):
        raise SessionError(f"terminal size must be between 1x1 and {MAX_SIZE}x{MAX_SIZE}")


# Every signal a handler can be set for (not SIGKILL, SIGSTOP, nor the real-time ones
# the C library keeps for itself).
_RESET_SIGNALS = tuple(
    sig
    for sig in signal.Signals
    if sig not in (signal.SIGKILL, signal.SIGSTOP) and sig < getattr(signal, "SIGRTMIN", 32)
)


def _child_setup(
    cwd: str, inherit: Sequence[int] = (), join: Callable[[], None] | None = None
) -> Callable[[], None]:
    """Runs in the forked child before exec: what subprocess does for its children
    and ptyprocess does not. Ignored signals survive exec, and a blocked signal mask
    would too: Python ignores SIGPIPE and SIGXFSZ, and a daemon started in the
    background of a script ignores SIGINT and SIGQUIT, which would leave Ctrl-C in a
    session doing nothing. Every signal starts at its default, as a terminal's would. The directory change is done here
    (not by ptyprocess) so a failure is reported to the parent instead of leaving a
    forked copy of the daemon running. ``inherit``: descriptors to keep across exec
    (ptyprocess keeps ``pass_fds`` open but leaves their close-on-exec flag).
    ``join`` moves the child into its session's cgroup before it runs anything."""

    def setup() -> None:
        if join is not None:
            join()
        for sig in _RESET_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        for fd in inherit:
            os.set_inheritable(fd, True)
        os.chdir(cwd)

    return setup


class Session:
    def __init__(
        self,
        info: SessionInfo,
        directory: Path,
        *,
        notify: Callable[[Session, EventKind], None],
        ring_bytes: int,
        scrollback_lines: int,
        scrollback_bytes: int | None,
        attach_max_pending: int = DEFAULT_MAX_PENDING,
    ) -> None:
        self.id = info.id
        self.dir = directory
        self._info = info
        self._notify = notify
        self._ring = RingBuffer(ring_bytes)
        self._scrollback_lines = scrollback_lines
        self._scrollback_bytes = scrollback_bytes
        self._attach_max_pending = attach_max_pending
        self._screen: Screen | None = None
        self._recorder: Recorder | None = None
        self._proc: PtyProcess | None = None
        self._fd: int | None = None
        self._reading = False
        self._leader: procs.ProcHandle | None = None
        self._pidfd: int | None = None
        self._reaped = True
        self._eof = True
        self._finalized = True
        self._exit_status: int | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._inbuf = bytearray()
        self._writing = False
        self._attachments: dict[str, Attachment] = {}
        self._client_sizes: dict[str, tuple[int, int]] = {}
        self._client_active: dict[str, float] = {}
        self._exited = asyncio.get_running_loop().create_future()
        self._last_output_mono = time.monotonic()
        self._stats = SessionStats(0.0, 0, 0, 0.0)
        self._known: frozenset[procs.ProcHandle] = frozenset()
        self._meter = procs.UsageMeter()
        self._background: set[asyncio.Task[object]] = set()
        self.cgroup: SessionCgroup | None = None
        self._stopped: set[procs.ProcHandle] = set()  # walk mode: what pause stopped
        # Counts resumes: a pause still walking when the operator resumes gives up.
        self._resumes = 0
        self.paused = False
        self.last_io: tuple[float, procs.IoCounters] | None = None
        self.meta_dirty = False
        if not info.alive:
            self._exited.set_result(None)

    # -- lifecycle -------------------------------------------------------------------

    @classmethod
    def spawn(
        cls,
        info: SessionInfo,
        directory: Path,
        *,
        env: Mapping[str, str],
        record_input: bool,
        recording_max_bytes: int,
        notify: Callable[[Session, EventKind], None],
        ring_bytes: int,
        scrollback_lines: int,
        scrollback_bytes: int | None,
        attach_max_pending: int = DEFAULT_MAX_PENDING,
        pass_fds: Sequence[int] = (),
        cgroup: SessionCgroup | None = None,
    ) -> Session:
        loop = asyncio.get_running_loop()
        try:
            proc = PtyProcess.spawn(
                list(info.argv),
                env=dict(env),
                dimensions=(info.rows, info.cols),
                preexec_fn=_child_setup(
                    info.cwd, tuple(pass_fds), cgroup.joiner() if cgroup is not None else None
                ),
                pass_fds=tuple(pass_fds),  # the sandbox's content pins (console/sandbox/plan.py)
            )
        except (OSError, ValueError, TypeError) as exc:
            raise SessionError(f"could not start {info.argv[0]!r}: {exc}") from exc
        # ptyprocess's own cleanup (on garbage collection) would block and signal by
        # bare PID; this session owns the child from here on.
        proc.closed = True
        leader = procs.ProcHandle.of(proc.pid) or procs.ProcHandle(proc.pid, 0.0)
        info = replace(info, pid=proc.pid, pid_create_time=leader.create_time)
        self = cls(
            info,
            directory,
            notify=notify,
            ring_bytes=ring_bytes,
            scrollback_lines=scrollback_lines,
            scrollback_bytes=scrollback_bytes,
            attach_max_pending=attach_max_pending,
        )
        self._proc = proc
        self._fd = proc.fd
        self._leader = leader
        # ptyprocess returns once the child has exec'd, so the pre-exec join is done.
        if cgroup is not None and (cgroup.contains(proc.pid) or not leader.alive()):
            self.cgroup = cgroup
        elif cgroup is not None:
            log.warning("session %s: could not join its cgroup; pause walks processes", info.id)
        self._reaped = False
        self._eof = False
        self._finalized = False
        from console.terminal import Screen  # the emulator's library: loaded with the first session

        self._screen = Screen(
            info.cols,
            info.rows,
            scrollback_lines=scrollback_lines,
            scrollback_bytes=scrollback_bytes,
            on_reply=self._reply,
        )
        self._recorder = Recorder(
            directory / RECORDING,
            cols=info.cols,
            rows=info.rows,
            title=info.title,
            env=dict(env),
            record_input=record_input,
            max_bytes=recording_max_bytes,
        )
        os.set_blocking(proc.fd, False)
        loop.add_reader(proc.fd, self._on_readable)
        self._reading = True
        try:
            self._pidfd = os.pidfd_open(proc.pid)
            loop.add_reader(self._pidfd, self._on_leader_exit)
        except ProcessLookupError:
            loop.call_soon(self._on_leader_exit)
        return self

    @classmethod
    def restore(
        cls,
        info: SessionInfo,
        directory: Path,
        *,
        notify: Callable[[Session, EventKind], None],
        scrollback_lines: int,
    ) -> Session:
        """A session from a previous daemon: metadata and recording, no process."""
        return cls(
            info,
            directory,
            notify=notify,
            ring_bytes=1,
            scrollback_lines=scrollback_lines,
            scrollback_bytes=None,
        )

    def close(self) -> None:
        """Release everything held in memory and by the loop (not the files)."""
        loop = asyncio.get_running_loop()
        if self._linger is not None:
            self._linger.cancel()
        if self._reading and self._fd is not None:
            loop.remove_reader(self._fd)
            self._reading = False
        if self._writing and self._fd is not None:
            loop.remove_writer(self._fd)
            self._writing = False
        if self._pidfd is not None:
            loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        self._close_fd()
        if self._recorder is not None:
            self._recorder.close()
        for att in self._attachments.values():
            att._push_end(self._ring.end, "removed")
        self._attachments.clear()
        if self._screen is not None:
            self._screen.close()
            self._screen = None
        for task in self._background:
            task.cancel()

    # -- state -----------------------------------------------------------------------

    def info(self) -> SessionInfo:
        return self._info

    @property
    def alive(self) -> bool:
        return self._info.alive

    @property
    def stats(self) -> SessionStats:
        return self._stats

    def screen(self) -> Screen:
        """The session's screen; for a session from a previous daemon, rebuilt from
        its recording on first use."""
        if self._screen is None:
            path = self.dir / RECORDING
            try:
                self._screen = screen_from_recording(path, scrollback_lines=self._scrollback_lines)
            except (OSError, ValueError):
                from console.terminal import Screen

                self._screen = Screen(
                    self._info.cols, self._info.rows, scrollback_lines=self._scrollback_lines
                )
        return self._screen

    def _set(self, **changes: object) -> None:
        self._info = replace(self._info, **changes)  # type: ignore[arg-type]  # names checked by replace()
        self.meta_dirty = True

    def _set_status(self, status: Status, kind: EventKind = "status", **changes: object) -> None:
        self._set(status=status, **changes)
        self._notify(self, kind)

    def mark_lost(self) -> None:
        self._set_status("lost", "lost", ended_at=self._info.ended_at or time.time())

    def set_owner(self, owner: str, mode: Mode) -> None:
        self._set(owner=owner, mode=mode)

    # -- output ----------------------------------------------------------------------

    def _on_readable(self) -> None:
        fd = self._fd
        if fd is None:
            return
        chunks: list[bytes] = []
        total = 0
        eof = False
        while total < READ_BUDGET:
            try:
                data = os.read(fd, READ_SIZE)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno != errno.EIO:
                    log.warning("session %s: read failed: %s", self.id, exc)
                eof = True
                break
            if not data:
                eof = True
                break
            chunks.append(data)
            total += len(data)
        if chunks:
            self._ingest(chunks[0] if len(chunks) == 1 else b"".join(chunks))
        if eof:
            self._on_eof()

    def _ingest(self, data: bytes) -> None:
        offset = self._ring.end
        self._ring.write(data)
        assert self._screen is not None
        self._screen.feed(data)
        if self._recorder is not None:
            self._recorder.output(data)
            if self._recorder.truncated and not self._info.recording_truncated:
                # Live, not only at exit: the console shows it while the flood goes on.
                self._set_status(self._info.status, recording_truncated=True)
        for att in self._attachments.values():
            att._push_output(offset, data)
        self._last_output_mono = time.monotonic()
        self._info = replace(self._info, output_bytes=self._ring.end, last_output_at=time.time())
        if self._info.status == "idle":
            self._set_status("running")

    def _on_eof(self) -> None:
        loop = asyncio.get_running_loop()
        if self._reading and self._fd is not None:
            loop.remove_reader(self._fd)
            self._reading = False
        self._eof = True
        if self._reaped:
            self._close_fd()
            if self._finalized:
                self._close_recording()
            else:
                self._finalize()

    def _close_fd(self) -> None:
        if self._proc is not None and self._fd is not None:
            if self._writing:
                asyncio.get_running_loop().remove_writer(self._fd)
                self._writing = False
            with contextlib.suppress(OSError):
                self._proc.fileobj.close()
            self._fd = None

    @property
    def recording_open(self) -> bool:
        """Still being written: never pruned (console/sessions/quota.py)."""
        return self._recorder is not None and self._recorder.open

    def recording_size(self) -> int:
        if self._recorder is not None and self._recorder.open:
            return self._recorder.written
        try:
            return (self.dir / RECORDING).stat().st_size
        except OSError:
            return 0

    def prune_recording(self) -> int:
        """Delete the finished recording; the bytes freed. The metadata stays."""
        if self.recording_open:
            raise SessionError(f"session {self.id} is still recording")
        size = self.recording_size()
        try:
            (self.dir / RECORDING).unlink()
        except FileNotFoundError:
            size = 0
        self._set(recording_pruned=True)
        return size

    def _close_recording(self) -> None:
        if self._recorder is not None:
            self._recorder.close()
            if self._recorder.truncated and not self._info.recording_truncated:
                self._set(recording_truncated=True)

    # -- exit ------------------------------------------------------------------------

    def _on_leader_exit(self) -> None:
        assert self._leader is not None
        # Still a zombie: its write counters (its reaped children's included) are the
        # session's last evidence for the tripwire (console/sessions/writers.py).
        last = procs.read_io(self._leader.pid)
        if last is not None:
            self.last_io = (time.time(), last)
        try:
            pid, status = os.waitpid(self._leader.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self._leader.pid, -1
        if pid == 0:
            return  # spurious wake-up
        loop = asyncio.get_running_loop()
        if self._pidfd is not None:
            loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        self._reaped = True
        self._exit_status = status
        if self._eof:
            self._close_fd()
            self._finalize()
        else:
            self._linger = loop.call_later(EXIT_LINGER_S, self._linger_over)

    def _linger_over(self) -> None:
        """The leader is gone but something still holds the terminal open: take what
        was printed, record the exit, and end the session's remaining processes."""
        self._linger = None
        self._on_readable()
        if not self._finalized:
            self._finalize()
        if not self._eof:
            self._spawn_task(self._end_leftovers())

    async def _end_leftovers(self) -> None:
        assert self._leader is not None
        await procs.terminate(
            self._leader,
            self.id,
            known=self._known,
            grace_s=LEFTOVER_GRACE_S,
            leader_unreaped=lambda: not self._reaped,
        )

    def _finalize(self) -> None:
        if self._finalized:
            return
        self._finalized = True
        code: int | None = None
        sig: int | None = None
        if self._exit_status is not None and self._exit_status >= 0:
            rc = os.waitstatus_to_exitcode(self._exit_status)
            code, sig = (rc, None) if rc >= 0 else (None, -rc)
        if self._recorder is not None:
            self._recorder.flush()
        if self._eof:
            self._close_recording()
        self._set_status("exited", "exited", exit_code=code, exit_signal=sig, ended_at=time.time())
        for att in self._attachments.values():
            att._push_end(self._ring.end, "exited")
        if not self._exited.done():
            self._exited.set_result(None)

    async def wait(self) -> SessionInfo:
        await asyncio.shield(self._exited)
        return self._info

    # -- input -----------------------------------------------------------------------

    def write(self, data: bytes, client_id: str | None = None) -> None:
        if client_id is not None:
            att = self._attachments.get(client_id)
            if att is not None and att.read_only:
                raise ReadOnlyClient("this client is attached read-only")
        if self._fd is None or self._reaped:
            raise SessionNotRunning(f"session {self.id} is not running")
        if client_id is not None:
            self._touch(client_id)
        if self._recorder is not None and data:
            self._recorder.input(data)
        self._send(data)

    def _reply(self, data: bytes) -> None:
        """Answers the screen gives the program (cursor reports, device attributes)."""
        with contextlib.suppress(SessionError):
            self._send(data)

    def _send(self, data: bytes) -> None:
        fd = self._fd
        if fd is None:
            raise SessionNotRunning(f"session {self.id} is not running")
        if self._inbuf:
            if len(self._inbuf) + len(data) > INPUT_MAX:
                raise InputOverflow("the program is not reading its input; input buffer full")
            self._inbuf += data
            return
        try:
            n = os.write(fd, data)
        except BlockingIOError:
            n = 0
        except OSError as exc:
            raise SessionNotRunning(f"session {self.id} is not accepting input") from exc
        if n < len(data):
            rest = data[n:]
            if len(rest) > INPUT_MAX:
                raise InputOverflow("input larger than the input buffer")
            self._inbuf += rest
            asyncio.get_running_loop().add_writer(fd, self._on_writable)
            self._writing = True

    def _on_writable(self) -> None:
        fd = self._fd
        if fd is None:
            return
        try:
            n = os.write(fd, self._inbuf)
        except BlockingIOError:
            return
        except OSError:
            n = len(self._inbuf)  # the terminal is gone; drop what was queued
        del self._inbuf[:n]
        if not self._inbuf:
            asyncio.get_running_loop().remove_writer(fd)
            self._writing = False

    # -- size ------------------------------------------------------------------------

    def resize(self, cols: int, rows: int, client_id: str) -> None:
        check_size(cols, rows)
        att = self._attachments.get(client_id)
        if att is not None and att.read_only:
            raise ReadOnlyClient("this client is attached read-only")
        self._client_sizes[client_id] = (cols, rows)
        self._touch(client_id)

    def _touch(self, client_id: str) -> None:
        """`client_id` acted (typed or resized): its size, if it gave one, now wins."""
        self._client_active[client_id] = time.monotonic()
        self._apply_size()

    def _apply_size(self) -> None:
        ranked = sorted(
            ((t, cid) for cid, t in self._client_active.items() if cid in self._client_sizes), reverse=True
        )
        if not ranked:
            return
        cols, rows = self._client_sizes[ranked[0][1]]
        if (cols, rows) == (self._info.cols, self._info.rows) or not self.alive:
            return
        if self._proc is not None and self._fd is not None:
            with contextlib.suppress(OSError):
                self._proc.setwinsize(rows, cols)
        self.screen().resize(cols, rows)
        if self._recorder is not None:
            self._recorder.resize(cols, rows)
        self._set(cols=cols, rows=rows)
        for att in self._attachments.values():
            att._push_resize(self._ring.end, cols, rows)

    # -- clients ---------------------------------------------------------------------

    def attach(self, client_id: str, read_only: bool) -> Attachment:
        old = self._attachments.pop(client_id, None)
        if old is not None:
            old._push_end(self._ring.end, "detached")
        att = Attachment(
            self.id,
            client_id,
            read_only,
            self._snapshot(),
            self._snapshot,
            max_pending=self._attach_max_pending,
        )
        if self._finalized:
            att._push_end(self._ring.end, "exited")
        self._attachments[client_id] = att
        return att

    def detach(self, client_id: str) -> None:
        att = self._attachments.pop(client_id, None)
        if att is not None:
            att._push_end(self._ring.end, "detached")
        self._client_sizes.pop(client_id, None)
        self._client_active.pop(client_id, None)
        self._apply_size()

    def _snapshot(self) -> Snapshot:
        screen = self.screen()
        cols, rows = screen.size
        return Snapshot(self._ring.end, screen.snapshot(), cols, rows)

    # -- reading ---------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int) -> ReadResult:
        try:
            return self._ring.read(offset, max_bytes)
        except ValueError as exc:
            raise SessionError(str(exc)) from None

    # -- processes -------------------------------------------------------------------

    def signal(self, sig: int) -> bool:
        """Send `sig` to the session's process group (the foreground job's view of
        Ctrl-C) while the leader is unreaped, else to nothing."""
        if self._leader is None or self._reaped:
            raise SessionNotRunning(f"session {self.id} is not running")
        try:
            os.killpg(self._leader.pid, sig)
        except ProcessLookupError:
            return self._leader.signal(sig)
        return True

    @property
    def stop_mode(self) -> str:
        """How pause stops this session: "cgroup freeze" or "process walk"."""
        return CGROUP_MODE if self.cgroup is not None else WALK_MODE

    @property
    def has_processes(self) -> bool:
        """Running, or its leader gone but processes left in its cgroup (a ``setsid``
        child keeps running after the shell exits)."""
        return self.alive or (self.cgroup is not None and self.cgroup.populated())

    def member_pids(self) -> list[int]:
        """The session's processes as cheaply as they can be known: the cgroup's
        members, else the leader and what the last usage sample found."""
        if self.cgroup is not None:
            return self.cgroup.pids()
        pids = {h.pid for h in self._known}
        if self._leader is not None and not self._reaped:
            pids.add(self._leader.pid)
        return sorted(pids)

    def deep_members(self) -> set[procs.ProcHandle]:
        """Every process of the session by the marker walk (slow: reads every environ)."""
        if self._leader is None:
            return set()
        return procs.members(self._leader, self.id, self._known, leader_unreaped=not self._reaped)

    def pause_now(self) -> None:
        """The synchronous first step of a pause: freeze the cgroup, or SIGSTOP the
        process group and every process known. ``pause`` completes it."""
        if self._leader is None:
            raise SessionNotRunning(f"session {self.id} is not running")
        self.paused = True
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.freeze(wait_s=0)
            return
        if not self._reaped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._leader.pid, signal.SIGSTOP)
        for h in (self._leader, *self._known):
            if h.signal(signal.SIGSTOP):
                self._stopped.add(h)

    def thawed(self) -> bool:
        """Paused, but resumed by someone else: its cgroup's ``cgroup.freeze`` says 0
        (someone wrote it), or in walk mode a process it stopped runs again."""
        if not self.paused:
            return False
        if self.cgroup is not None:
            return not self.cgroup.freeze_requested()
        return any(h.running() for h in self._stopped)

    async def pause(self, wait_s: float = 1.0) -> bool:
        """Stop every process of the session. True once all are stopped: the cgroup
        reports ``frozen 1``, or a marker walk finds no process it had not stopped."""
        self.pause_now()
        resumes = self._resumes
        deadline = time.monotonic() + wait_s
        if self.cgroup is not None:
            while not self.cgroup.frozen() and self.cgroup.populated():
                if time.monotonic() > deadline or self._resumes != resumes:
                    return False
                await asyncio.sleep(0.005)
            return True
        rounds = 0
        while time.monotonic() <= deadline or rounds < 2:
            rounds += 1
            found = await asyncio.to_thread(self.deep_members)
            if self._resumes != resumes:  # resumed meanwhile: what it continued stays so
                return False
            new = {h for h in found if h not in self._stopped}
            for h in new:
                if h.signal(signal.SIGSTOP):
                    self._stopped.add(h)
            if not new and rounds > 1:
                return True
            await asyncio.sleep(0.01)
        return False

    async def resume(self) -> None:
        """Undo ``pause``: thaw the cgroup, or SIGCONT everything stopped and found."""
        self.paused = False
        self._resumes += 1
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                self.cgroup.thaw()
            return
        found = await asyncio.to_thread(self.deep_members)
        # Children first, the leader's group last: a job-control shell woken while its
        # job is still stopped would see the stop and give up waiting for it.
        leader = self._leader
        for h in self._stopped | found:
            if h != leader:
                h.signal(signal.SIGCONT)
        await asyncio.sleep(0.01)
        if leader is not None and not self._reaped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(leader.pid, signal.SIGCONT)
        if leader is not None:
            leader.signal(signal.SIGCONT)
        self._stopped.clear()

    async def kill(self, grace_s: float) -> SessionInfo:
        if self.cgroup is not None and (self.paused or self.cgroup.frozen()):
            # Frozen members cannot act on TERM; SIGKILL reaches them all at once.
            self.cgroup.kill()
        if self._stopped:
            await self.resume()
        if self._leader is not None and not self._finalized:
            await procs.terminate(
                self._leader,
                self.id,
                known=self._known,
                grace_s=grace_s,
                leader_unreaped=lambda: not self._reaped,
            )
        if self.cgroup is not None:
            self.cgroup.kill()  # whatever escaped the walk
        self.paused = False
        return await self.wait()

    def sample(self, table: procs.ProcessTable, now: float) -> None:
        """CPU and memory, from the manager's shared /proc scan."""
        if self._leader is not None and not self._reaped:
            use = self._meter.sample(table, self._leader.pid)
            self._stats = SessionStats(use.cpu_percent, use.rss_bytes, use.processes, now)
            if use.handles:
                self._known = use.handles

    def quiet(self, output_within_s: float, cpu_percent: float) -> bool:
        """No output lately and next to no CPU at the last sample."""
        recent = time.monotonic() - self._last_output_mono < output_within_s
        return not recent and self._stats.cpu_percent < cpu_percent and self._stats.sampled_at > 0

    def check(self, idle_after_s: float) -> None:
        """Idle detection and the program's title, once a second."""
        quiet = time.monotonic() - self._last_output_mono
        if self._info.status == "running" and quiet >= idle_after_s:
            self._set_status("idle")
        if self._screen is not None:
            title = self._screen.title
            if title != self._info.terminal_title:
                self._set(terminal_title=title)
                self._notify(self, "title")

    def housekeeping(self) -> None:
        """Also once a second: make the recording durable and pack idle scrollback."""
        if self._recorder is not None:
            self._recorder.flush()
        if self._screen is not None and time.monotonic() - self._last_output_mono > 2.0:
            self._screen.compress()

    def _spawn_task(self, coro: Coroutine[Any, Any, object]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def initial_info(
    session_id: str,
    argv: Sequence[str],
    *,
    cwd: str,
    title: str,
    owner: str,
    mode: Mode,
    record_input: bool,
    cols: int,
    rows: int,
    sandboxed: bool = False,
) -> SessionInfo:
    return SessionInfo(
        id=session_id,
        title=title,
        argv=tuple(argv),
        cwd=cwd,
        owner=owner,
        mode=mode,
        record_input=record_input,
        created_at=time.time(),
        pid=0,
        pid_create_time=0.0,
        cols=cols,
        rows=rows,
        status="running",
        sandboxed=sandboxed,
    )
