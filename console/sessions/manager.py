"""The daemon's sessions: create, find, drive, observe and end them.

One `SessionManager` per daemon, on the daemon's event loop. It owns the state
directory `state_dir/sessions/<id>/` (metadata `meta.json` and the asciicast
recording `output.cast`, both 0600 in a 0700 directory), which outlives the
processes and the daemon: after a restart, sessions whose daemon died are `lost`,
with their recording (and a screen rebuilt from it) still readable.

The manager does not decide who may do what. It records an `owner` per session; the
daemon checks it before acting for an agent (agents act only on their own sessions).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import signal as signal_module
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from console.policy import PolicyConfig

from . import procs
from .attach import DEFAULT_MAX_PENDING, Attachment
from .cgroups import CgroupTree
from .environment import session_environment
from .info import (
    MODES,
    Mode,
    SessionError,
    SessionEvent,
    SessionInfo,
    SessionStats,
    UnknownSession,
)
from .quota import MIB, Recording, to_prune
from .ring import ReadResult
from .session import META, RECORDING, EventKind, Session, check_size, initial_info

log = logging.getLogger(__name__)

READ_MAX = 1024 * 1024  # most bytes one `read` returns
META_SAVE_INTERVAL_S = 5.0
# While every live session is quiet (no output, no CPU at the last sample), usage is
# sampled only every this many ticks: the /proc scan is most of an idle daemon's CPU.
QUIET_SAMPLE_EVERY = 5
QUIET_CPU_PERCENT = 0.5
# The owner of the operator's own sessions (console/daemon/session_service.py). Only these
# get the policy's ``session_env``: an agent's session has the environment its operation
# was approved with, and a variable meant for the operator's shells (a token) is not in it.
OPERATOR_OWNER = "operator"


class SessionManager:
    def __init__(
        self,
        state_dir: Path,
        *,
        ring_bytes: int = 1024 * 1024,
        scrollback_lines: int = 10_000,
        scrollback_bytes: int | None = None,
        idle_after_s: float = 30.0,
        sample_interval_s: float = 1.0,
        recording_max_bytes: int = 1024**3,
        recordings_total_bytes: int = 4096 * MIB,
        policy: Callable[[], PolicyConfig] | None = None,
        attach_max_pending: int = DEFAULT_MAX_PENDING,
        on_event: Callable[[SessionEvent], None] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        if ring_bytes <= 0 or scrollback_lines < 0 or idle_after_s <= 0 or sample_interval_s <= 0:
            raise ValueError("ring_bytes, idle_after_s and sample_interval_s must be positive")
        self.root = Path(state_dir) / "sessions"
        self.ring_bytes = ring_bytes
        self.scrollback_lines = scrollback_lines
        self.scrollback_bytes = scrollback_bytes
        self.idle_after_s = idle_after_s
        self.sample_interval_s = sample_interval_s
        # Without a policy (tests, tools) the two caps above; with one, the policy's
        # ``recording_max_mb`` / ``recordings_total_mb`` and ``session_env``, read live.
        self.recording_max_bytes = recording_max_bytes
        self.recordings_total_bytes = recordings_total_bytes
        self.policy = policy
        self.attach_max_pending = attach_max_pending
        self.on_event = on_event
        self._loop = loop
        self._sessions: dict[str, Session] = {}
        self._saved_at: dict[str, tuple[float, int]] = {}
        self._sampler: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[object]] = set()
        self._ticks_since_sample = 0
        self.cgroups = CgroupTree(None, "not started")

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        """Load sessions left by a previous daemon and start sampling."""
        if self._loop is not None and self._loop is not asyncio.get_running_loop():
            raise RuntimeError("SessionManager must run on the loop it was given")
        self._ensure_root()
        if not self.cgroups.available:
            self.cgroups = await asyncio.to_thread(CgroupTree.create)
            if not self.cgroups.available:
                log.info("sessions pause by process walk: %s", self.cgroups.reason)
        for directory in sorted(self.root.iterdir()):
            if not directory.is_dir() or directory.name in self._sessions:
                continue
            try:
                info = SessionInfo.from_json((directory / META).read_text(encoding="utf-8"))
            except (OSError, ValueError, TypeError) as exc:
                log.warning("skipping session directory %s: %s", directory.name, exc)
                continue
            if info.id != directory.name:
                log.warning("skipping session directory %s: id mismatch", directory.name)
                continue
            session = Session.restore(
                info, directory, notify=self._notify, scrollback_lines=self.scrollback_lines
            )
            self._sessions[info.id] = session
            if info.alive:
                session.mark_lost()
                self._save(session)
                self._end_stray(info)
        if self._sampler is None:
            self._sampler = asyncio.ensure_future(self._sample_forever())

    async def close(self, *, kill: bool = True, grace_s: float = 1.0) -> None:
        """Stop sampling; end running sessions (their terminals die with the daemon
        anyway) and write everything down."""
        if self._sampler is not None:
            self._sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampler
            self._sampler = None
        if kill:
            await asyncio.gather(
                *(s.kill(grace_s) for s in self._sessions.values() if s.alive), return_exceptions=True
            )
        for session in self._sessions.values():
            session.close()
            self._save(session)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.to_thread(self.cgroups.close)

    # -- creating --------------------------------------------------------------------

    def create(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str] | None,
        title: str = "",
        cols: int = 120,
        rows: int = 40,
        owner: str,
        mode: Mode = "interactive",
        record_input: bool = False,
        pass_fds: Sequence[int] = (),
        sandboxed: bool = False,
    ) -> SessionInfo:
        """Start `argv` (taken as given, e.g. already wrapped by the sandbox) on a new
        PTY as session and process-group leader. `env` None means the daemon's.
        Either way the daemon's private variables are dropped and TERM/COLORTERM set
        for the session's own terminal, then the policy's ``session_env`` (the
        operator's own sessions only) and the
        session marker AGENT_CONSOLE_SESSION=<id> are added (environment.py).
        ``sandboxed``: `argv` is the sandbox's (what the session list says of it)."""
        if not argv or not all(isinstance(a, str) and "\0" not in a for a in argv):
            raise SessionError("argv must be a non-empty list of strings without NUL")
        if mode not in MODES:
            raise SessionError(f"mode must be one of {', '.join(MODES)}")
        check_size(cols, rows)
        workdir = Path(cwd)
        if not workdir.is_dir():
            raise SessionError(f"working directory does not exist: {os.fspath(cwd)!r}")
        child_env = dict(os.environ if env is None else env)
        if any("\0" in k or "=" in k or "\0" in v for k, v in child_env.items()):
            raise SessionError("environment names and values must not contain NUL (names not '=')")
        self._ensure_root()
        config = self.policy() if self.policy is not None else None
        self.enforce_quota()  # make room first; never touches live recordings
        session_id, directory = self._new_directory()
        child_env = session_environment(
            child_env,
            daemon_env=os.environ,
            extra=config.session_env if config is not None and owner == OPERATOR_OWNER else (),
            session_id=session_id,
        )
        info = initial_info(
            session_id,
            argv,
            cwd=os.fspath(workdir.resolve()),
            title=title,
            owner=owner,
            mode=mode,
            record_input=record_input,
            cols=cols,
            rows=rows,
            sandboxed=sandboxed,
        )
        cgroup = self.cgroups.for_session(session_id)
        try:
            session = Session.spawn(
                info,
                directory,
                env=child_env,
                record_input=record_input,
                recording_max_bytes=self.recording_caps()[0],
                notify=self._notify,
                ring_bytes=self.ring_bytes,
                scrollback_lines=self.scrollback_lines,
                scrollback_bytes=self.scrollback_bytes,
                attach_max_pending=self.attach_max_pending,
                pass_fds=pass_fds,
                cgroup=cgroup,
            )
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            if cgroup is not None:
                self.cgroups.release(session_id)
            raise
        self._sessions[session_id] = session
        self._save(session)
        self._emit("created", session)
        return session.info()

    # -- finding ---------------------------------------------------------------------

    def get(self, session_id: str) -> SessionInfo:
        return self._get(session_id).info()

    def infos(self, owner: str | None = None) -> list[SessionInfo]:
        infos = [s.info() for s in self._sessions.values()]
        if owner is not None:
            infos = [i for i in infos if i.owner == owner]
        return sorted(infos, key=lambda i: i.created_at)

    def stats(self, session_id: str) -> SessionStats:
        return self._get(session_id).stats

    # -- driving ---------------------------------------------------------------------

    def write(self, session_id: str, data: bytes, *, client_id: str | None = None) -> None:
        """Queue `data` for the program's input. Never blocks: input the program does
        not read piles up to a bound, then `InputOverflow`. A `client_id` attached
        read-only is refused; any other becomes the most recently active client."""
        self._get(session_id).write(bytes(data), client_id)

    def resize(self, session_id: str, cols: int, rows: int, client_id: str) -> None:
        """Record `client_id`'s size; the most recently active client's size is the
        terminal's."""
        self._get(session_id).resize(cols, rows, client_id)

    def signal(self, session_id: str, sig: int) -> None:
        if sig not in {int(s) for s in signal_module.Signals}:
            raise SessionError(f"unknown signal {sig}")
        self._get(session_id).signal(sig)

    @property
    def stop_mode(self) -> str:
        """How a pause stops sessions: "cgroup freeze" or "process walk"."""
        return self.cgroups.mode

    def session(self, session_id: str) -> Session:
        """The live object (for the daemon's tripwire: pause, members, evidence)."""
        return self._get(session_id)

    def sessions(self) -> tuple[Session, ...]:
        return tuple(self._sessions.values())

    async def pause(self, session_id: str, wait_s: float = 1.0) -> bool:
        """Stop every process of the session (cgroup freeze, else a marker walk
        repeated until stable). True once all are stopped."""
        return await self._get(session_id).pause(wait_s)

    async def resume(self, session_id: str) -> None:
        await self._get(session_id).resume()

    async def kill(self, session_id: str, grace_s: float = 3.0) -> SessionInfo:
        """TERM the session's process group and every process of the session, wait
        `grace_s`, KILL what is left; returns once the leader is reaped."""
        return await self._get(session_id).kill(grace_s)

    async def wait(self, session_id: str, timeout: float | None = None) -> SessionInfo:
        """The session's info once it has exited (immediately if it has)."""
        return await asyncio.wait_for(self._get(session_id).wait(), timeout)

    async def remove(self, session_id: str, grace_s: float = 1.0) -> None:
        """Forget a session and delete its directory (recording included), killing
        it first if it still runs."""
        session = self._get(session_id)
        if session.alive:
            await session.kill(grace_s)
        info = session.info()
        session.close()
        self.cgroups.release(session_id)
        self._sessions.pop(session_id, None)
        self._saved_at.pop(session_id, None)
        shutil.rmtree(session.dir, ignore_errors=True)
        self._event(SessionEvent("removed", info))

    def adopt(self, session_id: str, owner: str, mode: Mode = "durable") -> SessionInfo:
        """Give a session a new owner (the operator adopting an agent's session)."""
        if mode not in MODES:
            raise SessionError(f"mode must be one of {', '.join(MODES)}")
        session = self._get(session_id)
        session.set_owner(owner, mode)
        self._save(session)
        return session.info()

    async def release_owner(self, owner: str, grace_s: float = 3.0) -> list[str]:
        """`owner` went away: end its `interactive` sessions (its `durable` ones keep
        running). Returns the ids ended."""
        doomed = [s for s in self._sessions.values() if s.alive and s.info().owner == owner]
        doomed = [s for s in doomed if s.info().mode == "interactive"]
        await asyncio.gather(*(s.kill(grace_s) for s in doomed), return_exceptions=True)
        return [s.id for s in doomed]

    # -- observing -------------------------------------------------------------------

    def read(self, session_id: str, offset: int, max_bytes: int = 65536) -> ReadResult:
        """Output from absolute `offset`, at most `max_bytes` (capped at 1 MiB), with
        how many bytes before it were already dropped from the ring."""
        if not isinstance(offset, int) or not isinstance(max_bytes, int):
            raise SessionError("offset and max_bytes must be integers")
        return self._get(session_id).read(offset, min(max_bytes, READ_MAX))

    def screen_text(self, session_id: str, scrollback: bool = False) -> str:
        """The screen as plain text (untrusted: escape it before display)."""
        return self._get(session_id).screen().text(scrollback=scrollback)

    def recording_path(self, session_id: str) -> Path:
        """The session's asciicast v2 recording (for `sessions replay`)."""
        return self._get(session_id).dir / RECORDING

    def screen_snapshot(self, session_id: str) -> bytes:
        """VT bytes that rebuild the screen in a fresh `Screen` of the session's size."""
        return self._get(session_id).screen().snapshot()

    def attach(self, session_id: str, client_id: str, read_only: bool = False) -> Attachment:
        """A snapshot and the live stream from its offset. Re-attaching with the same
        `client_id` ends the previous attachment."""
        if not client_id:
            raise SessionError("client_id must not be empty")
        return self._get(session_id).attach(client_id, read_only)

    def detach(self, session_id: str, client_id: str) -> None:
        self._get(session_id).detach(client_id)

    # -- recording quota -------------------------------------------------------------

    def recording_caps(self) -> tuple[int, int]:
        """(per-session, total) recording bytes."""
        if self.policy is None:
            return self.recording_max_bytes, self.recordings_total_bytes
        config = self.policy()
        return config.recording_max_mb * MIB, config.recordings_total_mb * MIB

    def recordings(self) -> tuple[Recording, ...]:
        return tuple(
            Recording(s.id, s.info().ended_at or s.info().created_at, s.recording_size(), s.recording_open)
            for s in self._sessions.values()
        )

    def recordings_bytes(self) -> int:
        return sum(r.size for r in self.recordings())

    def prune(self, everything: bool = False) -> tuple[tuple[str, int], ...]:
        """Delete finished recordings, oldest first, down to the total quota (all of
        them with ``everything``); never one still being written. Returns (session,
        bytes freed) for each deleted."""
        chosen = to_prune(self.recordings(), None if everything else self.recording_caps()[1])
        freed: tuple[tuple[str, int], ...] = ()
        for r in chosen:
            session = self._sessions[r.session_id]
            try:
                size = session.prune_recording()
            except SessionError:
                continue
            self._save(session)
            self._emit("status", session)
            freed += ((r.session_id, size),)
        if freed:
            log.info("pruned %d recordings, %d bytes", len(freed), sum(n for _, n in freed))
        return freed

    def enforce_quota(self) -> None:
        with contextlib.suppress(OSError):
            self.prune()

    # -- internals -------------------------------------------------------------------

    def _get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise UnknownSession("no such session")
        return session

    def _ensure_root(self) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = self.root.lstat()
        if not self.root.is_dir() or self.root.is_symlink() or st.st_uid != os.getuid():
            raise SessionError(f"{self.root} is not a directory owned by this user")
        if st.st_mode & 0o077:
            os.chmod(self.root, 0o700)

    def _new_directory(self) -> tuple[str, Path]:
        for _ in range(100):
            session_id = secrets.token_hex(4)
            directory = self.root / session_id
            try:
                directory.mkdir(mode=0o700)
            except FileExistsError:
                continue
            return session_id, directory
        raise SessionError("could not allocate a session id")  # pragma: no cover

    def _save(self, session: Session) -> None:
        info = session.info()
        path = session.dir / META
        tmp = path.with_suffix(".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(info.to_json())
            os.replace(tmp, path)
        except OSError as exc:
            log.error("could not save session %s metadata: %s", session.id, exc)
            return
        session.meta_dirty = False
        self._saved_at[session.id] = (time.monotonic(), info.output_bytes)

    def _notify(self, session: Session, kind: EventKind) -> None:
        if kind in ("status", "exited", "lost"):
            self._save(session)
        if session.id in self._sessions:
            self._emit(kind, session)

    def _emit(self, kind: EventKind, session: Session) -> None:
        self._event(SessionEvent(kind, session.info()))

    def _event(self, event: SessionEvent) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception:
            log.exception("session event handler failed")

    def _end_stray(self, info: SessionInfo) -> None:
        """A `lost` session's processes may have outlived the old daemon (without a
        terminal); end them if the recorded leader is still that process."""
        leader = procs.ProcHandle(info.pid, info.pid_create_time)
        if info.pid <= 0 or not leader.alive():
            return
        task = asyncio.ensure_future(
            procs.terminate(leader, info.id, grace_s=1.0, leader_unreaped=lambda: False)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _sample_forever(self) -> None:
        while True:
            await asyncio.sleep(self.sample_interval_s)
            try:
                # The scan reads every process's stat file on the machine (a few ms of
                # CPU with a hundred): in a worker thread, so the requests the loop
                # serves meanwhile (a session's proxied connections among them) are not
                # held up behind it. The table is a snapshot; the loop alone reads it.
                table = await asyncio.to_thread(procs.ProcessTable) if self._sample_due() else None
                self._tick(table)
            except Exception:
                log.exception("session sampling failed")

    def _sample_due(self) -> bool:
        """Whether this tick samples CPU/memory: when a session is busy, and every fifth
        tick while all are quiet."""
        live = [s for s in self._sessions.values() if s.alive]
        self._ticks_since_sample += 1
        quiet = all(s.quiet(self.sample_interval_s * 1.5, QUIET_CPU_PERCENT) for s in live)
        if live and (not quiet or self._ticks_since_sample >= QUIET_SAMPLE_EVERY):
            self._ticks_since_sample = 0
            return True
        return False

    def _tick(self, table: procs.ProcessTable | None) -> None:
        """Once a second: CPU/memory per live session from ``table`` (one /proc scan for
        all, when :meth:`_sample_due`), idle detection, recording flush, scrollback
        packing, metadata."""
        now = time.time()
        live = [s for s in self._sessions.values() if s.alive]
        if table is not None:
            for session in live:
                session.sample(table, now)
        for session in live:
            session.check(self.idle_after_s)
        self.enforce_quota()
        mono = time.monotonic()
        for session in self._sessions.values():
            if session.cgroup is not None and not session.alive and self.cgroups.release(session.id):
                session.cgroup = None
            session.housekeeping()
            saved = self._saved_at.get(session.id, (0.0, -1))
            if session.meta_dirty or (
                session.info().output_bytes != saved[1] and mono - saved[0] >= META_SAVE_INTERVAL_S
            ):
                self._save(session)
