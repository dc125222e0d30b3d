"""One client connection: framing, dispatch, and an output queue that never blocks the daemon.

Each request runs in its own task, so an agent waiting on a decision can still cancel
on the same connection. Replies and events go through a bounded queue drained by a
writer task; a client that stops reading is disconnected instead of growing the
daemon's memory or holding up the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from console.protocol import jsonrpc
from console.protocol.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNAUTHORIZED,
    UNAVAILABLE,
    Invalid,
    Request,
    RPCError,
)
from console.protocol.params import Params
from console.protocol.peer import PeerCred

if TYPE_CHECKING:
    from console.daemon.app import Daemon

log = logging.getLogger("agent-console.connection")

MAX_QUEUED_FRAMES = 10_000
MAX_IN_FLIGHT = 1_000


class Role(StrEnum):
    AGENT = "agent"
    OPERATOR = "operator"


Handler = Callable[["CallContext", Params], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Method:
    handler: Handler
    operator_only: bool = False
    # Methods an unauthenticated operator connection may call (hello).
    before_auth: bool = False


@dataclass(slots=True)
class CallContext:
    daemon: Daemon
    conn: Connection


class Connection:
    _next_id = 0

    def __init__(
        self,
        daemon: Daemon,
        role: Role,
        peer: PeerCred,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        methods: dict[str, Method],
    ) -> None:
        Connection._next_id += 1
        self.id = Connection._next_id
        self.daemon = daemon
        self.role = role
        self.peer = peer
        self.reader = reader
        self.writer = writer
        self.methods = methods
        self.authenticated = role is Role.AGENT
        self.owns_requests = False
        self.owns_executions = False
        self.session_owners: set[str] = set()  # session owners this connection acts for
        self.closed = asyncio.Event()
        self._out: asyncio.Queue[bytes | None] = asyncio.Queue(MAX_QUEUED_FRAMES)
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_close: list[Callable[[], Awaitable[None] | None]] = []
        self._writer_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ output

    def send(self, message: dict[str, Any]) -> None:
        if self.closed.is_set():
            return
        try:
            self._out.put_nowait(jsonrpc.encode(message))
        except asyncio.QueueFull:
            log.warning("connection %d (pid %d) is not reading; disconnecting it", self.id, self.peer.pid)
            self.close()

    def backlog(self) -> int:
        """Frames queued for the peer and not yet written."""
        return self._out.qsize()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send(jsonrpc.notification(method, params))

    async def _write_loop(self) -> None:
        try:
            while (frame := await self._out.get()) is not None:
                self.writer.write(frame)
                if self._out.empty():
                    await self.writer.drain()
            await self.writer.drain()
        except (ConnectionError, OSError):
            self.closed.set()

    def close(self) -> None:
        """Stop now: queued output is dropped."""
        if self.closed.is_set():
            return
        self.closed.set()
        with contextlib.suppress(asyncio.QueueFull):
            self._out.put_nowait(None)
        self.writer.close()

    # ------------------------------------------------------------------ input

    async def finish(self, timeout_s: float = 1.0) -> None:
        """Hang up once answers in progress and what is queued have reached the peer (bounded)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout_s)
        with contextlib.suppress(asyncio.QueueFull):
            self._out.put_nowait(None)
        if self._writer_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._writer_task), timeout_s)
        self.close()

    async def serve(self) -> None:
        self._writer_task = writer_task = asyncio.create_task(self._write_loop())
        try:
            await self._read_loop()
        finally:
            for task in list(self._tasks):
                task.cancel()
            for callback in self.on_close:
                try:
                    result = callback()
                    if result is not None:
                        await result
                except Exception:
                    log.exception("close callback failed on connection %d", self.id)
            # Let what was already answered reach the peer, briefly, then hang up.
            with contextlib.suppress(asyncio.QueueFull):
                self._out.put_nowait(None)
            try:
                await asyncio.wait_for(writer_task, 2.0)
            except (TimeoutError, asyncio.CancelledError, Exception):
                writer_task.cancel()
            self.close()

    async def _read_loop(self) -> None:
        while not self.closed.is_set():
            try:
                frame = await self.reader.readuntil(b"\n")
            except asyncio.LimitOverrunError:
                # Never resync inside an oversized line: the rest of it is not a frame.
                self.send(
                    jsonrpc.error_response(
                        None, RPCError(INVALID_REQUEST, f"frame larger than {jsonrpc.MAX_FRAME} bytes")
                    )
                )
                return
            except asyncio.IncompleteReadError as exc:
                if exc.partial.strip():
                    self._handle_frame(exc.partial)
                    await self._drain_tasks()
                return
            except (ConnectionError, OSError):
                return
            if frame.strip():
                self._handle_frame(frame)

    async def _drain_tasks(self) -> None:
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=30)

    def _handle_frame(self, frame: bytes) -> None:
        messages, is_batch = jsonrpc.decode_message(frame)
        if len(self._tasks) >= MAX_IN_FLIGHT:
            # Refuse each request by its own id: the client's other calls stay valid.
            busy = RPCError(
                UNAVAILABLE, f"more than {MAX_IN_FLIGHT} requests in flight on this connection; retry later"
            )
            replies = [
                jsonrpc.error_response(m.id, busy)
                for m in messages
                if isinstance(m, Request) and not m.is_notification
            ]
            if replies:
                self.send(replies if is_batch else replies[0])  # type: ignore[arg-type]
            return
        task = asyncio.create_task(self._run_messages(messages, is_batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_messages(self, messages: list[Any], is_batch: bool) -> None:
        if not is_batch:  # the common case: no gather, no second task
            reply = await self._run_one(messages[0])
            if reply is not None:
                self.send(reply)
            return
        results = await asyncio.gather(*(self._run_one(m) for m in messages))
        replies = [r for r in results if r is not None]
        if is_batch:
            if replies:
                self.send(replies)  # type: ignore[arg-type]
        else:
            for reply in replies:
                self.send(reply)

    async def _run_one(self, message: Any) -> dict[str, Any] | None:
        if isinstance(message, Invalid):
            return jsonrpc.error_response(message.id, message.error)
        if not isinstance(message, Request):
            return None  # a response from a client: we never asked anything
        try:
            result = await self._call(message)
        except RPCError as exc:
            return None if message.is_notification else jsonrpc.error_response(message.id, exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("method %s failed", message.method)
            err = RPCError(INTERNAL_ERROR, "internal error; the daemon log has the details")
            return None if message.is_notification else jsonrpc.error_response(message.id, err)
        return None if message.is_notification else jsonrpc.response(message.id, result)

    async def _call(self, request: Request) -> Any:
        method = self.methods.get(request.method)
        if method is None:
            raise RPCError(METHOD_NOT_FOUND, "unknown method; see docs/protocol.md")
        if method.operator_only and self.role is not Role.OPERATOR:
            raise RPCError(METHOD_NOT_FOUND, "this method is served on operator.sock only")
        if not self.authenticated and not method.before_auth:
            raise RPCError(UNAUTHORIZED, "authenticate first: call hello with the operator token")
        params = Params(request.params)
        return await method.handler(CallContext(self.daemon, self), params)


__all__ = ["CallContext", "Connection", "Method", "Role"]
