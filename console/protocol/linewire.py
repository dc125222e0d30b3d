"""A blocking JSON-RPC connection to the daemon with the standard library only.

The hooks (every tool call of every supervised agent starts one) and `agent-console run`
(which starts before the agent does) pay their own start-up on each use.
:class:`console.client.Client` checks every result and event against the protocol's
types (msgspec, the contract), which costs more to import than their whole round trip
takes. They need none of it: ``hello`` and a few calls, their answers read as plain JSON
from a socket whose peer runs as this user (SO_PEERCRED), the check the full client
makes. The daemon validates what it is sent, as from any client.

How long each wait may last is the subclass's (:meth:`LineWire._wait_s`): the hooks
share one deadline across everything, `run` bounds each wait.
"""

from __future__ import annotations

import json
import os
import socket
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from console.locations import Locations

MAX_FRAME = 4 * 1024 * 1024  # the protocol's (console/protocol/jsonrpc.py)
BUSY_RETRY_S = 0.01


class Unreachable(ConnectionError):
    """No daemon answered in time (down, stalled, unsafe directory, not ours)."""


class Refused(Exception):
    """The daemon answered a call with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_runtime(loc: Locations) -> None:
    """The runtime directory is there and private, else :class:`Unreachable` saying why."""
    from console.locations import UnsafeLocation, ensure_private_dir

    try:
        ensure_private_dir(loc.runtime_dir, create=False)
    except UnsafeLocation as exc:
        if not loc.runtime_dir.exists():
            raise Unreachable(
                f"no daemon is running for {loc.state_dir} (start one: agent-console daemon start)"
            ) from None
        raise Unreachable(str(exc)) from None


class LineWire:
    """One connection, one call at a time; notifications go to a callback or are dropped."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buf = bytearray()
        self._next_id = 1
        self.hello: dict[str, Any] = {}

    def _wait_s(self) -> float | None:
        """How long the next wait for the daemon may last (None: no bound)."""
        raise NotImplementedError

    def __enter__(self) -> LineWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def _open(self, path: str, dial_until: float, hello: dict[str, Any]) -> None:
        """Connect (waiting out a full accept queue until ``dial_until``, a monotonic
        time), check the peer, say ``hello``; the socket is closed on any failure."""
        try:
            self._dial(path, dial_until)
            self._check_peer()
            self.hello = self.call("hello", hello)
        except BaseException:
            self._sock.close()
            raise

    def _dial(self, path: str, until: float) -> None:
        while True:
            left = until - time.monotonic()
            if left <= 0:
                raise Unreachable(f"timed out connecting to {path}")
            self._sock.settimeout(max(0.001, min(10.0, left)))
            try:
                self._sock.connect(path)
                return
            except BlockingIOError:  # the accept queue is full: a busy daemon, not a missing one
                if left <= BUSY_RETRY_S:
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
            self._sock.settimeout(self._wait_s())
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
        self._sock.settimeout(self._wait_s())
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
