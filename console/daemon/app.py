"""The daemon: one per user, owner of everything that must outlive a window.

``Daemon.serve`` opens the store, loads grants and policy, listens on agent.sock and
operator.sock, and runs until SIGTERM/SIGINT or ``daemon.stop``. Shutdown drains:
pending requests are answered deny ``daemon_shutdown`` and recorded before the store
closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import gc
import logging
import os
import resource
import signal
import sys
import time

from console import __version__
from console.contract.host import DEFAULT_TRUSTED_PATH, Host, OSHost
from console.daemon.attention import UNKNOWN_AGENT, AgentNaming, AttentionTable
from console.daemon.broker import Broker
from console.daemon.connection import Connection, Role
from console.daemon.egress import EgressService
from console.daemon.events import EventHub
from console.daemon.execution import ExecutionService
from console.daemon.held import HeldTable
from console.daemon.identity import Agent, AgentRegistry
from console.daemon.integrity import IntegrityCheck
from console.daemon.link_tickets import LinkTickets
from console.daemon.methods import all_methods
from console.daemon.policy_source import PolicySource
from console.daemon.server import (
    AGENT_READ_BUFFER,
    READ_BUFFER,
    AlreadyRunning,
    close_socket_file,
    limit_heap_growth,
    listen,
    live_daemon_pid,
)
from console.daemon.session_control import ManagedSessions
from console.daemon.session_service import SessionService
from console.daemon.tripwire_service import TripwireService
from console.daemon.watch_service import WatchService
from console.daemon.workspaces import WorkspaceTrust, check_policy_roots, limits_for
from console.locations import Locations, create_token, ensure_private_dir
from console.protocol.events import StatusChanged
from console.protocol.jsonrpc import PROTOCOL_VERSION
from console.protocol.peer import PeerCred
from console.protocol.results import DaemonStatusResult
from console.protocol.status import StatusHistory
from console.protocol.tickets import clear_secrets, remove_secret
from console.protocol.watch import WatchStatus
from console.store import Store, daemon_event

log = logging.getLogger("agent-console.daemon")


# Net container allocations between two young-generation collections (CPython: 700).
GC_YOUNG_THRESHOLD = 10_000


def tune_collector() -> None:
    """Once started: what is loaded lives as long as the daemon, and a request's objects
    die by reference count. With the defaults the cyclic collector ran a young collection
    every few requests and each walked every request then in flight, and a full one walked
    every module loaded at start: 65-75 us a request in a loop of 50 concurrent
    grant-settled submits, against 6 us after. Frozen, the startup heap is out of its
    reach; young collections come every 10,000 net allocations instead of 700. Cycles
    still go, a little later (bytes buffers are not tracked, so the memory bounds of
    console/daemon/quotas.py do not move)."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


