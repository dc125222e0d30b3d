"""The operator's client for `agent-console run`: the standard library only.

`agent-console run -- claude` starts before the agent does, so every millisecond of its
own start-up is the agent's. :class:`console.client.Client` checks every result and
event against the protocol's types (msgspec, the contract): importing it costs more
than starting the session takes. Attaching a terminal needs none of it: ``hello``,
``sessions.new``, ``sessions.attach`` and the session's output as notifications, read
as plain JSON from a socket whose peer runs as this user (SO_PEERCRED) in a private
runtime directory, with the operator token read as the full client reads it
(console/locations.py). The daemon validates what it is sent, as from any client.
"""

from __future__ import annotations

import json
import os
import socket
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from console.locations import Locations

MAX_FRAME = 4 * 1024 * 1024  # the protocol's (console/protocol/jsonrpc.py)
BUSY_RETRY_S = 0.01
DIAL_S = 10.0  # how long a daemon may stay too busy to accept, as the full client allows


class Unreachable(ConnectionError):
    """No daemon answers (not running, wrong state dir, unsafe socket directory, stalled)."""


class Refused(Exception):
    """The daemon answered a call with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class OperatorWire:
    """One blocking operator connection; one call at a time, notifications to a callback."""

    def __init__(self, sock: socket.socket, idle_s: float | None) -> None:
        self._sock = sock
        self._idle_s = idle_s  # bounds each wait for the daemon (None: no bound)
        self._buf = bytearray()
        self._next_id = 1
        self.hello: dict[str, Any] = {}

    @classmethod
    def connect(cls, loc: Locations, *, client: str, timeout_s: float | None = 30.0) -> OperatorWire:
        from console.locations import UnsafeLocation, ensure_private_dir, read_token

        try:
            ensure_private_dir(loc.runtime_dir, create=False)
            token = read_token(loc.token)
        except UnsafeLocation as exc:
            if not loc.runtime_dir.exists():
                raise Unreachable(
                    f"no daemon is running for {loc.state_dir} (start one: agent-console daemon start)"
                ) from None
            raise Unreachable(str(exc)) from None
        path = str(loc.operator_socket)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self = cls(sock, timeout_s)
        try:
            self._dial(path, DIAL_S)
            self._check_peer()
            self.hello = self.call("hello", {"token": token, "client": client})
        except BaseException:
            sock.close()
            raise
        return self

    def __enter__(self) -> OperatorWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def _dial(self, path: str, wait_s: float) -> None:
        end = time.monotonic() + wait_s
        while True:
            self._sock.settimeout(max(0.001, end - time.monotonic()))
            try:
                self._sock.connect(path)
                return
            except BlockingIOError:  # the accept queue is full: a busy daemon, not a missing one
                if time.monotonic() + BUSY_RETRY_S >= end:
                    raise Unreachable(f"timed out connecting to {path}") from None
                time.sleep(BUSY_RETRY_S)
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                raise Unreachable(
                    f"no daemon answers on {path} ({exc.strerror}); start one: agent-console daemon start"
                ) from None
            except TimeoutError:
                raise Unreachable(f"timed out connecting to {path}") from None
            except OSError as exc:
                raise Unreachable(f"cannot connect to {path}: {exc.strerror or exc}") from None

    def _check_peer(self) -> None:
        from console.protocol.peer import peer_uid

        if peer_uid(self._sock) != os.geteuid():
            raise Unreachable("the process answering on the socket is not running as you; refusing it")

    def _frame(self) -> dict[str, Any]:
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                raw = bytes(self._buf[:end])
                del self._buf[: end + 1]
                try:
                    msg = json.loads(raw)
                except ValueError:
                    raise Unreachable("the daemon sent something that is not JSON") from None
                if not isinstance(msg, dict):
                    raise Unreachable("the daemon sent something that is not a JSON-RPC message")
                return msg
            if len(self._buf) > MAX_FRAME:
                raise Unreachable("the daemon sent an oversized frame")
            self._sock.settimeout(self._idle_s)
            try:
                chunk = self._sock.recv(1 << 16)
            except TimeoutError:
                raise Unreachable("timed out waiting for the daemon") from None
            except OSError as exc:
                raise Unreachable(f"lost the daemon: {exc}") from None
            if not chunk:
                raise Unreachable("the daemon closed the connection")
            self._buf += chunk

    @staticmethod
    def _notify(msg: dict[str, Any], on_notification: Callable[[str, dict[str, Any]], None] | None) -> None:
        method, params = msg.get("method"), msg.get("params")
        if on_notification is not None and isinstance(method, str) and isinstance(params, dict):
            on_notification(method, params)

    def call(
        self,
        method: str,
        params: dict[str, Any],
        on_notification: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> Any:
        """One call; its result, or :class:`Refused` with the daemon's error. Notifications
        that arrive meanwhile go to ``on_notification`` (dropped without one)."""
        msg_id = self._next_id
        self._next_id += 1
        data = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}) + "\n"
        self._sock.settimeout(self._idle_s)
        try:
            self._sock.sendall(data.encode("utf-8", "surrogatepass"))
        except TimeoutError:
            raise Unreachable("timed out sending to the daemon") from None
        except OSError as exc:
            raise Unreachable(f"lost the daemon: {exc}") from None
        while True:
            msg = self._frame()
            if "id" not in msg:
                self._notify(msg, on_notification)
                continue
            if msg.get("id") != msg_id:
                continue
            error = msg.get("error")
            if isinstance(error, dict):
                raise Refused(int(error.get("code", -32603)), str(error.get("message", "")))
            if "result" not in msg:
                raise Unreachable("the daemon's answer has neither result nor error")
            return msg["result"]

    def fileno(self) -> int:
        """The socket's descriptor, to wait on it (``select``) between calls."""
        return self._sock.fileno()

    def buffered(self) -> bool:
        """Whether a whole frame already arrived (read with a call's answer): handle it with
        :meth:`pump`, the socket will not say so."""
        return b"\n" in self._buf

    def pump(self, on_notification: Callable[[str, dict[str, Any]], None]) -> None:
        """Handle what arrived (call it when the socket is readable): each notification goes
        to ``on_notification``. Waits only for the rest of a frame already begun; raises
        :class:`Unreachable` once closed."""
        while True:
            msg = self._frame()
            if "id" not in msg:
                self._notify(msg, on_notification)
            if b"\n" not in self._buf:
                return
