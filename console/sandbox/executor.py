"""Running one approved captured operation: start, feed, read, stop, classify.

The lifecycle: stdin (at most 1 MiB) is written and closed; stdout and stderr are read
concurrently in chunks, each passed to ``on_output`` with its absolute offset and kept
as head and tail up to ``capture_bytes``; the deadline, a cancel request or more than
``max_bytes`` of output (both streams together) stops the command with SIGTERM to every
process of the sandbox, ``term_grace_s`` to finish, then SIGKILL. bwrap's pid namespace
and ``--die-with-parent`` make the kill total: when the sandbox's init dies the kernel
kills everything left in the namespace, grandchildren included.

Statuses, outcomes (state / kind) and what ``agent-console exec`` exits with. The
recorded exit code is the command's, 128+N for a death by signal N, as shells report
it; when the console ended the command or never started it, the CLI exits with a code
of its own instead (console/cli/exec_commands.py), so that the SIGTERM sent at the
output limit (recorded 143) is not mistaken for the command's own SIGTERM, and a
missing executable exits the same whether the daemon's parse or the sandbox found it:

============  ===========================================================  =========
status        state / kind (recorded exit code)                            exec CLI
============  ===========================================================  =========
exited 0      completed / success                                          0
exited N      failed / application_failure (1)                             N
signaled      failed / application_failure (1)                             128+N
timed_out     failed / timed_out                                           124
output_limit  failed / output_limit                                        125
cancelled     cancelled / cancelled                                        128+N
not_started   failed / executable_not_found (127)                          122
not_started   failed / sandbox_setup_failure (126)                         123
not_started   denied / enforcement_denied, denial ``content_changed``      126
              (126): a bound file is not what the fingerprint names
              (content_pins.py)
any           the process's own, with the denial ``refused: protected``     126
              first: it left a protected name it was not given, which
              was removed (guards.py)
============  ===========================================================  =========

(1) enforcement_degraded when degraded. The CLI also exits 126 when the request is
denied, 122 when the daemon's parse finds the executable missing (an invalid_input
problem ``executable_not_found``), 2 for any other invalid operation and 3 when the
daemon is unreachable.

Denials recognised in the output are listed in ``ExecResult.denials``; for a command
that did not succeed the first is also the outcome's ``denial``. They do not change the
kind: the contract has no running → denied transition, and text the command printed
must not be able to impersonate an enforcement decision. The kind says what happened to
the process; the denials say what the boundary probably stopped.

A degraded run (no sandbox, ``allow_degraded``) that exits 0 is a success — the
contract allows nothing else for a zero exit — and its enforcement says degraded with
the reason; when it fails, the kind is `enforcement_degraded`, so nobody mistakes the
unconfined failure for the sandboxed one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from enum import StrEnum
from typing import IO, Any

import psutil

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.operation import MAX_STDIN_BYTES, Operation
from console.contract.outcome import (
    CONTENT_CHANGED,
    Denial,
    DenialSource,
    Enforcement,
    Exit,
    NextAction,
    Outcome,
    OutcomeKind,
    State,
)
from console.policy.evaluate import Authorization
from console.sandbox import guards
from console.sandbox.bwrap import BindMode
from console.sandbox.capture import OutputChunk, Stream, StreamCapture, StreamResult
from console.sandbox.diagnostics import recognise
from console.sandbox.plan import ContentChangedError, Prepared, SandboxConfig, SandboxSetupError, prepare
from console.sandbox.probing import BACKEND, SandboxProbe
from console.sandbox.profile import Egress

EXIT_NOT_FOUND = 127
EXIT_SETUP_FAILURE = 126


class Status(StrEnum):
    EXITED = "exited"
    SIGNALED = "signaled"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    OUTPUT_LIMIT = "output_limit"
    NOT_STARTED = "not_started"


class Unauthorized(PermissionError):
    """The authorization does not cover this exact operation (fingerprint and workspace)."""


@dataclasses.dataclass(frozen=True)
class ExecResult:
    outcome: Outcome
    status: Status
    exit_code: int | None
    signal: str
    duration_ms: float
    stdout: StreamResult
    stderr: StreamResult
    denials: tuple[Denial, ...] = ()
    enforcement: Enforcement = dataclasses.field(default_factory=Enforcement)
    reason: str = ""  # why it did not start (setup failure), bounded and printable
    temp_root_removed: bool = True
    # Whether the command could have written a canonical path, by its mounts alone: a
    # change it could not have made (a pinned protected file) is another process's.
    could_write: Callable[[str], bool] | None = dataclasses.field(default=None, compare=False, repr=False)
    # Protected names the run made without approval, removed after it (guards.py).
    refused: tuple[guards.Refused, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-able; see :meth:`StreamResult.to_dict` for how bytes are given."""
        return {
            "status": self.status.value,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "duration_ms": round(self.duration_ms, 3),
            "outcome": self.outcome.to_dict(),
            "stdout": self.stdout.to_dict(),
            "stderr": self.stderr.to_dict(),
            "denials": [d.to_dict() for d in self.denials],
            "enforcement": self.enforcement.to_dict(),
            "reason": self.reason,
            "temp_root_removed": self.temp_root_removed,
        }


