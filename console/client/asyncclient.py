"""The asyncio client: concurrent calls on one connection, events as an async iterator."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from console.client import dial
from console.client.errors import DaemonUnreachable, check_peer, socket_for
from console.locations import Locations
from console.protocol import jsonrpc
from console.protocol.events import Event, EventError, decode_event
from console.protocol.jsonrpc import MAX_FRAME, Request, Response, RPCError
from console.protocol.notifications import (
    NOTIFICATIONS,
    SESSION_OUTPUT_PREFIX,
    Notification,
    NotificationError,
    decode_notification,
    exact_session_output,
)
from console.protocol.requests import Hello, MethodParams, OperationSubmit, Subscribe, to_params
from console.protocol.results import MethodResult, ResultError, SubscribeResult
from console.protocol.table import BY_PARAMS, decode_result

log = logging.getLogger("agent-console.client")

R = TypeVar("R", bound=MethodResult)

# How long a connect waits for a daemon too busy to accept (console/client/dial.py).
CONNECT_WAIT_S = 10.0


class AsyncClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, role: str) -> None:
        self.role = role
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        # Each call waiting for its answer: the method (its result is checked against
        # it) and the future the answer resolves, with the answer as sent and as its Struct.
        self._waiting: dict[int, tuple[str, asyncio.Future[tuple[Any, MethodResult | None]]]] = {}
        self._events: asyncio.Queue[Event | None] = asyncio.Queue()
        self.refused_events = 0  # event notifications that were no event of the protocol
        self.refused_results = 0  # answers that were not their method's result
        self._handlers: dict[str, Callable[[Notification], None]] = {}
        self._reader_task = asyncio.create_task(self._read_loop())
        self.hello: dict[str, Any] = {}

    @classmethod
    async def connect(
        cls,
        state_dir: str | os.PathLike[str] | Locations | None = None,
        *,
        role: str = "agent",
        client: str = "python",
        identity: dict[str, str] | None = None,
    ) -> AsyncClient:
        """Connect and say hello. ``identity`` (agent role): ``{"agent_id", "agent_secret"}``
        of an identity an earlier connection was given, to act as that same agent."""
        path, token = socket_for(role, state_dir)
        try:
            sock = await dial.unix_async(str(path), CONNECT_WAIT_S)
            reader, writer = await asyncio.open_unix_connection(sock=sock, limit=MAX_FRAME)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise DaemonUnreachable(
                f"no daemon answers on {path} ({exc.strerror}); start one: agent-console daemon start"
            ) from None
        except TimeoutError:
            raise DaemonUnreachable(f"timed out connecting to {path} (the daemon is busy)") from None
        except OSError as exc:
            raise DaemonUnreachable(f"cannot connect to {path}: {exc.strerror}") from None
        check_peer(writer.get_extra_info("socket"))
        self = cls(reader, writer, role)
        try:
            params = Hello(token=token, client=client)
            if identity and not token:
                params = Hello(
                    client=client, agent_id=identity["agent_id"], agent_secret=identity["agent_secret"]
                )
            self.hello = await self.call("hello", params)
        except BaseException:
            await self.close()
            raise
        return self

    @property
    def closed(self) -> bool:
        """The connection has ended (the daemon or the link hung up, or :meth:`close`)."""
        return self._reader_task.done()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._reader_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader_task
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

    async def _read_loop(self) -> None:
        error: Exception = DaemonUnreachable("the daemon closed the connection")
        try:
            while True:
                line = await self._reader.readuntil(b"\n")
                if line.startswith(SESSION_OUTPUT_PREFIX) and (
                    (output := self._handlers.get("session.output")) is not None
                    and (fast := exact_session_output(line)) is not None
                ):
                    output(fast)  # the common frame of an attach stream, exactly as the daemon writes it
                    continue
                messages, _ = jsonrpc.decode_message(line)
                for msg in messages:
                    if isinstance(msg, Response):
                        waiting = self._waiting.pop(msg.id, None) if isinstance(msg.id, int) else None
                        if waiting is not None and not waiting[1].done():
                            method, fut = waiting
                            if msg.error is not None:
                                fut.set_exception(
                                    RPCError(
                                        int(msg.error.get("code", -32603)),
                                        str(msg.error.get("message", "")),
                                        msg.error.get("data"),
                                    )
                                )
                            else:
                                self._answer(fut, method, msg.result)
                    elif isinstance(msg, Request) and msg.method == "event":
                        self._event(msg.params)
                    elif isinstance(msg, Request):
                        handler = self._handlers.get(msg.method)
                        if handler is not None:
                            self._notified(handler, msg.method, msg.params)
                    elif not isinstance(msg, Request):
                        # An error without an id (e.g. our frame was refused): fail every waiter.
                        error = RPCError(msg.error.code, msg.error.message)
                        for _, fut in self._waiting.values():
                            if not fut.done():
                                fut.set_exception(error)
                        self._waiting.clear()
        except (asyncio.IncompleteReadError, ConnectionError, OSError, asyncio.LimitOverrunError):
            pass
        finally:
            for _, fut in self._waiting.values():
                if not fut.done():
                    fut.set_exception(error)
            self._waiting.clear()
            self._events.put_nowait(None)

    def _event(self, params: Any) -> None:
        """Validated here, at the socket: what is no event of the protocol is logged and
        skipped, and the events after it still arrive."""
        try:
            event = decode_event(params)
        except EventError as exc:
            self.refused_events += 1
            log.warning("refused an event from the daemon: %s", exc)
            return
        self._events.put_nowait(event)

    def _answer(self, fut: asyncio.Future[tuple[Any, MethodResult | None]], method: str, result: Any) -> None:
        """Validated here, at the socket, as events are: an answer that is not its
        method's result (console/protocol/table.py) is counted in :attr:`refused_results`
        and fails its call with :class:`ResultError`, which names the method and the field
        (the caller reports it, so it is not logged too); the connection goes on serving
        the other calls."""
        try:
            typed = decode_result(method, result)
        except ResultError as exc:
            self.refused_results += 1
            fut.set_exception(exc)
        else:
            fut.set_result((result, typed))

    async def request(self, params: MethodParams[R]) -> R:
        """One call, typed by the method table: ``await client.request(Decide(...))`` is
        a :class:`~console.protocol.results.DecideResult`, checked at the socket; raises
        :class:`ResultError` when the answer is not one."""
        row = BY_PARAMS[type(params)]
        _, typed = await self._send(row.name, params)
        assert isinstance(typed, row.result)
        return typed  # type: ignore[return-value]  # the row pairs these params with R

    async def call(self, method: str, params: dict[str, Any] | MethodParams[Any] | None = None) -> Any:
        """One call by name, for a method this client's table may not know (a daemon of
        another version) or a caller relaying JSON. Returns the result as sent (decoded
        JSON) once it validated against the method's result Struct; raises
        :class:`ResultError` when it did not. Prefer :meth:`request`."""
        raw, _ = await self._send(method, params)
        return raw

    async def _send(
        self, method: str, params: dict[str, Any] | MethodParams[Any] | None
    ) -> tuple[Any, MethodResult | None]:
        if self._reader_task.done():
            raise DaemonUnreachable("the connection to the daemon is closed")
        msg_id = next(self._ids)
        fut: asyncio.Future[tuple[Any, MethodResult | None]] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = (method, fut)
        try:
            self._writer.write(jsonrpc.encode(jsonrpc.request(msg_id, method, to_params(params))))
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            self._waiting.pop(msg_id, None)
            raise DaemonUnreachable(f"lost the daemon: {exc}") from None
        return await fut

    def on_notification(self, method: str, handler: Callable[[Notification], None] | None) -> None:
        """Call ``handler(notification)`` for each notification ``method`` other than
        ``event`` (``output`` of exec, ``session.output``/``session.snapshot``/… of an
        attach), typed (:mod:`console.protocol.notifications`). It runs on the reading task:
        keep it quick. None removes it."""
        if method not in NOTIFICATIONS:
            raise ValueError(f"{method}: not a notification of the protocol ({', '.join(NOTIFICATIONS)})")
        if handler is None:
            self._handlers.pop(method, None)
        else:
            self._handlers[method] = handler

    def _notified(self, handler: Callable[[Notification], None], method: str, params: Any) -> None:
        """Validated here, at the socket, as events are: what is not its method's
        notification is logged, counted in :attr:`refused_events` and skipped."""
        try:
            notification = decode_notification(method, params)
        except NotificationError as exc:
            self.refused_events += 1
            log.warning("refused a notification from the daemon: %s", exc)
            return
        assert notification is not None  # only known methods have handlers
        handler(notification)

    async def events(self) -> AsyncIterator[Event]:
        """Events after :meth:`subscribe`, typed (:mod:`console.protocol.events`), in order;
        ends when the connection closes. A notification that does not validate as an event
        is logged (``agent-console.client``), counted in :attr:`refused_events` and skipped."""
        while (event := await self._events.get()) is not None:
            yield event

    # --------------------------------------------------------------- helpers

    async def submit(self, operation: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """``operation.submit``, its answer as sent (decoded JSON, checked against
        :class:`~console.protocol.results.OperationSubmitResult` at the socket), for a
        script or test that reads the wire form; ``request(OperationSubmit(...))`` gives
        the Struct."""
        params = OperationSubmit(operation=operation, timeout_s=timeout_s)
        result: dict[str, Any] = await self.call("operation.submit", params)
        return result

    async def subscribe(self, topics: list[str] | None = None) -> SubscribeResult:
        """``subscribe`` to ``topics`` (every topic when None); its answer holds the status."""
        return await self.request(Subscribe(topics=tuple(topics)) if topics else Subscribe())
