"""The narrow interfaces the daemon's services hold of each other, and the methods of them.

Sessions, the watcher and its tripwire need each other: the watcher attributes a
session's changes, the tripwire stops, resumes and kills sessions, and a session's status
says whether the tripwire holds it. Each gets the other's part as one of these Protocols
at construction (console/daemon/app.py wires them), never the whole service, so a
service can be built and tested with a small stand-in, and what crosses between two
services is written down here.

:class:`Services` is what a method handler may reach (``CallContext.services``): the
daemon satisfies it, and a unit test can hand a method a few real services without a
daemon process (tests/daemon/test_daemon_method_context.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from console.contract.host import Host
    from console.daemon.attention import AttentionTable
    from console.daemon.broker import Broker, Pending
    from console.daemon.events import EventHub
    from console.daemon.execution import ExecutionService
    from console.daemon.held import HeldTable
    from console.daemon.identity import AgentRegistry
    from console.daemon.link_tickets import LinkTickets
    from console.daemon.policy_source import PolicySource
    from console.daemon.session_service import SessionService
    from console.daemon.tripwire_service import TripwireService
    from console.daemon.watch_service import WatchService
    from console.daemon.workspaces import WorkspaceTrust
    from console.locations import Locations
    from console.protocol.results import DaemonStatusResult
    from console.sessions.session import Session
    from console.store import Store
    from console.watch import AttributionToken
    from console.watch.events import AttributionKind


class SessionControl(Protocol):
    """What the watcher and its tripwire may do to sessions."""

    @property
    def cgroups_available(self) -> bool:
        """Every session runs in its own cgroup: a process outside them is nobody's."""
        ...

    def sessions(self) -> Sequence[Session]: ...

    def session(self, session_id: str) -> Session:
        """The live session; raises ``SessionError`` for an unknown id."""
        ...

    async def pause(self, session_id: str) -> bool:
        """Stop every process; True when all were confirmed stopped."""
        ...

    async def resume(self, session_id: str) -> None: ...

    async def kill(self, session_id: str) -> object: ...

    def changed(self, session_id: str) -> None:
        """The session's state changed outside the session manager (paused, resumed)."""
        ...


class SessionWatch(Protocol):
    """What sessions need of the watcher: attribution of a session's changes."""

    def watch_soon(self, root: str) -> None: ...

    def begin(
        self,
        root: str,
        kind: AttributionKind,
        ident: str,
        label: str,
        pid: int | None,
        at: float | None = None,
    ) -> AttributionToken: ...

    def end(self, token: AttributionToken) -> None: ...

    def started_by(self, session_id: str, request_id: str) -> None:
        """The session runs an approved request: its changes are that request's too."""
        ...


class TripwireHold(Protocol):
    """What sessions need of the tripwire: whether it holds a session."""

    def holds(self, session_id: str) -> bool:
        """A tripwire keeps the session stopped (paused, or kept paused)."""
        ...


class PendingView(Protocol):
    """What sessions read of the approval queue."""

    def waiting_of(self, agent: str) -> Iterable[Pending]:
        """The requests of this agent that wait for the operator."""
        ...


class Services(Protocol):
    """Everything a method handler may use (console/daemon/methods/)."""

    pid: int
    version: str
    started_at: float
    token: str
    loc: Locations
    host: Host
    policy: PolicySource
    events: EventHub
    agents: AgentRegistry
    attention: AttentionTable
    held: HeldTable
    link_tickets: LinkTickets
    store: Store
    broker: Broker
    workspaces: WorkspaceTrust
    execution: ExecutionService
    sessions: SessionService
    watch: WatchService
    tripwire: TripwireService

    def status(self) -> DaemonStatusResult: ...

    def status_changed(self) -> None: ...

    def request_stop(self) -> None: ...
