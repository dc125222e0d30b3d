"""The console's one connection to the daemon, and the messages it turns events into.

:meth:`DaemonLink.run` is the body of the app's single daemon worker: it connects to
``operator.sock``, subscribes, reads the whole pending queue (in pages: a listing of
10,000 requests would not fit one frame), and then forwards every event as a Textual
message to the app, in order. When the daemon goes away it says so and tries again,
so a restarted daemon is picked up without restarting the console. Calls (decide,
history, grants) share the connection; the daemon serves them concurrently.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump

from console.client import AsyncClient, DaemonUnreachable, RPCError

PAGE = 500
TOPICS = ["pending", "decided", "grants", "status", "sessions", "watch", "outcomes", "attention"]
RETRY_S = 1.0
CONNECT_WAIT_S = 3.0  # how long a call waits for a (re)connection before saying the daemon is away

Connect = Callable[[], Awaitable[AsyncClient]]


class DaemonLink:
    class Connected(Message):
        """Connected (again): ``pending`` is the whole queue, oldest first."""

        def __init__(
            self, hello: dict[str, Any], status: dict[str, Any], pending: list[dict[str, Any]]
        ) -> None:
            super().__init__()
            self.hello = hello
            self.status = status
            self.pending = pending

    class Lost(Message):
        """The connection is gone; the link keeps trying to reconnect."""

        def __init__(self, reason: str) -> None:
            super().__init__()
            self.reason = reason

    class Event(Message):
        """One daemon event: ``topic`` and its payload as docs/protocol.md describes them."""

        def __init__(self, topic: str, payload: dict[str, Any]) -> None:
            super().__init__()
            self.topic = topic
            self.payload = payload

    def __init__(
        self, target: MessagePump, state_dir: str | os.PathLike[str] | None, *, connect: Connect | None = None
    ) -> None:
        self.target = target
        self.state_dir = state_dir
        self._connect = connect or (
            lambda: AsyncClient.connect(state_dir, role="operator", client="agent-console-tui")
        )
        self.client: AsyncClient | None = None
        self.connected = asyncio.Event()

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """One request on the shared connection. While the link is (re)connecting — at
        start-up, after a resume from SIGSTOP — it waits up to :data:`CONNECT_WAIT_S` for
        the connection rather than failing at once; DaemonUnreachable after that."""
        client = self.client
        if client is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.connected.wait(), CONNECT_WAIT_S)
            client = self.client
        if client is None:
            raise DaemonUnreachable(
                f"the daemon did not answer within {CONNECT_WAIT_S:g} s (still reconnecting)"
            )
        return await client.call(method, params)

    async def run(self) -> None:
        """Connect, stream events, reconnect; returns only when cancelled."""
        last_error = ""
        while True:
            try:
                client = await self._connect()
            except (DaemonUnreachable, OSError, RPCError) as exc:
                if str(exc) != last_error:
                    last_error = str(exc)
                    self.target.post_message(self.Lost(last_error))
                await asyncio.sleep(RETRY_S)
                continue
            last_error = ""
            try:
                await self._serve(client)
                reason = "the daemon closed the connection"
            except (DaemonUnreachable, OSError) as exc:
                reason = str(exc)
            except RPCError as exc:
                reason = f"the daemon refused: {exc}"
            finally:
                self.client = None
                self.connected.clear()
                await client.close()
            last_error = reason
            self.target.post_message(self.Lost(reason))
            await asyncio.sleep(RETRY_S)

    async def _serve(self, client: AsyncClient) -> None:
        subscribed = await client.subscribe(TOPICS)
        pending: list[dict[str, Any]] = []
        after = ""
        while True:
            params: dict[str, Any] = {"limit": PAGE}
            if after:
                params["after"] = after
            page = await client.call("pending.list", params)
            items = page.get("pending", [])
            pending.extend(items)
            if len(items) < PAGE:
                break
            after = items[-1]["request_id"]
        self.client = client
        self.connected.set()
        self.target.post_message(self.Connected(client.hello, subscribed.get("status", {}), pending))
        async for event in client.events():
            topic = str(event.get("topic", ""))
            self.target.post_message(self.Event(topic, event))
