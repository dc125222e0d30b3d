"""The console's one connection to the daemon, and the messages it turns events into.

:meth:`DaemonLink.run` is the body of the app's single daemon worker: it connects to
``operator.sock``, subscribes, reads the whole pending queue (in pages: a listing of
10,000 requests would not fit one frame), and then forwards every event as a Textual
message to the app, in order: one message class per event kind (``DaemonLink.Decided``
carries a :class:`console.protocol.events.Decided`, …), all subclasses of
:class:`DaemonLink.DaemonEvent`. When the daemon goes away it says so and tries again,
so a restarted daemon is picked up without restarting the console. Calls (decide,
history, grants) share the connection; the daemon serves them concurrently.

The event messages do not bubble: the app handles them, then posts a fresh copy to each
running screen that lists the class in its ``DAEMON_EVENTS`` (:meth:`DaemonEvent.copy`),
where an ``@on`` handler takes it (docs/architecture.md, "From the socket to the screen").

An event the client refuses (it does not validate: a daemon of another version) never
reaches the link as an event; the link looks at the client's ``refused_events`` count
every :data:`REFUSED_CHECK_S` while connected and posts :class:`DaemonLink.EventsRefused`
when it grew, so the operator learns of it (the app shows a pill and notifies once per burst).

A console watching several hosts (docs/remote.md) runs one link per host; every message
carries the link's ``host`` ("" when the console watches one), so what it tells lands
on that host's rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Generic, TypeVar

from textual.message import Message
from textual.message_pump import MessagePump

from console import __version__
from console.client import AsyncClient, DaemonUnreachable, ResultError, RPCError
from console.protocol import events as ev
from console.protocol.pending import PendingItem
from console.protocol.requests import MethodParams, PendingList
from console.protocol.results import DaemonStatusResult, MethodResult

PAGE = 500
TOPICS = [t.value for t in ev.Topic]  # every topic: the console shows them all
RETRY_S = 1.0
CONNECT_WAIT_S = 3.0  # how long a call waits for a (re)connection before saying the daemon is away
REFUSED_CHECK_S = 1.0  # how often the link looks whether the client refused events

Connect = Callable[[], Awaitable[AsyncClient]]
E = TypeVar("E", bound=ev.Event)
R = TypeVar("R", bound=MethodResult)


class DaemonLink:
    class Connected(Message):
        """Connected (again): ``pending`` is the whole queue, oldest first."""

        def __init__(
            self,
            hello: dict[str, Any],
            status: DaemonStatusResult | None,
            pending: list[PendingItem],
            host: str = "",
        ) -> None:
            super().__init__()
            self.hello = hello
            self.status = status
            self.pending = pending
            self.host = host

    class Lost(Message):
        """The connection is gone; the link keeps trying to reconnect."""

        def __init__(self, reason: str, host: str = "") -> None:
            super().__init__()
            self.reason = reason
            self.host = host

    class EventsRefused(Message):
        """The client refused events on this connection (they did not validate and were
        skipped): ``count`` since the last message, ``total`` on this connection; ``first``
        when this starts a burst (the check before saw none)."""

        def __init__(self, count: int, total: int, first: bool, host: str = "") -> None:
            super().__init__()
            self.count = count
            self.total = total
            self.first = first
            self.host = host

    class DaemonEvent(Message, Generic[E], bubble=False):
        """One daemon event, typed: ``event`` as docs/protocol.md ("Events") describes it."""

        KIND: ClassVar[type[ev.Event]]

        def __init__(self, event: E, host: str = "") -> None:
            super().__init__()
            self.event: E = event
            self.host = host

        def copy(self) -> DaemonLink.DaemonEvent[E]:
            """A fresh message with the same event, for another message pump (a message
            is handled where it is posted; the event itself is immutable and shared)."""
            return type(self)(self.event, self.host)

    class PendingAdded(DaemonEvent[ev.PendingAdded], bubble=False):
        KIND = ev.PendingAdded

    class Decided(DaemonEvent[ev.Decided], bubble=False):
        KIND = ev.Decided

    class GrantAdded(DaemonEvent[ev.GrantAdded], bubble=False):
        KIND = ev.GrantAdded

    class GrantsUsed(DaemonEvent[ev.GrantsUsed], bubble=False):
        KIND = ev.GrantsUsed

    class GrantsRevoked(DaemonEvent[ev.GrantsRevoked], bubble=False):
        KIND = ev.GrantsRevoked

    # Bursty events that carry a whole state: one still queued is dropped for a newer one
    # of the same thing (Textual asks the queued message, ``can_replace``), so a burst is
    # handled once, with the newest state, instead of once per event.

    class StatusChanged(DaemonEvent[ev.StatusChanged], bubble=False):
        KIND = ev.StatusChanged

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, DaemonLink.StatusChanged) and message.host == self.host

    class WatchStatusChanged(DaemonEvent[ev.WatchStatusChanged], bubble=False):
        KIND = ev.WatchStatusChanged

        def can_replace(self, message: Message) -> bool:
            # A whole status holds the watcher's part too; the reverse is not true.
            return (
                isinstance(message, DaemonLink.StatusChanged | DaemonLink.WatchStatusChanged)
                and message.host == self.host
            )

    class SessionChanged(DaemonEvent[ev.SessionChanged], bubble=False):
        KIND = ev.SessionChanged

        def can_replace(self, message: Message) -> bool:
            return (
                isinstance(message, DaemonLink.SessionChanged)
                and message.host == self.host
                and message.event.session.id == self.event.session.id
            )

    class OutcomeFinished(DaemonEvent[ev.OutcomeFinished], bubble=False):
        KIND = ev.OutcomeFinished

    class WatchBatch(DaemonEvent[ev.WatchBatch], bubble=False):
        KIND = ev.WatchBatch

    class WatchAlert(DaemonEvent[ev.WatchAlert], bubble=False):
        KIND = ev.WatchAlert

    class TripwireRaised(DaemonEvent[ev.TripwireRaised], bubble=False):
        KIND = ev.TripwireRaised

    class TripwireResolved(DaemonEvent[ev.TripwireResolved], bubble=False):
        KIND = ev.TripwireResolved

    class AttentionChanged(DaemonEvent[ev.AttentionChanged], bubble=False):
        KIND = ev.AttentionChanged

    @staticmethod
    def message(event: ev.Event, host: str = "") -> DaemonLink.DaemonEvent[Any]:
        """The message that carries ``event``."""
        return _MESSAGES[type(event)](event, host)

    def __init__(
        self,
        target: MessagePump,
        state_dir: str | os.PathLike[str] | None,
        *,
        connect: Connect | None = None,
        host: str = "",
        retry_max_s: float = RETRY_S,
    ) -> None:
        self.target = target
        self.state_dir = state_dir
        self.host = host
        self.retry_max_s = retry_max_s
        # How a terminal pane opens its own connection to this link's daemon; None: the
        # local socket of ``state_dir`` (console/tui/panes/pane_link.py).
        self.pane_connect: Connect | None = None
        self._connect = connect or (
            lambda: AsyncClient.connect(state_dir, role="operator", client="agent-console-tui")
        )
        self.client: AsyncClient | None = None
        self.connected = asyncio.Event()

    async def request(self, params: MethodParams[R]) -> R:
        """One typed request on the shared connection (:meth:`AsyncClient.request`),
        waiting for a reconnection as :meth:`call` does."""
        return await (await self._client()).request(params)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """One request by name on the shared connection; prefer :meth:`request`."""
        return await (await self._client()).call(method, params)

    async def _client(self) -> AsyncClient:
        """The connection. While the link is (re)connecting — at start-up, after a resume
        from SIGSTOP — it waits up to :data:`CONNECT_WAIT_S` for it rather than failing at
        once; DaemonUnreachable after that."""
        client = self.client
        if client is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.connected.wait(), CONNECT_WAIT_S)
            client = self.client
        if client is None:
            raise DaemonUnreachable(
                f"the daemon did not answer within {CONNECT_WAIT_S:g} s (still reconnecting)"
            )
        return client

    async def run(self) -> None:
        """Connect, stream events, reconnect; returns only when cancelled. Attempts that
        fail in a row wait twice as long each time, up to :attr:`retry_max_s` (a host
        over SSH backs off to 30 s; this machine's daemon is tried every second)."""
        last_error = ""
        delay = RETRY_S
        while True:
            try:
                client = await self._connect()
            except (DaemonUnreachable, OSError, RPCError) as exc:
                if str(exc) != last_error:
                    last_error = str(exc)
                    self.target.post_message(self.Lost(last_error, self.host))
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_max_s)
                continue
            delay = RETRY_S
            try:
                await self._serve(client)
                reason = "the daemon closed the connection"
            except (DaemonUnreachable, OSError) as exc:
                reason = str(exc)
            except ResultError as exc:
                reason = _another_version(client, exc)
            except RPCError as exc:
                reason = f"the daemon refused: {exc}"
            finally:
                served = self.connected.is_set()
                self.client = None
                self.connected.clear()
                await client.close()
            # A connection lost after it served is always news; one that fails the same way
            # before it served (a daemon whose answers this console cannot read) is said once,
            # not at every retry.
            if served or reason != last_error:
                self.target.post_message(self.Lost(reason, self.host))
            last_error = reason
            await asyncio.sleep(RETRY_S)

    async def _serve(self, client: AsyncClient) -> None:
        subscribed = await client.subscribe(TOPICS)
        pending: list[PendingItem] = []
        after = ""
        while True:
            page = await client.request(PendingList(limit=PAGE, after=after))
            pending.extend(page.pending)
            if page.next is None:
                break
            after = page.next
        self.client = client
        self.connected.set()
        self.target.post_message(self.Connected(client.hello, subscribed.status, pending, self.host))
        checking = asyncio.create_task(self._check_refused(client))
        try:
            async for event in client.events():
                self.target.post_message(self.message(event, self.host))
        finally:
            checking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await checking

    async def _check_refused(self, client: AsyncClient) -> None:
        """Say when the client's count of refused events grows: once per check, so a burst
        of them is one message, and ``first`` when the check before saw none."""
        seen = 0
        quiet = True
        while True:
            await asyncio.sleep(REFUSED_CHECK_S)
            total = client.refused_events
            if total > seen:
                self.target.post_message(self.EventsRefused(total - seen, total, quiet, self.host))
                seen = total
                quiet = False
            else:
                quiet = True


_MESSAGES: dict[type[ev.Event], type[DaemonLink.DaemonEvent[Any]]] = {
    m.KIND: m
    for m in vars(DaemonLink).values()
    if isinstance(m, type) and issubclass(m, DaemonLink.DaemonEvent) and m is not DaemonLink.DaemonEvent
}
assert set(_MESSAGES) == set(ev.KINDS), "one DaemonLink message per event kind"


def _another_version(client: AsyncClient, exc: ResultError) -> str:
    """Why the console cannot use this daemon, and what to do: the daemon outlives the
    console, so after an upgrade it may be the older one."""
    return (
        f"the daemon runs version {client.hello.get('version', '?')} and this console {__version__}: restart the daemon "
        f"(agent-console daemon stop) to use this one's. It answered what the console cannot "
        f"read: {exc.message}"
    )
