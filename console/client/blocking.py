"""The blocking client, for hooks, scripts and the CLI: no event loop, one call at a time."""

from __future__ import annotations

import itertools
import os
import socket
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from console.client import dial
from console.client.errors import DaemonTimedOut, DaemonUnreachable, check_peer, socket_for
from console.locations import Locations
from console.protocol import jsonrpc
from console.protocol.events import EventError, decode_event
from console.protocol.jsonrpc import MAX_FRAME, Request, Response, RPCError
from console.protocol.notifications import Notification, NotificationError, decode_notification
from console.protocol.requests import Hello, MethodParams, OperationSubmit, Subscribe, to_params
from console.protocol.results import MethodResult, ResultError, SubscribeResult
from console.protocol.table import BY_PARAMS, decode_result

R = TypeVar("R", bound=MethodResult)


class Client:
    def __init__(
        self, sock: socket.socket, role: str, deadline: float | None = None, *, idle_s: float | None = None
    ) -> None:
        self.role = role
        self._sock = sock
        # An absolute time.monotonic() after which every wait gives up (None: no bound).
        self.deadline = deadline
        self._idle_s: float | None = idle_s  # bounds each wait for the daemon (None: no bound)
        self._buf = bytearray()
        self._ids = itertools.count(1)
        self._events: deque[dict[str, Any]] = deque()
        self.refused_events = 0  # event notifications that were no event of the protocol
        self.refused_results = 0  # answers that were not their method's result
        self.hello: dict[str, Any] = {}

    @classmethod
    def connect(
        cls,
        state_dir: str | os.PathLike[str] | Locations | None = None,
        *,
        role: str = "agent",
        client: str = "python",
        timeout_s: float | None = None,
        deadline: float | None = None,
        agent_pid: int | None = None,
        per_call: bool = False,
    ) -> Client:
        """Connect; ``timeout_s`` bounds every later wait for the daemon (None: no bound).

        ``deadline`` (a ``time.monotonic()`` value) bounds everything at once — connect,
        ``hello`` and every later call — so a caller that must answer by a fixed time
        (the Claude Code hook) never outlives it however the daemon stalls.
        ``agent_pid`` (agent role): the agent process this client runs under, so that a
        short-lived client (a hook, ``agent-console exec``) acts as that agent
        (docs/protocol.md, "Identity"); see :func:`console.protocol.procs.agent_process_pid`.
        ``per_call``: this client is one call of an agent; reaching no agent process, it is
        an anonymous identity of its own, never given a session grant.
        """
        path, token = socket_for(role, state_dir)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self = cls(sock, role, deadline)
        try:
            wait_s = self._wait_s(10.0)
        except DaemonUnreachable:
            sock.close()
            raise
        try:
            dial.unix_blocking(sock, str(path), wait_s)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            raise DaemonUnreachable(
                f"no daemon answers on {path} ({exc.strerror}); start one: agent-console daemon start"
            ) from None
        except TimeoutError:
            sock.close()
            raise DaemonUnreachable(f"timed out connecting to {path}") from None
        except OSError as exc:
            sock.close()
            raise DaemonUnreachable(f"cannot connect to {path}: {exc.strerror or exc}") from None
        try:
            check_peer(sock)
        except DaemonUnreachable:
            sock.close()
            raise
        self._idle_s = timeout_s
        try:
            params = Hello(
                token=token,
                client=client,
                agent_pid=None if token else agent_pid,
                per_call=per_call and not token,
            )
            self.hello = self.call("hello", params)
        except BaseException:
            self.close()
            raise
        return self

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def _wait_s(self, idle_s: float | None) -> float | None:
        """How long the next socket wait may take: the idle bound, cut by the deadline."""
        if self.deadline is None:
            return idle_s
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DaemonTimedOut("timed out waiting for the daemon (deadline passed)")
        return left if idle_s is None else min(idle_s, left)

    def _read_frame(self) -> bytes:
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                frame = bytes(self._buf[: end + 1])
                del self._buf[: end + 1]
                return frame
            if len(self._buf) > MAX_FRAME:
                raise DaemonUnreachable("the daemon sent an oversized frame")
            self._sock.settimeout(self._wait_s(self._idle_s))
            try:
                chunk = self._sock.recv(1 << 16)
            except TimeoutError:
                raise DaemonTimedOut("timed out waiting for the daemon") from None
            except OSError as exc:
                raise DaemonUnreachable(f"lost the daemon: {exc}") from None
            if not chunk:
                raise DaemonUnreachable("the daemon closed the connection")
            self._buf += chunk

    def request(
        self, params: MethodParams[R], on_notification: Callable[[str, Notification], None] | None = None
    ) -> R:
        """One call, typed by the method table: ``client.request(Decide(...))`` is a
        :class:`~console.protocol.results.DecideResult`, checked at the socket; raises
        :class:`ResultError` when the answer is not one. ``on_notification`` as for
        :meth:`call`."""
        row = BY_PARAMS[type(params)]
        _, typed = self._send(row.name, params, on_notification)
        assert isinstance(typed, row.result)
        return typed  # type: ignore[return-value]  # the row pairs these params with R

    def call(
        self,
        method: str,
        params: dict[str, Any] | MethodParams[Any] | None = None,
        on_notification: Callable[[str, Notification], None] | None = None,
    ) -> Any:
        """One call by name, for a method this client's table may not know or a caller
        relaying JSON; prefer :meth:`request`. ``params`` may be the method's Struct
        (fields at their default are not sent). Events that arrive meanwhile are queued for
        :meth:`next_event`; other notifications go to ``on_notification(method,
        notification)`` if given, typed (``exec`` output does). Returns the result as sent (decoded JSON) once it validated
        against the method's result Struct; raises :class:`ResultError` when it did not."""
        raw, _ = self._send(method, params, on_notification)
        return raw

    def _send(
        self,
        method: str,
        params: dict[str, Any] | MethodParams[Any] | None,
        on_notification: Callable[[str, Notification], None] | None,
    ) -> tuple[Any, MethodResult | None]:
        msg_id = next(self._ids)
        self._sock.settimeout(self._wait_s(self._idle_s))
        try:
            self._sock.sendall(jsonrpc.encode(jsonrpc.request(msg_id, method, to_params(params))))
        except TimeoutError:
            raise DaemonTimedOut("timed out sending to the daemon") from None
        except OSError as exc:
            raise DaemonUnreachable(f"lost the daemon: {exc}") from None
        while True:
            messages, _ = jsonrpc.decode_message(self._read_frame())
            for msg in messages:
                if isinstance(msg, Request) and msg.method == "event":
                    self._event(msg.params)
                elif isinstance(msg, Request) and on_notification is not None:
                    self._notified(on_notification, msg.method, msg.params)
                elif isinstance(msg, Response) and msg.id == msg_id:
                    if msg.error is not None:
                        raise RPCError(
                            int(msg.error.get("code", -32603)),
                            str(msg.error.get("message", "")),
                            msg.error.get("data"),
                        )
                    return msg.result, self._checked(method, msg.result)
                elif not isinstance(msg, Request | Response):
                    raise RPCError(msg.error.code, msg.error.message)

    def _event(self, params: Any) -> None:
        """Validated here, at the socket, as :class:`AsyncClient` does: what is no event of
        the protocol is logged, counted and skipped; the events after it still arrive."""
        try:
            decode_event(params)
        except EventError as exc:
            self.refused_events += 1
            import logging  # here: only a refused event logs, and each CLI start would pay for it

            logging.getLogger("agent-console.client").warning("refused an event from the daemon: %s", exc)
            return
        self._events.append(params)

    def _notified(self, handler: Callable[[str, Notification], None], method: str, params: Any) -> None:
        """Validated here, at the socket, as :class:`AsyncClient` does: each notification
        reaches ``handler`` as its Struct (console/protocol/notifications.py); one that is
        not, or one this protocol does not know, is counted and skipped."""
        try:
            notification = decode_notification(method, params)
        except NotificationError as exc:
            notification = None
            import logging  # here: only a refused notification logs

            logging.getLogger("agent-console.client").warning("%s", exc)
        if notification is None:
            self.refused_events += 1
            return
        handler(method, notification)

    def _checked(self, method: str, result: Any) -> MethodResult | None:
        """Validated here, at the socket, as :class:`AsyncClient` does: an answer that is
        not its method's result is counted and raised as :class:`ResultError` (naming
        the method and the field; the caller reports it, so it is not logged too); the
        connection stays usable."""
        try:
            return decode_result(method, result)
        except ResultError:
            self.refused_results += 1
            raise

    def fileno(self) -> int:
        """The socket's descriptor, to wait on it (``select``) between calls."""
        return self._sock.fileno()

    def buffered(self) -> bool:
        """Whether a whole frame already arrived (read with a call's answer): handle it with
        :meth:`pump`, the socket will not say so."""
        return b"\n" in self._buf

    def pump(self, on_notification: Callable[[str, Notification], None]) -> None:
        """Handle what arrived (call it when the socket is readable): each notification goes
        to ``on_notification``, events are queued for :meth:`next_event`. Waits only for
        the rest of a frame already begun; raises :class:`DaemonUnreachable` once closed."""
        self._sock.settimeout(self._wait_s(self._idle_s))
        while True:
            messages, _ = jsonrpc.decode_message(self._read_frame())
            for msg in messages:
                if isinstance(msg, Request) and msg.method == "event":
                    self._event(msg.params)
                elif isinstance(msg, Request):
                    self._notified(on_notification, msg.method, msg.params)
            if b"\n" not in self._buf:
                return

    def next_event(self) -> dict[str, Any]:
        """The next event after :meth:`subscribe` (blocks), as sent, once it validated
        against its type (console/protocol/events.py)."""
        while not self._events:
            messages, _ = jsonrpc.decode_message(self._read_frame())
            for msg in messages:
                if isinstance(msg, Request) and msg.method == "event":
                    self._event(msg.params)
        return self._events.popleft()

    def submit(self, operation: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """``operation.submit``, its answer as sent (decoded JSON, checked against
        :class:`~console.protocol.results.OperationSubmitResult` at the socket), for a
        script or test that reads the wire form; ``request(OperationSubmit(...))`` gives
        the Struct."""
        params = OperationSubmit(operation=operation, timeout_s=timeout_s)
        result: dict[str, Any] = self.call("operation.submit", params)
        return result

    def subscribe(self, topics: list[str] | None = None) -> SubscribeResult:
        """``subscribe`` to ``topics`` (every topic when None); its answer holds the status."""
        return self.request(Subscribe(topics=tuple(topics)) if topics else Subscribe())