def _bounded(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)[:300]


def _not_started(kind: OutcomeKind, reason: str, enforcement: Enforcement, started: float) -> ExecResult:
    code = EXIT_NOT_FOUND if kind is OutcomeKind.EXECUTABLE_NOT_FOUND else EXIT_SETUP_FAILURE
    outcome = Outcome(State.FAILED, kind, exit=Exit(code), enforcement=enforcement)
    outcome.validate()
    return ExecResult(
        outcome=outcome,
        status=Status.NOT_STARTED,
        exit_code=code,
        signal="",
        duration_ms=(time.monotonic() - started) * 1000,
        stdout=StreamResult(),
        stderr=StreamResult(),
        enforcement=enforcement,
        reason=_bounded(reason),
    )


async def execute(
    op: Operation,
    auth: Authorization,
    cfg: SandboxConfig,
    probe: SandboxProbe,
    on_output: Callable[[OutputChunk], None] | None = None,
    cancel: asyncio.Event | None = None,
    egress: Egress | None = None,
    *,
    on_start: Callable[[int], None] | None = None,
    others: Callable[[str], bool] | None = None,
) -> ExecResult:
    """Run ``op`` as authorized and return its bounded result (``egress``: its brokered
    network, when it asks for the network).

    ``on_start(pid)``: the run's first process has started (its pid: what it writes is
    the run's). ``others(path)``: a protected path someone else is known to have made
    during the run; every other protected name the run left behind without approval is
    removed and refused (guards.py).

    Raises :class:`Unauthorized` unless ``auth.permits(op)``. ``on_output`` is called on
    the event loop for every chunk and must not block; if it raises, the command is
    killed and the exception propagates. Cancelling the calling task kills the command
    too (SIGKILL, no grace) and cleans up before re-raising.
    """
    if not auth.permits(op):
        raise Unauthorized("the authorization is for a different operation or workspace")
    if len(op.stdin) > MAX_STDIN_BYTES:
        raise ValueError(f"stdin is larger than {MAX_STDIN_BYTES} bytes")
    started = time.monotonic()
    preparing = asyncio.ensure_future(
        asyncio.to_thread(functools.partial(prepare, op, cfg, probe, egress=egress))
    )
    try:
        prepared = await asyncio.shield(preparing)
    except asyncio.CancelledError:
        # The thread finishes anyway; whatever it made must still be cleaned up.
        preparing.add_done_callback(_close_when_prepared)
        raise
    except ContentChangedError as exc:
        return _content_changed(exc, started)
    except SandboxSetupError as exc:
        failed = Enforcement(backend=BACKEND, level="none", degraded=False, downgrade_reason="")
        return _not_started(OutcomeKind.SANDBOX_SETUP_FAILURE, str(exc), failed, started)
    try:
        result = await _Run(op, cfg, prepared, on_output, cancel, started, on_start).run()
        # --- guards: no protected name left behind that the operator did not approve ---
        if prepared.sandboxed and result.status is not Status.NOT_STARTED:
            refused = await asyncio.shield(asyncio.to_thread(_sweep, op, cfg, prepared, others))
            result = _with_refused(result, refused)
    finally:
        removed = await asyncio.shield(asyncio.to_thread(prepared.close))
    return dataclasses.replace(_with_removed(result, removed), could_write=prepared.writable)


