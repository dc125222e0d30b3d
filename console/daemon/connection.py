"""One client connection: framing, dispatch, and an output queue that never blocks the daemon.

Each request runs in its own task, so an agent waiting on a decision can still cancel
on the same connection. Replies and events go through a queue bounded in frames and in
bytes, drained by a writer task; a client that stops reading is disconnected instead of
growing the daemon's memory or holding up the broker.

Input is framed here rather than by ``StreamReader.readuntil``, so the daemon decides
what an incomplete frame may cost: a connection that has not said hello may send frames
of at most 256 KiB and must say hello within 10 s; any frame must be complete 10 s after
its first byte; and incomplete frames of all connections together hold at most 24 MiB
(console/daemon/quotas.py). Each limit is answered with an error naming it, logged and
recorded, and ends the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from console.daemon import identity, quotas
from console.daemon.turns import AgentTurns
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
from console.protocol.notifications import Notification
from console.protocol.peer import PeerCred
from console.protocol.requests import MethodParams, read_params
from console.protocol.results import MethodResult
from console.protocol.table import Access, Row

if TYPE_CHECKING:
    import msgspec

    from console.daemon.app import Daemon
    from console.daemon.identity import Agent
    from console.daemon.ports import Services

log = logging.getLogger("agent-console.connection")

MAX_QUEUED_FRAMES = 10_000
MAX_IN_FLIGHT = 1_000
READ_CHUNK = 256 * 1024


# Agent frames wait for their turn in the event loop; the operator's do not.
TURNS = AgentTurns()


class _PartialBudget:
    """Bytes of incomplete frames held for every connection together, and by whom."""

    total = 0
    holders: ClassVar[set[Connection]] = set()


class Role(StrEnum):
    AGENT = "agent"
    OPERATOR = "operator"


# A handler takes its method's params Struct (console/protocol/requests.py), read at the
# socket before it runs.
Handler = Callable[["CallContext", Any], Awaitable[MethodResult]]


@dataclass(frozen=True, slots=True)
class Method:
    """A handler and its row of the method table (console/protocol/table.py), which says
    who may call it."""

    handler: Handler
    row: Row

    @property
    def params(self) -> type[MethodParams[Any]]:
        return self.row.params

    @property
    def operator_only(self) -> bool:
        return self.row.access is Access.OPERATOR

    @property
    def before_auth(self) -> bool:
        """The call an unauthenticated operator connection may make (hello)."""
        return self.row.access is Access.BEFORE_AUTH

    @property
    def inert(self) -> bool:
        """It does not act for an agent identity (an agent may still switch identity with
        a second hello after calling only these)."""
        return self.row.access is Access.INERT


@dataclass(slots=True)
class CallContext:
    """What a method handler gets: the services it may use, and its caller."""

    services: Services
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
        # The identity an agent connection acts for (console/daemon/identity.py); bound
        # by hello, or by the first other call.
        self.agent: Agent | None = None
        self.acted = False  # called something that acts for the identity
        self.owns_requests = False
        self.owns_executions = False
        self.session_owners: set[str] = set()  # session owners this connection acts for
        self.closed = asyncio.Event()
        self._out: asyncio.Queue[bytes | None] = asyncio.Queue(MAX_QUEUED_FRAMES)
        self._queued_bytes = 0
        self._partial = 0  # bytes of the incomplete frame held
        self._partial_since: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._closer: asyncio.Future[None] | None = None
        self._refused = False  # a connection-level quota ended it: read nothing more
        self._hung_up = False  # the daemon closed it (a quota, a peer not reading): handle nothing more
        self._opened = 0.0
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_close: list[Callable[[], Awaitable[None] | None]] = []
        self._writer_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ output

    @property
    def identified(self) -> bool:
        """Said hello: an operator with the token, an agent bound to an identity."""
        return self.agent is not None if self.role is Role.AGENT else self.authenticated

    @property
    def owner(self) -> str:
        """Whose sessions this connection creates: its agent identity's, or the operator's."""
        return self.agent.owner if self.agent is not None else "operator"

    def send(self, message: dict[str, Any]) -> None:
        if self.closed.is_set():
            return
        frame = jsonrpc.encode(message)
        if self._out.empty() and self._socket_idle():
            # Nothing queued and nothing unsent: the frame goes straight to the socket, in
            # order, without a hop through the writer task (one loop turn and a drain per
            # answer). What the socket does not take now stays in the transport, and every
            # later frame queues behind it until the writer task has flushed it, so a peer
            # that stops reading is still bounded by the queue's limits.
            self.writer.write(frame)
            return
        if self._queued_bytes + len(frame) > quotas.MAX_QUEUED_BYTES:
            self._drop_slow("queued_bytes", f"{quotas.MAX_QUEUED_BYTES // quotas.MiB} MiB")
            return
        try:
            self._out.put_nowait(frame)
        except asyncio.QueueFull:
            self._drop_slow("queued_frames", f"{MAX_QUEUED_FRAMES} frames")
            return
        self._queued_bytes += len(frame)

    def _socket_idle(self) -> bool:
        transport = self.writer.transport
        return not transport.is_closing() and transport.get_write_buffer_size() == 0

    def _drop_slow(self, quota: str, limit: str) -> None:
        """A peer that does not read what it asked for is cut off, not buffered without end."""
        log.warning(
            "connection %d (pid %d) is not reading: more than %s queued; disconnecting it",
            self.id,
            self.peer.pid,
            limit,
        )
        quotas.note(self.daemon, quota, who=self._who())
        self.close(abort=True)

    def _who(self) -> str:
        return self.agent.id if self.agent is not None else f"{self.role.value} pid {self.peer.pid}"

    def widen_send_buffer(self, nbytes: int) -> None:
        """Let the kernel hold up to ``nbytes`` unread by the peer (capped by
        ``net.core.wmem_max``). An attach stream needs it: the default (about 208 KiB)
        is less than one output frame of a flood, and the transport sends once per turn
        of the event loop, a turn that reading the session's PTY fills, so output would
        leave at most 208 KiB a turn and the client would sit idle while megabytes wait
        here. Best effort: a socket that refuses keeps its size."""
        sock = self.writer.get_extra_info("socket")
        if sock is None:
            return
        with contextlib.suppress(OSError):
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) < nbytes:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, nbytes)

    def backlog(self) -> int:
        """Frames queued for the peer and not yet written."""
        return self._out.qsize()

    def notify(self, method: str, params: Notification | msgspec.Raw) -> None:
        """``params`` may be JSON already encoded (an event, encoded once for every subscriber)."""
        self.send(jsonrpc.notification(method, params))

    async def _write_loop(self) -> None:
        try:
            while (frame := await self._out.get()) is not None:
                self._queued_bytes -= len(frame)
                self.writer.write(frame)
                if self._out.empty():
                    await self.writer.drain()
            await self.writer.drain()
        except (ConnectionError, OSError):
            self.closed.set()

    def close(self, *, abort: bool = False) -> None:
        """Stop now: queued output is dropped (``abort``: and what the transport holds)."""
        self._hold_partial(0)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._hung_up = True
        if self.closed.is_set():
            return
        self.closed.set()
        with contextlib.suppress(asyncio.QueueFull):
            self._out.put_nowait(None)
        if abort:
            self.writer.transport.abort()
        else:
            self.writer.close()

    def refuse_and_close(self, quota: str, message: str, limit: int | float | None = None) -> None:
        """Answer a connection-level quota with an error frame, record it, and hang up."""
        err = quotas.refuse(self.daemon, quota, message, who=self._who(), limit=limit)
        self._refused = True
        self._stop_reading()
        self.send(jsonrpc.error_response(None, err))
        if self._closer is None:
            self._closer = asyncio.ensure_future(self.finish(0.5))

    # ------------------------------------------------------------------ timers

    def _arm(self, delay: float) -> None:
        if self._timer is None and not self.closed.is_set():
            self._timer = asyncio.get_running_loop().call_later(delay, self._tick)

    def _tick(self) -> None:
        """One timer per connection: the hello deadline, then incomplete-frame deadlines."""
        self._timer = None
        if self.closed.is_set():
            return
        now = asyncio.get_running_loop().time()
        if not self.identified and now - self._opened >= quotas.HELLO_TIMEOUT_S:
            self.refuse_and_close(
                "hello_timeout",
                f"no hello within {quotas.HELLO_TIMEOUT_S:g} s of connecting; say hello first",
                quotas.HELLO_TIMEOUT_S,
            )
            return
        if self._partial_since is not None:
            if now - self._partial_since >= quotas.PARTIAL_FRAME_TIMEOUT_S:
                self.refuse_and_close(
                    "partial_frame_timeout",
                    f"a frame was not completed within {quotas.PARTIAL_FRAME_TIMEOUT_S:g} s of its first byte",
                    quotas.PARTIAL_FRAME_TIMEOUT_S,
                )
                return
            self._arm(self._partial_since + quotas.PARTIAL_FRAME_TIMEOUT_S - now)
        elif not self.identified:
            self._arm(self._opened + quotas.HELLO_TIMEOUT_S - now)

    def _stop_reading(self) -> None:
        """What a refused peer still sends must not pile up in the transport meanwhile."""
        self._partial_since = None
        self._hold_partial(0)
        with contextlib.suppress(AttributeError, RuntimeError):
            self.writer.transport.pause_reading()  # type: ignore[attr-defined]  # a socket's transport reads too

    def _hold_partial(self, nbytes: int) -> bool:
        """Account the incomplete frame's bytes against the daemon-wide budget.

        When the budget is full, the connection holding the largest incomplete frame
        gives way (it is told why and dropped): a few connections that sit on big partial
        frames cannot starve everyone else's ordinary large frames. False when that is
        this connection.
        """
        grow = nbytes - self._partial
        while grow > 0 and _PartialBudget.total + grow > quotas.MAX_PARTIAL_BYTES_TOTAL:
            largest = max(_PartialBudget.holders, key=lambda c: c._partial, default=None)
            if largest is None or largest is self or largest._partial <= nbytes:
                return False
            largest.refuse_and_close(
                "partial_bytes_total",
                "the daemon holds as many incomplete frames as it will, and this one was the largest; "
                "send whole frames",
                quotas.MAX_PARTIAL_BYTES_TOTAL,
            )
        _PartialBudget.total += grow
        self._partial = nbytes
        if nbytes:
            _PartialBudget.holders.add(self)
        else:
            _PartialBudget.holders.discard(self)
        return True

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
        self._opened = asyncio.get_running_loop().time()
        self._arm(quotas.HELLO_TIMEOUT_S)
        self._writer_task = writer_task = asyncio.create_task(self._write_loop())
        try:
            await self._read_loop()
        finally:
            if self._tasks:
                # A frame that waited for its turn may have started its call just now: let
                # it take its first step (a submit registers its request), so the close
                # handlers answer it instead of it being dropped unseen.
                await asyncio.sleep(0)
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
            self._hold_partial(0)
            with contextlib.suppress(asyncio.QueueFull):
                self._out.put_nowait(None)
            try:
                await asyncio.wait_for(writer_task, 2.0)
            except (TimeoutError, asyncio.CancelledError, Exception):
                writer_task.cancel()
            self.close()

    def _frame_cap(self) -> int:
        return jsonrpc.MAX_FRAME if self.identified else quotas.MAX_FRAME_BEFORE_HELLO

    def _too_big(self) -> None:
        """An oversized frame ends the connection: the rest of the line is not a frame, so
        there is no resynchronising inside it."""
        cap = self._frame_cap()
        quota = "frame_bytes" if cap == jsonrpc.MAX_FRAME else "frame_bytes_before_hello"
        quotas.note(self.daemon, quota, who=self._who(), limit=cap)
        hint = "" if cap == jsonrpc.MAX_FRAME else " before hello; say hello first"
        self.send(
            jsonrpc.error_response(
                None,
                RPCError(
                    INVALID_REQUEST, f"frame larger than {cap} bytes{hint}", {"quota": quota, "limit": cap}
                ),
            )
        )

    async def _read_loop(self) -> None:
        buf = bytearray()
        pos = scan = 0  # start of the current frame; where to look for its newline
        # Frames that came before the peer went away are still answered (and recorded: an
        # agent that submits and hangs up gets its request decided); nothing more is read.
        while not self._hung_up and not self._refused:
            nl = buf.find(b"\n", scan)
            if nl >= 0:
                if nl + 1 - pos > self._frame_cap():
                    self._too_big()
                    return
                frame = bytes(memoryview(buf)[pos : nl + 1])
                pos = scan = nl + 1
                self._partial_since = None  # a frame completed: the clock starts again
                if frame.strip():
                    if self.role is Role.AGENT:
                        if pos >= len(buf):
                            buf, pos, scan = bytearray(), 0, 0  # while it waits, one copy
                        # A frame waiting for its turn is held like an incomplete one: the
                        # daemon-wide budget bounds what waits, whoever sends it.
                        if not self._hold_partial(len(buf) - pos + len(frame)):
                            self.refuse_and_close(
                                "partial_bytes_total",
                                "the daemon holds as many waiting frames as it will; wait for answers",
                                quotas.MAX_PARTIAL_BYTES_TOTAL,
                            )
                            return
                        await TURNS.take(len(frame))
                    self._handle_frame(frame)
                del frame
                continue
            if pos:
                # A fresh buffer, not an in-place delete: a big frame's capacity must not
                # stay allocated for as long as the connection lives.
                buf = bytearray(memoryview(buf)[pos:])
                scan -= pos
                pos = 0
            if len(buf) > self._frame_cap():
                self._too_big()
                return
            if not self._hold_partial(len(buf)):
                self.refuse_and_close(
                    "partial_bytes_total",
                    "the daemon holds as many incomplete frames as it will; send whole frames",
                    quotas.MAX_PARTIAL_BYTES_TOTAL,
                )
                return
            if buf:
                if self._partial_since is None:
                    self._partial_since = asyncio.get_running_loop().time()
                    self._arm(quotas.PARTIAL_FRAME_TIMEOUT_S)
            else:
                self._partial_since = None
            if self.closed.is_set():
                return
            try:
                chunk = await self.reader.read(READ_CHUNK)
            except (ConnectionError, OSError):
                return
            if self._refused:
                return
            if not chunk:
                if buf.strip():
                    self._handle_frame(bytes(buf))
                    await self._drain_tasks()
                return
            scan = len(buf)
            buf += chunk

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
                self.send(replies if is_batch else replies[0])  # type: ignore[arg-type]  # a batch is a list
            return
        task = asyncio.create_task(self._run_messages(messages, is_batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if self.role is Role.OPERATOR:
            # Agents wait until the call has taken its first step (which, for most operator
            # calls, is the whole call): scheduled after the task's step, so it runs after it.
            TURNS.operator_arrived()
            asyncio.get_running_loop().call_soon(TURNS.operator_started)

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
                self.send(replies)  # type: ignore[arg-type]  # a batch reply is a list
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

    async def _call(self, request: Request) -> MethodResult:
        method = self.methods.get(request.method)
        if method is None:
            raise RPCError(METHOD_NOT_FOUND, "unknown method; see docs/protocol.md")
        if method.operator_only and self.role is not Role.OPERATOR:
            raise RPCError(METHOD_NOT_FOUND, "this method is served on operator.sock only")
        if not self.authenticated and not method.before_auth:
            raise RPCError(UNAUTHORIZED, "authenticate first: call hello with the operator token")
        if self.role is Role.AGENT and not method.before_auth:
            if self.agent is None:
                identity.bind(self, identity.default_agent(self))
            if not method.inert and not self.acted:
                self.acted = True
                assert self.agent is not None
                self.daemon.sessions.hold(self, self.agent.owner)
        args = read_params(request.params, method.params)  # INVALID_PARAMS naming the param
        return await method.handler(CallContext(self.daemon, self), args)


__all__ = ["CallContext", "Connection", "Method", "Role"]