def _raise_fd_limit() -> None:
    """Thousands of idle clients are a supported load; use the hard fd limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Daemon:
    def __init__(self, locations: Locations) -> None:
        self.loc = locations
        self.pid = os.getpid()
        self.version = __version__
        self.started_at = time.time()
        self.host: Host = OSHost()  # its PATH becomes the sandbox's once the policy is read
        self._host_path = ""
        self.events = EventHub()
        self.policy = PolicySource(
            locations.policy,
            on_change=self._policy_changed,
            check=functools.partial(check_policy_roots, limits_for(locations)),
        )
        self.methods = all_methods()
        self.connections: dict[int, Connection] = {}
        self.agents = AgentRegistry(in_use=self._agent_in_use)
        self.attention = AttentionTable(self.events, describe=self._describe_agent)
        self.token = ""
        self.store: Store
        self.broker: Broker
        self.execution: ExecutionService
        self.egress: EgressService
        self.sessions: SessionService
        self.watch: WatchService
        self.tripwire: TripwireService
        self.workspaces: WorkspaceTrust
        self.integrity: IntegrityCheck
        self.held = HeldTable(on_drop=lambda rid: remove_secret(self.loc.runtime_dir, rid))
        self.link_tickets = LinkTickets()
        self._stop = asyncio.Event()
        self._background: set[asyncio.Future[None]] = set()
        self._lock_fd: int | None = None

    # ------------------------------------------------------------------ status

    def status(self) -> DaemonStatusResult:
        """The operator's whole view, the same in ``daemon.status``, ``subscribe`` and
        every ``status`` event, so a console that only listens misses nothing."""
        return DaemonStatusResult(
            pid=self.pid,
            version=self.version,
            protocol=PROTOCOL_VERSION,
            started_at=self.started_at,
            uptime_s=round(time.time() - self.started_at, 3),
            state_dir=str(self.loc.state_dir),
            runtime_dir=str(self.loc.runtime_dir),
            policy=self.policy.status(),
            pending=len(self.broker.pending),
            held=len(self.held),
            connections=len(self.connections),
            agents=len(self.agents),
            sandbox=self.execution.status(),
            egress=self.egress.status(),
            sessions=self.sessions.status(),
            watch=self.watch.status(WatchStatus),
            workspaces=self.workspaces.to_list(),
            attention=self.attention.status(),
            # Rows start-up found past the head anchor, whose grants wait for `history accept`.
            history=StatusHistory(unaccepted=[(low, high) for low, high in self.store.unaccepted_rows]),
            # The chain checked at start: tail and anchors at once, every row in the background.
            integrity=self.integrity.status(),
        )

    def _describe_agent(self, agent_id: str) -> AgentNaming:
        agent = self.agents.by_id.get(agent_id)
        if agent is None:
            return UNKNOWN_AGENT
        alive = self.agents.root_alive(agent) if agent.root is not None else agent.connections > 0
        return AgentNaming(
            label=agent.label,
            root_pid=agent.root[0] if agent.root else None,
            root_comm=agent.root_comm,
            alive=alive,
        )

    def _agent_in_use(self, agent: Agent) -> bool:
        """Owns a live session or a pending request, or is a confined session's that still
        runs: not to be forgotten while idle."""
        owner = agent.owner
        if agent.confined and self.agents.root_alive(agent):
            return True
        return any(p.agent == agent.id for p in self.broker.pending.values()) or any(
            i.owner == owner and i.alive for i in self.sessions.manager.infos()
        )

    def status_changed(self) -> None:
        """Tell subscribers the whole status again (policy, workspace trust, history)."""
        self.events.publish(StatusChanged(status=self.status()))

    def _toolchains(self) -> None:
        """Executables are looked up where the sandbox will find them (its PATH)."""
        path = self.execution.trusted_path
        if self._host_path != path:
            self.host, self._host_path = OSHost(path), path

    def _policy_changed(self) -> None:
        if hasattr(self, "execution"):
            self._toolchains()
        self.status_changed()
        task = asyncio.ensure_future(self.watch.policy_changed())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def request_stop(self) -> None:
        self._stop.set()

    # ------------------------------------------------------------------ startup

    def _acquire_lock(self) -> None:
        fd = os.open(self.loc.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = None
            with contextlib.suppress(OSError):
                pid = live_daemon_pid(self.loc.agent_socket)
            raise AlreadyRunning(pid) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{self.pid}\n".encode())
        self._lock_fd = fd

    async def _on_connect(
        self, role: Role, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: PeerCred
    ) -> None:
        conn = Connection(self, role, peer, reader, writer, self.methods)
        self.connections[conn.id] = conn
        try:
            await conn.serve()
        finally:
            self.connections.pop(conn.id, None)

    async def serve(self) -> None:
        ensure_private_dir(self.loc.state_dir)
        ensure_private_dir(self.loc.runtime_dir)
        self._acquire_lock()
        clear_secrets(self.loc.runtime_dir)  # tickets of a daemon that died run nothing
        _raise_fd_limit()
        limit_heap_growth()
        # The store's writer thread shares the GIL with the event loop; a short switch
        # interval keeps a decision's answer from waiting out the writer's time slice.
        sys.setswitchinterval(0.0005)
        self.token = create_token(self.loc.token)
        self.policy.load_at_start()
        self.store = await asyncio.to_thread(Store.open, self.loc.database)
        for note in self.store.open_notes:
            log.warning("history store: %s", note)
        self.integrity = IntegrityCheck(self.store, on_change=self.status_changed)
        self.workspaces = WorkspaceTrust(
            self.loc,
            self.policy,
            self.store,
            on_change=self.status_changed,
        )
        await self.workspaces.load()
        self.broker = Broker(
            self.store,
            self.events,
            self.policy,
            workspaces=self.workspaces,
            resolve_path=lambda path: self.host.resolve(path).path,
            trusted_path=lambda: self._host_path or DEFAULT_TRUSTED_PATH,
        )
        await self.broker.grants.load()
        await self.broker.settle_orphans()
        self.egress = EgressService(str(self.loc.runtime_dir), self.policy, self.store, self.broker)
        await asyncio.wrap_future(
            self.store.append(daemon_event(at=time.time(), note="started", body={"pid": self.pid}))
        )
        # Sessions and the watcher need each other's part only (console/daemon/ports.py):
        # the manager comes first, so each service gets what it holds at construction.
        managed = ManagedSessions(self.loc.state_dir, policy=self.policy)
        self.watch = WatchService(self.policy, self.store, self.events, sessions=managed)
        self.tripwire = self.watch.tripwire
        self.execution = ExecutionService(
            self.loc, self.policy, self.store, self.events, self.watch, self.egress
        )
        await self.execution.start()
        self._toolchains()
        self.sessions = SessionService(
            self.events,
            managed,
            pending=self.broker,
            execution=self.execution,
            watch=self.watch,
            tripwire=self.tripwire,
            agents=self.agents,
            workspaces=self.workspaces,
            loc=self.loc,
        )
        await self.sessions.start()
        await self.watch.start()
        tune_collector()

        servers: list[asyncio.Server] = []
        created = []
        try:
            for role, path, read_buffer in (
                (Role.AGENT, self.loc.agent_socket, AGENT_READ_BUFFER),
                (Role.OPERATOR, self.loc.operator_socket, READ_BUFFER),
            ):
                servers.append(
                    await listen(path, functools.partial(self._on_connect, role), read_buffer=read_buffer)
                )
                created.append(path)
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.request_stop)
            watcher = asyncio.create_task(self.policy.watch())
            verify = asyncio.create_task(self.integrity.run())
            uses = asyncio.create_task(self.broker.grants.flush_uses_forever())
            log.info(
                "agent-console daemon %s listening in %s (pid %d)",
                self.version,
                self.loc.runtime_dir,
                self.pid,
            )
            await self._stop.wait()
            log.info("stopping: answering %d pending requests", len(self.broker.pending))
            watcher.cancel()
            uses.cancel()
            verify.cancel()
            for server in servers:
                server.close()
            await self.broker.shutdown()
            await self.broker.grants.flush_uses()
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(
                    self.store.append(daemon_event(at=time.time(), note="stopped", body={"pid": self.pid}))
                )
            for item in list(self.execution.running.values()):
                item.cancel.set()
            await asyncio.gather(*(conn.finish() for conn in list(self.connections.values())))
            await self.sessions.close()
            await self.egress.close_all()
            await self.watch.close()
        finally:
            for server in servers:
                server.close()
            for path in created:
                close_socket_file(path)
            clear_secrets(self.loc.runtime_dir)
            await asyncio.to_thread(self.store.close)
            if self._lock_fd is not None:
                os.close(self._lock_fd)
            log.info("stopped")