def _sweep(
    op: Operation, cfg: SandboxConfig, prepared: Prepared, others: Callable[[str], bool] | None
) -> list[guards.Refused]:
    writable = tuple(b.path for b in prepared.binds if b.mode is BindMode.WRITABLE)
    return guards.sweep(op, cfg.protected, prepared.protected, writable, prepared.hidden, others=others)


def _with_refused(result: ExecResult, refused: list[guards.Refused]) -> ExecResult:
    """The outcome says ``refused: protected`` (its denial, first among the denials),
    whatever the process's own end was."""
    if not refused:
        return result
    denial = guards.denial(refused)
    outcome = dataclasses.replace(result.outcome, denial=denial)
    outcome.validate()
    return dataclasses.replace(
        result, outcome=outcome, denials=(denial, *result.denials), refused=tuple(refused)
    )


def _content_changed(exc: ContentChangedError, started: float) -> ExecResult:
    """Denied before it started: what would run is not what was approved."""
    denial = Denial(
        Capability(CapabilityKind.PROCESS_SPAWN),
        DenialSource.APPROVAL,
        CONTENT_CHANGED,
        recoverable=True,
        next_action=NextAction.REQUEST_APPROVAL,
    )
    enforcement = Enforcement(backend=BACKEND, level="none")
    outcome = Outcome(State.DENIED, OutcomeKind.ENFORCEMENT_DENIED, denial=denial, enforcement=enforcement)
    outcome.validate()
    return ExecResult(
        outcome=outcome,
        status=Status.NOT_STARTED,
        exit_code=EXIT_SETUP_FAILURE,
        signal="",
        duration_ms=(time.monotonic() - started) * 1000,
        stdout=StreamResult(),
        stderr=StreamResult(),
        denials=(denial,),
        enforcement=enforcement,
        reason=_bounded(str(exc)),
    )


def _with_removed(result: ExecResult, removed: bool) -> ExecResult:
    return result if removed else dataclasses.replace(result, temp_root_removed=False)


def _close_when_prepared(done: asyncio.Future[Prepared]) -> None:
    if not done.cancelled() and done.exception() is None:
        done.result().close()


_EXECVP = re.compile(rb"bwrap: execvp [^\n]*: ([A-Za-z ]+)\n?")
_BWRAP_LINE_MAX = 4096


