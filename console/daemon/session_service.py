"""Sessions as the daemon serves them: who owns what, sandboxing, attach streams, status.

An approved ``interactive`` or ``durable`` operation becomes a session running in the
sandbox (with its own PTY, so no ``--new-session``), with the egress broker when it asks
for the network. The operator's own sessions (``sessions.new``, ``agent-console run``)
are confined too (console/daemon/confined.py): the sandbox, the workspace writable, an
agent's own state, the agent socket, brokered network, and an identity of their own
that every process inside has. Only the operator can start one unconfined, by saying so
(``unconfined``), and that is recorded. An agent reaches only the
sessions of its identity (console/daemon/identity.py): the owner is ``agent:<agent id>``,
never the session id the operation names (that is a label). When the last connection
holding an owner closes, that owner's ``interactive`` sessions end; ``durable`` ones
keep running.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import shlex
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import msgspec

from console.contract.operation import Operation
from console.daemon import confined
from console.daemon.egress import EgressRun, RunContext
from console.daemon.errors import InvalidParams, NotFound, ServiceError, Unavailable
from console.daemon.events import EventHub
from console.locations import Locations
from console.protocol.events import SessionChanged
from console.protocol.notifications import SessionEnded, SessionOutputBytes, SessionResized, SessionSnapshot
from console.protocol.procs import ancestry
from console.protocol.sessions import SessionObject
from console.protocol.status import SessionsStatus
from console.sandbox import Prepared, SandboxSetupError, SandboxUnavailable, prepare
from console.sandbox.profile import Egress, Profile
from console.sessions import (
    Ended,
    Output,
    Resized,
    SessionError,
    SessionEvent,
    SessionInfo,
    Snapshot,
    UnknownSession,
)
from console.sessions.cgroups import WALK_MODE
from console.store import command_line
from console.watch import AttributionToken

if TYPE_CHECKING:
    from console.daemon.connection import Connection
    from console.daemon.execution import ExecutionService
    from console.daemon.identity import Agent, AgentRegistry
    from console.daemon.ports import PendingView, SessionWatch, TripwireHold
    from console.daemon.session_control import ManagedSessions
    from console.daemon.workspaces import WorkspaceTrust

log = logging.getLogger("agent-console.sessions")

OPERATOR = "operator"
# Stop pulling from an attachment while this many frames wait for the client: the
# attachment then falls behind and resyncs with a snapshot, and the PTY never waits.
MAX_BACKLOG_FRAMES = 64
# The kernel's share of an attached client's stream: whole output frames (a flood's are
# about 350 KB; the largest, 1 MiB of output, is 1.4 MB as base64), so one send a loop
# turn moves what waits (Connection.widen_send_buffer says why that matters).
ATTACH_SEND_BUFFER = 2 * 1024 * 1024


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class SessionService:
    def __init__(
        self,
        events: EventHub,
        sessions: ManagedSessions,
        *,
        pending: PendingView,
        execution: ExecutionService,
        watch: SessionWatch,
        tripwire: TripwireHold,
        agents: AgentRegistry,
        workspaces: WorkspaceTrust,
        loc: Locations,
    ) -> None:
        self.events = events
        self.agents = agents
        self.workspaces = workspaces
        self.loc = loc
        self._egress: dict[str, EgressRun] = {}
        self.watch = watch
        self.tripwire = tripwire
        self._tokens: dict[str, AttributionToken] = {}
        self.pending = pending
        self.execution = execution
        self.manager = sessions.manager
        sessions.listen(on_event=self._on_event, on_changed=self.changed)
        self._prepared: dict[str, Prepared] = {}
        self._holders: Counter[str] = Counter()  # owner -> live connections holding it
        self._forwarders: dict[tuple[int, str], asyncio.Task[None]] = {}
        self._closing: set[asyncio.Future[None]] = set()

    async def start(self) -> None:
        await self.manager.start()

    async def close(self) -> None:
        for task in self._forwarders.values():
            task.cancel()
        await self.manager.close(kill=True)
        for prepared in self._prepared.values():
            prepared.close()
        for run in list(self._egress.values()):
            await self.execution.egress.close(run)
        self._egress.clear()
        await asyncio.gather(*self._closing, return_exceptions=True)

    # ------------------------------------------------------------------ views

    def awaiting_approval(self, info: SessionInfo) -> bool:
        """A request asked *from this session* waits: its session id is this session's
        (``$AGENT_CONSOLE_SESSION``), or it came from a process of this session. Another
        request of the same agent elsewhere says nothing about this session."""
        if not info.owner.startswith("agent:"):
            return False
        agent = info.owner.removeprefix("agent:")
        for p in self.pending.waiting_of(agent):
            if p.op.session_id == info.id or any(st.pid == info.pid for st in ancestry(p.peer_pid)):
                return True
        return False

    def to_wire(self, info: SessionInfo) -> SessionObject:
        """The session as clients see it; converted, so a field its type does not describe
        is a daemon bug caught here."""
        out = asdict(info)
        paused = self.tripwire.holds(info.id)
        if info.alive and paused:
            # Said as it is: frozen in its cgroup, or stopped by SIGSTOP, process by process.
            try:
                mode = self.manager.session(info.id).stop_mode
            except SessionError:
                mode = self.manager.stop_mode
            out["status_text"] = f"paused by tripwire ({'SIGSTOP, ' if mode == WALK_MODE else ''}{mode})"
        elif info.alive and self.awaiting_approval(info):
            out["status_text"] = "awaiting approval"
        else:
            out["status_text"] = info.status_text
        try:
            stats = self.manager.stats(info.id)
            out["stats"] = asdict(stats)
        except SessionError:
            out["stats"] = None
        return msgspec.convert(out, SessionObject)

    def status(self) -> SessionsStatus:
        infos = self.manager.infos()
        alive = sum(1 for i in infos if i.alive)
        mode = self.manager.stop_mode
        return SessionsStatus(
            summary=f"{alive} running, {len(infos) - alive} ended; pause by {mode}",
            running=alive,
            total=len(infos),
            pause_mode=mode,
            pause_mode_reason=self.manager.cgroups.reason,
        )

    def changed(self, session_id: str) -> None:
        """Tell subscribers a session's state changed outside the session manager."""
        try:
            info = self.manager.get(session_id)
        except SessionError:
            return
        self.events.publish(SessionChanged(change="status", session=self.to_wire(info)))

    def _on_event(self, event: SessionEvent) -> None:
        if event.kind in ("exited", "lost", "removed"):
            prepared = self._prepared.pop(event.session.id, None)
            if prepared is not None:
                prepared.close()
            token = self._tokens.pop(event.session.id, None)
            if token is not None:
                self.watch.end(token)
            run = self._egress.pop(event.session.id, None)
            if run is not None:
                task = asyncio.ensure_future(self.execution.egress.close(run))
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
        self.events.publish(SessionChanged(change=event.kind, session=self.to_wire(event.session)))

    # ------------------------------------------------------------------ ownership

    def hold(self, conn: Connection, owner: str) -> None:
        """``conn`` acts for ``owner`` until it closes."""
        if owner in conn.session_owners:
            return
        conn.session_owners.add(owner)
        self._holders[owner] += 1
        if len(conn.session_owners) == 1:
            conn.on_close.append(lambda: self._release(conn))

    async def _release(self, conn: Connection) -> None:
        for key in [k for k in self._forwarders if k[0] == conn.id]:
            self._stop_forwarder(*key)
        for owner in conn.session_owners:
            self._holders[owner] -= 1
            if self._holders[owner] <= 0:
                del self._holders[owner]
                ended = await self.manager.release_owner(owner)
                if ended:
                    log.info("ended %d interactive sessions of %s (its agent went away)", len(ended), owner)

    def check_access(self, conn: Connection, session_id: str) -> SessionInfo:
        try:
            info = self.manager.get(session_id)
        except UnknownSession:
            raise NotFound(f"no session {session_id}") from None
        if conn.role.value != "operator" and info.owner not in conn.session_owners:
            raise NotFound(f"no session {session_id} of yours")
        return info

    # ------------------------------------------------------------------ creating

    async def start_for_operation(
        self, op: Operation, conn: Connection, cols: int = 120, rows: int = 40, request_id: str = ""
    ) -> SessionObject:
        """Run an approved interactive/durable operation as a sandboxed session; the
        session's changes are recorded against ``request_id`` too, so the request's history
        entry shows what its session did."""
        agent = conn.agent.id if conn.agent is not None else ""
        run = await self.execution.open_egress(
            op, agent=agent, label=f"the session of request {request_id}", request_id=request_id
        )
        try:
            info, prepared = self._spawn(
                op,
                title=op.justification[:200],
                cols=cols,
                rows=rows,
                owner=conn.owner,
                egress=None if run is None else Egress(run.socket),
            )
        except BaseException:
            if run is not None:
                await self.execution.egress.close(run)
            raise
        if run is not None:
            self._egress[info.id] = run
        self._attribute(info, op.workspace_root, label=command_line(op))
        if request_id:
            self.watch.started_by(info.id, request_id)
            self._record_start(request_id, op, info, sandboxed=prepared.sandboxed)
        self.hold(conn, conn.owner)
        return self.to_wire(info)

    def _spawn(
        self,
        op: Operation,
        *,
        title: str,
        cols: int,
        rows: int,
        owner: str,
        egress: Egress | None,
        profile: Profile | None = None,
        on_spawned: Callable[[SessionInfo], None] | None = None,
    ) -> tuple[SessionInfo, Prepared]:
        """Prepare ``op``'s sandbox, start it on a PTY and check its mounts before it runs."""
        probe = self.execution.probe
        if probe is None:
            raise Unavailable("the sandbox probe has not finished; try again")
        try:
            prepared = prepare(
                op, self.execution.config(), probe, terminal=True, profile=profile, egress=egress
            )
        except (SandboxUnavailable, SandboxSetupError) as exc:
            raise Unavailable(f"the session could not be sandboxed: {exc}") from None
        try:
            info = self.manager.create(
                prepared.argv,
                cwd=prepared.cwd,
                env=prepared.env,
                title=title,
                cols=cols,
                rows=rows,
                owner=owner,
                mode=op.mode.value,  # type: ignore[arg-type]  # the enum's values are the Literal's
                pass_fds=prepared.pass_fds,
                sandboxed=prepared.sandboxed,
            )
        except SessionError as exc:
            prepared.close()
            raise Unavailable(f"the session could not start: {exc}") from None
        self._prepared[info.id] = prepared
        if on_spawned is not None:
            on_spawned(info)
        try:
            # The sandbox waits, set up, until its mounts are checked (console/sandbox/verify.py);
            # on a mismatch it is killed before the command runs, and the session ends.
            prepared.confirm(info.pid)
        except SandboxSetupError as exc:
            raise Unavailable(f"the session could not be sandboxed: {exc}") from None
        return info, prepared

    async def start_confined(
        self,
        argv: list[str],
        cwd: str,
        *,
        title: str,
        cols: int,
        rows: int,
        env: dict[str, str],
        agent: str = "",
    ) -> SessionObject:
        """The operator's program (an agent CLI) as a confined session in workspace ``cwd``
        (console/daemon/confined.py). The workspace becomes trusted: the operator chose it."""
        workspace = self.workspaces.check_root(os.path.realpath(cwd))
        refused = self.workspaces.limits.refusal(workspace)
        if refused is not None:
            code, hint = refused
            raise InvalidParams(
                f"cwd: {workspace[:200]} cannot be a confined session's workspace ({code}): {hint}; "
                "or start the session unconfined"
            )
        cfg = self.execution.config()
        try:
            launch = confined.plan(
                argv,
                workspace,
                title=title,
                caller_env=env,
                policy=self.execution.policy(),
                path=cfg.path,
                loc=self.loc,
                agent_name=agent,
            )
        except OSError as exc:
            raise InvalidParams(f"argv: {exc}") from None
        if not self.workspaces.is_trusted(workspace):
            await self.workspaces.add(workspace, source="session", note=shlex.join(argv)[:200])
        shown = title or shlex.join(argv)[:200]
        identity = self.agents.for_confined_session(os.geteuid(), shown)
        context = RunContext(
            workspace=workspace,
            agent_id=identity.id,
            agent_name=launch.agent.name,
            label=f"{launch.agent.name or argv[0][:40]} in a confined session",
        )
        run = await self.execution.egress.open(context)
        try:
            info, _ = self._spawn(
                launch.operation,
                title=shown,
                cols=cols,
                rows=rows,
                owner=OPERATOR,
                egress=Egress(run.socket),
                profile=launch.profile,
                on_spawned=lambda info: self._root(identity, info.pid),
            )
        except BaseException:
            await self.execution.egress.close(run)
            self.agents.forget(identity)
            raise
        self._egress[info.id] = run
        self._attribute(info, workspace)
        self._record(
            f"session {info.id} started confined",
            {"session": info.id, "argv": argv[:64], "workspace": workspace, "agent": launch.agent.name},
        )
        return self.to_wire(info)

    def _root(self, identity: Agent, pid: int) -> None:
        """Before the sandbox is let go: every process it starts is this identity."""
        if not self.agents.root_at(identity, pid):
            log.warning("confined session %d ended before its identity was rooted", pid)

    def _record(self, note: str, body: dict[str, Any]) -> None:
        """A daemon event for the operator's session starts (the history keeps who ran what, how)."""
        from console.store import daemon_event

        with contextlib.suppress(Exception):  # the history logs its own failures
            self.execution.store.append(daemon_event(at=time.time(), note=note, body=body))

    def _record_start(self, request_id: str, op: Operation, info: SessionInfo, *, sandboxed: bool) -> None:
        """The request's outcome: it runs as this session (not "not run by the console")."""
        from console.store import outcome_event

        outcome = {
            "state": "running",
            "kind": "session",
            "session": info.id,
            "mode": op.mode.value,
            "status": "session",
            "sandboxed": sandboxed,
            "enforcement": {"level": "sandboxed" if sandboxed else "unrestricted"},
        }
        with contextlib.suppress(Exception):  # the history logs its own failures
            self.execution.store.append(
                outcome_event(request_id=request_id, at=info.created_at, outcome=outcome, op=op)
            )

    def _attribute(self, info: SessionInfo, root: str, *, label: str = "", watch: bool = True) -> None:
        """Changes in ``root`` while the session runs are attributed to it (by the
        operation's own command, not the sandbox's wrapper around it)."""
        if watch:
            self.watch.watch_soon(root)
        label = info.title or label or " ".join(info.argv)
        self._tokens[info.id] = self.watch.begin(
            root, "session", info.id, label[:200], info.pid, at=info.created_at
        )

    def start_unconfined(
        self, argv: list[str], cwd: str, title: str, cols: int, rows: int, env: dict[str, str] | None
    ) -> SessionObject:
        """The operator's program outside any sandbox, as they asked (``unconfined``)."""
        try:
            info = self.manager.create(
                argv, cwd=cwd, env=env, title=title, cols=cols, rows=rows, owner=OPERATOR, mode="durable"
            )
        except SessionError as exc:
            raise InvalidParams(str(exc)) from None
        # An operator's shell may start in a huge tree (home): attribute, but only start
        # watching roots that operations or the policy name.
        self._attribute(info, info.cwd, watch=False)
        self._record(
            f"session {info.id} started UNCONFINED by the operator",
            {"session": info.id, "argv": argv[:64], "cwd": info.cwd},
        )
        return self.to_wire(info)

    # ------------------------------------------------------------------ attaching

    def attach(self, conn: Connection, session_id: str, read_only: bool) -> dict[str, Any]:
        client_id = f"conn-{conn.id}"
        key = (conn.id, session_id)
        self._stop_forwarder(*key)
        att = self.manager.attach(session_id, client_id, read_only)
        self._forwarders[key] = asyncio.create_task(self._forward(conn, att))
        conn.widen_send_buffer(ATTACH_SEND_BUFFER)
        if not conn.session_owners:
            conn.on_close.append(lambda: self._release(conn))
        snap = att.snapshot
        return {
            "session": session_id,
            "offset": snap.offset,
            "cols": snap.cols,
            "rows": snap.rows,
            "snapshot_base64": b64(snap.data),
        }

    def detach(self, conn: Connection, session_id: str) -> None:
        self._stop_forwarder(conn.id, session_id)

    def _stop_forwarder(self, conn_id: int, session_id: str) -> None:
        task = self._forwarders.pop((conn_id, session_id), None)
        if task is not None:
            task.cancel()
        with contextlib.suppress(SessionError):
            self.manager.detach(session_id, f"conn-{conn_id}")

    async def _forward(self, conn: Connection, att: Any) -> None:
        sid = att.session_id
        try:
            async for event in att:
                while conn.backlog() > MAX_BACKLOG_FRAMES and not conn.closed.is_set():
                    await asyncio.sleep(0.01)
                if conn.closed.is_set():
                    return
                if isinstance(event, Output):
                    conn.notify(
                        "session.output",
                        SessionOutputBytes(session=sid, offset=event.offset, data=event.data),
                    )
                elif isinstance(event, Snapshot):
                    conn.notify(
                        "session.snapshot",
                        SessionSnapshot(
                            session=sid,
                            offset=event.offset,
                            cols=event.cols,
                            rows=event.rows,
                            snapshot_base64=b64(event.data),
                        ),
                    )
                elif isinstance(event, Resized):
                    conn.notify(
                        "session.resized",
                        SessionResized(session=sid, offset=event.offset, cols=event.cols, rows=event.rows),
                    )
                elif isinstance(event, Ended):
                    conn.notify(
                        "session.ended", SessionEnded(session=sid, offset=event.offset, reason=event.reason)
                    )
                    return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("forwarding session %s to connection %d failed", sid, conn.id)
        finally:
            self._forwarders.pop((conn.id, sid), None)


def unknown(exc: SessionError) -> ServiceError:
    return NotFound(str(exc)) if isinstance(exc, UnknownSession) else InvalidParams(str(exc))
