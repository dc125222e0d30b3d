"""One proxied connection, as transports and protocols: read the request, wait for the
decision, connect, then carry bytes both ways.

The daemon's event loop also answers every agent's requests, so a connection costs as
little of it as it can: no stream objects and no task but the decision's. While the
decision is pending (an approval can take minutes) the client's side keeps reading, so
a client that hangs up is seen at once (its item is withdrawn); what it sends meanwhile
is kept (up to a bound) and sent upstream first. Each side pauses the other's reading
while its own transport's buffer is full, so a slow reader never makes the daemon hold
more than a transport's buffer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from enum import Enum, auto

from console.daemon.egress import proxy
from console.daemon.egress.proxy import Kind, ProxyProtocolError, Target

# What a client may send while its connection waits for a decision.
MAX_EARLY_BYTES = 1 << 20


class Phase(Enum):
    HEAD = auto()
    SOCKS_REQUEST = auto()
    DECIDING = auto()
    RELAY = auto()
    CLOSED = auto()


class Upstream(asyncio.Protocol):
    """The destination's side: what it sends goes to the client."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport  # asyncio sets TCP_NODELAY on it already

    def data_received(self, data: bytes) -> None:
        self.client.send(data)

    def eof_received(self) -> bool:
        self.client.send_eof()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.close()

    def pause_writing(self) -> None:
        self.client.pause()

    def resume_writing(self) -> None:
        self.client.resume()


# What to do with a request once it is read: decide, then refuse or relay (the service).
Decide = Callable[[Target, "Client"], Awaitable[None]]


class Client(asyncio.Protocol):
    """The sandbox's side (one bridge connection): the request, then the relay."""

    def __init__(self, decide: Decide, on_done: Callable[[Client], None]) -> None:
        self.decide = decide
        self.on_done = on_done
        self.transport: asyncio.Transport | None = None
        self.upstream: Upstream | None = None
        self.phase = Phase.HEAD
        self.buffer = bytearray()
        self.eof = False  # the client sent all it will
        self.upstream_eof = False  # the destination did
        self.gone = asyncio.get_running_loop().create_future()  # the client hung up
        self.task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    # -- the client's transport ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._timer = asyncio.get_running_loop().call_later(proxy.HEAD_TIMEOUT_S, self._slow_head)

    def _slow_head(self) -> None:
        if self.phase in (Phase.HEAD, Phase.SOCKS_REQUEST):
            self.close()

    def data_received(self, data: bytes) -> None:
        if self.phase is Phase.RELAY:
            if self.upstream is not None and self.upstream.transport is not None:
                self.upstream.transport.write(data)
            return
        self.buffer += data
        if self.phase is Phase.DECIDING:
            if len(self.buffer) > MAX_EARLY_BYTES and self.transport is not None:
                self.transport.pause_reading()
            return
        try:
            self._parse()
        except ProxyProtocolError as exc:
            self.refuse(proxy.refusal(400, str(exc)))

    def _parse(self) -> None:
        if self.phase is Phase.HEAD:
            found = proxy.parse_head(self.buffer)
            if found is None:
                return
            target, used = found
            del self.buffer[:used]
            if target.kind is Kind.SOCKS5 and not target.host:
                self.phase = Phase.SOCKS_REQUEST
                self.write(proxy.SOCKS5_METHOD_OK)
                self._parse()
                return
            self._start(target)
        elif self.phase is Phase.SOCKS_REQUEST:
            found = proxy.parse_socks5_request(self.buffer)
            if found is None:
                return
            target, used = found
            del self.buffer[:used]
            self._start(target)

    def _start(self, target: Target) -> None:
        self.phase = Phase.DECIDING
        if self._timer is not None:
            self._timer.cancel()
        self.task = asyncio.ensure_future(self._decide(target))

    async def _decide(self, target: Target) -> None:
        try:
            await self.decide(target, self)
        except asyncio.CancelledError:
            self.close()
            raise
        except Exception:
            self.close()
            raise

    def eof_received(self) -> bool:
        self.eof = True
        if self.phase is Phase.RELAY:
            if self.upstream_eof:
                # Both directions are done: closing sends the FIN after what is buffered,
                # as a shutdown would, with one system call fewer.
                self.close()
            elif self.upstream is not None and self.upstream.transport is not None:
                with contextlib.suppress(OSError, RuntimeError):
                    self.upstream.transport.write_eof()
            return True
        if not self.gone.done():
            self.gone.set_result(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.gone.done():
            self.gone.set_result(None)
        self.close()

    def pause_writing(self) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.resume_reading()

    # -- what the decision does ---------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def refuse(self, answer: bytes) -> None:
        """Answer and close (a refusal, or an error connecting)."""
        self.write(answer)
        self.close()

    def relay(self, upstream: Upstream, answer: bytes, first: bytes) -> None:
        """Connected: tell the client, send upstream what it is owed, carry the rest."""
        self.upstream = upstream
        self.phase = Phase.RELAY
        self.write(answer)
        assert upstream.transport is not None
        if first:
            upstream.transport.write(first)
        if self.buffer:
            upstream.transport.write(bytes(self.buffer))
            self.buffer.clear()
        if self.eof:
            with contextlib.suppress(OSError, RuntimeError):
                upstream.transport.write_eof()
        elif self.transport is not None and len(self.buffer) <= MAX_EARLY_BYTES:
            self.transport.resume_reading()

    # -- the upstream's side, through this one -------------------------------------------

    def send(self, data: bytes) -> None:
        self.write(data)

    def send_eof(self) -> None:
        self.upstream_eof = True
        if self.eof:
            self.close()  # both directions are done (see eof_received)
        elif self.transport is not None and not self.transport.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                self.transport.write_eof()

    def pause(self) -> None:
        if self.transport is not None:
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.transport is not None:
            self.transport.resume_reading()

    def close(self) -> None:
        if self.phase is Phase.CLOSED:
            return
        self.phase = Phase.CLOSED
        if self._timer is not None:
            self._timer.cancel()
        if self.transport is not None:
            self.transport.close()
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.close()
        if not self.gone.done():
            self.gone.set_result(None)
        self.on_done(self)