class _Run:
    """One started process and the event-loop callbacks around it.

    Plain :class:`subprocess.Popen` with non-blocking pipes and a pidfd rather than
    asyncio's subprocess layer: there, ``wait()`` also waits for the pipes to close, so a
    grandchild that escaped an unconfined run while holding stdout would keep the exit
    from ever being seen. Here the exit (pidfd readable) and end-of-output are separate,
    and draining after the exit is bounded by ``drain_grace_s``.
    """

    def __init__(
        self,
        op: Operation,
        cfg: SandboxConfig,
        prepared: Prepared,
        on_output: Callable[[OutputChunk], None] | None,
        cancel: asyncio.Event | None,
        started: float,
        on_start: Callable[[int], None] | None = None,
    ) -> None:
        self.on_start = on_start
        self.op = op
        self.cfg = cfg
        self.prepared = prepared
        self.on_output = on_output
        self.cancel = cancel
        self.started = started
        self.captures = {
            Stream.STDOUT: StreamCapture(op.output.capture_bytes),
            Stream.STDERR: StreamCapture(op.output.capture_bytes),
        }
        self.delivered = 0  # bytes of both streams passed on, never above max_bytes
        self.stderr_start = bytearray()  # bwrap's own complaint, whatever capture_bytes is
        self.limit_hit = asyncio.Event()
        self.callback_error: Exception | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.loop = asyncio.get_running_loop()
        self.fds: list[int] = []  # registered with the loop, closed at the end

    async def run(self) -> ExecResult:
        p = self.prepared
        try:
            self.proc = proc = subprocess.Popen(
                p.argv,
                stdin=subprocess.PIPE if self.op.stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=p.env,
                cwd=p.cwd,
                start_new_session=True,
                close_fds=True,
                pass_fds=p.pass_fds,
            )
        except OSError as exc:
            # Unconfined, argv[0] is the command itself; sandboxed, it is bwrap.
            kind = OutcomeKind.SANDBOX_SETUP_FAILURE if p.sandboxed else OutcomeKind.EXECUTABLE_NOT_FOUND
            return _not_started(kind, f"could not start: {exc.strerror}", p.enforcement, self.started)
        if self.on_start is not None:
            self.on_start(proc.pid)  # before it can run anything
        try:
            # The sandbox waits, set up, until its mounts are checked (console/sandbox/verify.py).
            await asyncio.to_thread(p.confirm, proc.pid)
        except ContentChangedError as exc:  # a pin was not in place: nothing ran
            proc.kill()
            proc.communicate()
            return _content_changed(exc, self.started)
        except SandboxSetupError as exc:
            proc.kill()
            proc.communicate()
            return _not_started(OutcomeKind.SANDBOX_SETUP_FAILURE, str(exc), p.enforcement, self.started)
        except BaseException:
            proc.kill()
            proc.communicate()
            raise
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError as exc:
            proc.kill()
            proc.communicate()
            reason = f"cannot watch the process: {exc.strerror}"
            return _not_started(OutcomeKind.SANDBOX_SETUP_FAILURE, reason, p.enforcement, self.started)

        exited: asyncio.Future[None] = self.loop.create_future()

        def on_exit() -> None:
            self._unwatch(pidfd)
            if not exited.done():
                exited.set_result(None)

        stop: Status | None = None
        try:
            self._watch(pidfd, on_exit)
            eofs = [self._read(proc.stdout, Stream.STDOUT), self._read(proc.stderr, Stream.STDERR)]
            if proc.stdin is not None:
                self._feed(proc.stdin)
            stop = await self._supervise(exited)
            if stop is not None:
                await self._stop(exited, self.cfg.term_grace_s)
            await asyncio.wait(eofs, timeout=self.cfg.drain_grace_s)
        except BaseException:
            await asyncio.shield(self._stop(exited, 0))
            raise
        finally:
            self._unwatch_all()
            returncode = proc.wait()  # exited: reaps at once
        if self.callback_error is not None:
            raise self.callback_error
        return self._result(stop, returncode)

    # -- event-loop plumbing ----------------------------------------------------------

    def _watch(self, fd: int, callback: Callable[[], object], *, write: bool = False) -> None:
        self.fds.append(fd)
        (self.loop.add_writer if write else self.loop.add_reader)(fd, callback)

    def _unwatch(self, fd: int) -> None:
        if fd in self.fds:
            self.fds.remove(fd)
            self.loop.remove_reader(fd)
            self.loop.remove_writer(fd)
            os.close(fd)

    def _unwatch_all(self) -> None:
        for fd in list(self.fds):
            self._unwatch(fd)

    def _read(self, pipe: IO[bytes] | None, stream: Stream) -> asyncio.Future[None]:
        assert pipe is not None
        fd = os.dup(pipe.fileno())
        pipe.close()
        os.set_blocking(fd, False)
        eof: asyncio.Future[None] = self.loop.create_future()

        def readable() -> None:
            try:
                data = os.read(fd, self.cfg.chunk_bytes)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._unwatch(fd)
                if not eof.done():
                    eof.set_result(None)
                return
            self._take(stream, data)

        self._watch(fd, readable)
        return eof

    def _feed(self, pipe: IO[bytes]) -> None:
        fd = os.dup(pipe.fileno())
        pipe.close()
        os.set_blocking(fd, False)
        view = memoryview(self.op.stdin)
        pos = 0

        def writable() -> None:
            nonlocal pos
            try:
                pos += os.write(fd, view[pos : pos + 65_536])
            except BlockingIOError:
                return
            except OSError:
                pos = len(view)  # the command closed its stdin: nothing more to give
            if pos >= len(view):
                self._unwatch(fd)

        self._watch(fd, writable, write=True)

    def _take(self, stream: Stream, data: bytes) -> None:
        capture = self.captures[stream]
        offset = capture.total
        if stream is Stream.STDERR and offset < _BWRAP_LINE_MAX:
            self.stderr_start += data[: _BWRAP_LINE_MAX - offset]
        room = self.op.output.max_bytes - self.delivered
        kept = data[: max(room, 0)]
        if len(kept) < len(data):
            self.limit_hit.set()
        capture.add(kept)
        capture.total += len(data) - len(kept)  # counted, neither kept nor passed on
        if kept:
            self.delivered += len(kept)
            self._deliver(OutputChunk(stream, offset, kept))

    def _deliver(self, chunk: OutputChunk) -> None:
        if self.on_output is None or self.callback_error is not None:
            return
        try:
            self.on_output(chunk)
        except Exception as exc:
            self.callback_error = exc
            self.limit_hit.set()  # wakes the supervisor, which stops the command

    # -- supervision --------------------------------------------------------------------

    async def _supervise(self, exited: asyncio.Future[None]) -> Status | None:
        """Wait for the exit, the deadline, a cancel or the output limit; None on exit."""
        deadline = self.started + self.op.timeout_ms / 1000
        cancel_task = asyncio.ensure_future(self.cancel.wait()) if self.cancel else None
        limit_task = asyncio.ensure_future(self.limit_hit.wait())
        watched: set[asyncio.Future[Any]] = {exited, limit_task}
        if cancel_task is not None:
            watched.add(cancel_task)
        try:
            timeout = max(0.0, deadline - time.monotonic())
            done, _ = await asyncio.wait(watched, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (limit_task, cancel_task):
                if task is not None:
                    task.cancel()
        if self.callback_error is not None:
            return Status.CANCELLED
        if limit_task in done:
            return Status.OUTPUT_LIMIT
        if cancel_task is not None and cancel_task in done:
            return Status.CANCELLED
        if exited in done:
            return None
        return Status.TIMED_OUT

    async def _stop(self, exited: asyncio.Future[None], grace: float) -> None:
        """TERM every process of the run, wait ``grace``, then KILL whatever is left."""
        assert self.proc is not None
        if exited.done():
            return
        pid, sandboxed = self.proc.pid, self.prepared.sandboxed
        tree = _tree(pid)
        if grace > 0:
            _signal_all(tree, signal.SIGTERM, pid, sandboxed)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(exited), grace)
        if not exited.done():
            _signal_all([*tree, *_tree(pid)], signal.SIGKILL, pid, sandboxed)
            await asyncio.shield(exited)

    def _result(self, stop: Status | None, returncode: int | None) -> ExecResult:
        p = self.prepared
        stdout = self.captures[Stream.STDOUT].result()
        stderr = self.captures[Stream.STDERR].result()
        code, sig = _exit(returncode, p.sandboxed)
        if stop is None and p.sandboxed and code == 1 and not stdout.total_bytes:
            setup = _bwrap_failure(bytes(self.stderr_start), stderr.total_bytes)
            replaced = p.pin_refused(bytes(self.stderr_start)) if setup is not None else None
            if replaced is not None:
                return _content_changed(replaced, self.started)
            if setup is not None:
                kind, reason = setup
                return _not_started(kind, reason, p.enforcement, self.started)
        status = stop or (Status.SIGNALED if sig else Status.EXITED)
        if status is Status.EXITED and code == 0:
            state, kind = State.COMPLETED, OutcomeKind.SUCCESS
        elif status is Status.CANCELLED:
            state, kind = State.CANCELLED, OutcomeKind.CANCELLED
        elif status is Status.TIMED_OUT:
            state, kind = State.FAILED, OutcomeKind.TIMED_OUT
        elif status is Status.OUTPUT_LIMIT:
            state, kind = State.FAILED, OutcomeKind.OUTPUT_LIMIT
        elif p.enforcement.degraded:
            state, kind = State.FAILED, OutcomeKind.ENFORCEMENT_DEGRADED
        else:
            state, kind = State.FAILED, OutcomeKind.APPLICATION_FAILURE
        # Also for a success: a cache write that failed quietly is still worth knowing.
        denials = recognise([stderr.head, stderr.tail, stdout.head, stdout.tail], p, self.op.cwd_path)
        outcome = Outcome(
            state=state,
            kind=kind,
            process_id=str(self.proc.pid) if self.proc else "",
            exit=Exit(code if code is not None else -1, sig),
            denial=denials[0] if denials and state is not State.COMPLETED else None,
            enforcement=p.enforcement,
        )
        outcome.validate()
        return ExecResult(
            outcome=outcome,
            status=status,
            exit_code=code,
            signal=sig,
            duration_ms=(time.monotonic() - self.started) * 1000,
            stdout=stdout,
            stderr=stderr,
            denials=tuple(denials),
            enforcement=p.enforcement,
        )


