"""The blocking client, for hooks, scripts and the CLI: no event loop, one call at a time."""

from __future__ import annotations

import itertools
import os
import socket
from collections import deque
from collections.abc import Callable
from typing import Any

from console.client.errors import DaemonUnreachable, check_peer, socket_for
from console.locations import Locations
from console.protocol import jsonrpc
from console.protocol.jsonrpc import MAX_FRAME, Request, Response, RPCError


class Client:
    def __init__(self, sock: socket.socket, role: str) -> None:
        self.role = role
        self._sock = sock
        self._buf = bytearray()
        self._ids = itertools.count(1)
        self._events: deque[dict[str, Any]] = deque()
        self.hello: dict[str, Any] = {}

    @classmethod
    def connect(
        cls,
        state_dir: str | os.PathLike[str] | Locations | None = None,
        *,
        role: str = "agent",
        client: str = "python",
        timeout_s: float | None = None,
    ) -> Client:
        """Connect; ``timeout_s`` bounds every later wait for the daemon (None: no bound)."""
        path, token = socket_for(role, state_dir)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10.0)
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            raise DaemonUnreachable(
                f"no daemon answers on {path} ({exc.strerror}); start one: agent-console daemon start"
            ) from None
        except OSError as exc:
            sock.close()
            raise DaemonUnreachable(f"cannot connect to {path}: {exc.strerror or exc}") from None
        try:
            check_peer(sock)
        except DaemonUnreachable:
            sock.close()
            raise
        sock.settimeout(timeout_s)
        self = cls(sock, role)
        try:
            self.hello = self.call(
                "hello", {"token": token, "client": client} if token else {"client": client}
            )
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

    def _read_frame(self) -> bytes:
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                frame = bytes(self._buf[: end + 1])
                del self._buf[: end + 1]
                return frame
            if len(self._buf) > MAX_FRAME:
                raise DaemonUnreachable("the daemon sent an oversized frame")
            try:
                chunk = self._sock.recv(1 << 16)
            except TimeoutError:
                raise DaemonUnreachable("timed out waiting for the daemon") from None
            except OSError as exc:
                raise DaemonUnreachable(f"lost the daemon: {exc}") from None
            if not chunk:
                raise DaemonUnreachable("the daemon closed the connection")
            self._buf += chunk

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        on_notification: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> Any:
        """One call. Notifications that arrive meanwhile go to ``on_notification`` if given
        (``exec`` output does), else events are queued for :meth:`next_event`."""
        msg_id = next(self._ids)
        try:
            self._sock.sendall(jsonrpc.encode(jsonrpc.request(msg_id, method, params)))
        except OSError as exc:
            raise DaemonUnreachable(f"lost the daemon: {exc}") from None
        while True:
            messages, _ = jsonrpc.decode_message(self._read_frame())
            for msg in messages:
                if isinstance(msg, Request) and on_notification is not None:
                    on_notification(msg.method, msg.params)
                elif isinstance(msg, Request) and msg.method == "event":
                    self._events.append(msg.params)
                elif isinstance(msg, Response) and msg.id == msg_id:
                    if msg.error is not None:
                        raise RPCError(
                            int(msg.error.get("code", -32603)),
                            str(msg.error.get("message", "")),
                            msg.error.get("data"),
                        )
                    return msg.result
                elif not isinstance(msg, Request | Response):
                    raise RPCError(msg.error.code, msg.error.message)

    def next_event(self) -> dict[str, Any]:
        """The next event after :meth:`subscribe` (blocks)."""
        while not self._events:
            messages, _ = jsonrpc.decode_message(self._read_frame())
            for msg in messages:
                if isinstance(msg, Request) and msg.method == "event":
                    self._events.append(msg.params)
        return self._events.popleft()

    def submit(self, operation: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"operation": operation}
        if timeout_s is not None:
            params["timeout_s"] = timeout_s
        result: dict[str, Any] = self.call("operation.submit", params)
        return result

    def subscribe(self, topics: list[str] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.call("subscribe", {"topics": topics} if topics else {})
        return result
