"""The pending requests of every host, for the web page: one operator connection per
host, subscribed to ``pending`` and ``decided``, reconnecting with backoff.

A host that cannot be reached shows as such, with why; its requests leave the page (it
cannot be told of their decisions) and fail closed there, by their own timeout. A
decision names the host, the request id and the fingerprint the operator saw: it goes
to that host's daemon only, and only while that request with that fingerprint is still
pending there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from console.client import AsyncClient, DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.policy import GrantScope
from console.protocol import events as ev
from console.protocol.pending import PendingItem
from console.protocol.requests import Decide, DecideAction, PendingList, Subscribe
from console.protocol.results import DecideResult

log = logging.getLogger("agent-console.web")

Connect = Callable[[], Awaitable[AsyncClient]]
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0
PAGE = 500


class DecisionRefused(Exception):
    """The decision was not sent or not taken; the message says why. ``now_pending``: the
    fingerprint pending under that id, when it is not the one the operator saw."""

    def __init__(self, message: str, now_pending: str | None = None) -> None:
        super().__init__(message)
        self.now_pending = now_pending


@dataclass
class HostState:
    name: str
    state: str = "connecting"  # connecting | connected | unreachable
    why: str = ""
    since: float = field(default_factory=time.time)
    client: AsyncClient | None = None
    pending: dict[str, PendingItem] = field(default_factory=dict)


class Inbox:
    def __init__(
        self, connectors: dict[str, Connect], on_pending: Callable[[str, PendingItem], None] | None = None
    ) -> None:
        self.hosts = {name: HostState(name) for name in connectors}
        self._connect = connectors
        self._on_pending = on_pending
        self._tasks: list[asyncio.Task[None]] = []
        self.changed = asyncio.Event()
        self._version = 0

    @property
    def version(self) -> str:
        """Changes whenever a request comes or goes or a host's state changes (what the
        queue page polls for)."""
        return str(self._version)

    def start(self) -> None:
        self._tasks = [asyncio.ensure_future(self._keep(name)) for name in self.hosts]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def items(self) -> list[tuple[str, PendingItem]]:
        """Every pending request, oldest first, with its host."""
        out = [(h.name, item) for h in self.hosts.values() for item in h.pending.values()]
        out.sort(key=lambda pair: (pair[1].submitted_at, pair[0], pair[1].request_id))
        return out

    def get(self, host: str, request_id: str) -> PendingItem | None:
        state = self.hosts.get(host)
        return None if state is None else state.pending.get(request_id)

    async def decide(
        self,
        host: str,
        request_id: str,
        fingerprint: str,
        action: DecideAction,
        *,
        scope: GrantScope = GrantScope.ONCE,
        note: str = "",
        expires_in_s: float | None = None,
    ) -> DecideResult:
        state = self.hosts.get(host)
        if state is None:
            raise DecisionRefused(f"no host {host!r} here")
        client = state.client
        if client is None or state.state != "connected":
            raise DecisionRefused(
                f"{host} is unreachable; its requests fail closed there by their own timeout"
            )
        item = state.pending.get(request_id)
        if item is None:
            raise DecisionRefused(f"{request_id} is no longer pending on {host}")
        if item.fingerprint != fingerprint:
            raise DecisionRefused(
                f"{request_id} on {host} is not the request that was shown (fingerprint)", item.fingerprint
            )
        try:
            result = await client.request(
                Decide(target=request_id, action=action, scope=scope, note=note, expires_in_s=expires_in_s)
            )
        except RPCError as exc:
            raise DecisionRefused(f"{host} refused: {inert(exc.message)[:300]}") from None
        except DaemonUnreachable as exc:
            raise DecisionRefused(f"{host}: not sent ({inert(str(exc))[:300]})") from None
        # Gone from the page at once, not when the daemon's event comes.
        for rid in result.decided or [request_id]:
            if state.pending.pop(rid, None) is not None:
                self._changed()
        return result

    # ------------------------------------------------------------------ one host

    async def _keep(self, name: str) -> None:
        state = self.hosts[name]
        delay = BACKOFF_FIRST_S
        while True:
            try:
                client = await self._connect[name]()
            except Exception as exc:  # DaemonUnreachable (HostUnreachable), OSError, RPCError, …
                self._lost(state, str(exc) or type(exc).__name__)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX_S)
                continue
            try:
                await self._serve(state, client)
                why = "the daemon closed the connection"
            except (DaemonUnreachable, OSError, RPCError) as exc:
                why = str(exc)
            except Exception as exc:  # never leave a host shown as connected by a dead task
                log.exception("%s: the inbox's link failed", name)
                why = f"internal error ({type(exc).__name__}); see the log"
            finally:
                state.client = None
                await client.close()
            self._lost(state, why)
            delay = BACKOFF_FIRST_S
            await asyncio.sleep(delay)

    def _lost(self, state: HostState, why: str) -> None:
        if state.state != "unreachable" or state.why != why:
            log.warning("%s: %s", state.name, why)
        if state.state != "unreachable":
            state.since = time.time()
        state.state, state.why = "unreachable", inert(why)[:300]
        state.pending.clear()
        self._changed()

    async def _serve(self, state: HostState, client: AsyncClient) -> None:
        await client.request(Subscribe(topics=(ev.Topic.PENDING.value, ev.Topic.DECIDED.value)))
        listed: dict[str, PendingItem] = {}
        after = ""
        while True:
            page = await client.request(PendingList(limit=PAGE, after=after))
            listed.update((p.request_id, p) for p in page.pending)
            if page.next is None:
                break
            after = page.next
        state.pending = listed
        state.client, state.state, state.why, state.since = client, "connected", "", time.time()
        self._changed()
        async for event in client.events():
            if isinstance(event, ev.PendingAdded):
                item = event.request
                state.pending[item.request_id] = item
                if self._on_pending is not None:
                    self._on_pending(state.name, item)
            elif isinstance(event, ev.Decided):
                if state.pending.pop(event.request_id, None) is None:
                    continue
            else:
                continue
            self._changed()

    def _changed(self) -> None:
        self._version += 1
        self.changed.set()
        self.changed = asyncio.Event()