def _exit(returncode: int | None, sandboxed: bool) -> tuple[int | None, str]:
    """(exit code, signal name); a signal death is reported as 128+N.

    bwrap itself reports its command's death by signal N as exit 128+N, so inside the
    sandbox a command that exits 130 on purpose reads as SIGINT, as it would to a shell.
    """
    if returncode is None:
        return None, ""
    if returncode < 0:
        return 128 - returncode, _signal_name(-returncode)
    if sandboxed and 128 < returncode < 128 + 65:
        return returncode, _signal_name(returncode - 128)
    return returncode, ""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return ""


def _bwrap_failure(start: bytes, total: int) -> tuple[OutcomeKind, str] | None:
    """bwrap's own one-line complaint (exit 1, nothing on stdout), if that is all there was.

    `bwrap: execvp X: No such file or directory` means the executable is missing inside
    the sandbox; any other `bwrap: ` line is a setup failure. A command can print such a
    line itself, but only to make its own failure look like another failure.
    """
    if total != len(start) or not start.startswith(b"bwrap: ") or start.count(b"\n") > 1:
        return None
    if _EXECVP.fullmatch(start):
        return (
            OutcomeKind.EXECUTABLE_NOT_FOUND,
            "the executable does not exist (or cannot run) in the sandbox",
        )
    return OutcomeKind.SANDBOX_SETUP_FAILURE, start.decode("utf-8", "replace").strip()


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _signal_all(procs: list[psutil.Process], sig: int, leader: int, sandboxed: bool) -> None:
    """Signal the snapshot (psutil refuses a reused pid), parents first, and the group.

    Parents first: a parent that handles TERM must have it pending before its children
    die, or it may see them exit, finish normally, and never run its handler.
    """
    for proc in procs:
        if sig == signal.SIGTERM and sandboxed and proc.pid == leader:
            # The outer bwrap dies on TERM and takes the namespace with it at once;
            # the command gets its grace first.
            continue
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)
    if not sandboxed:
        with contextlib.suppress(OSError):
            os.killpg(leader, sig)
