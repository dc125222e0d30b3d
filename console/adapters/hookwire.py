"""The hooks' own client for agent.sock: the standard library only.

Every tool call of every supervised agent starts a hook process, so its start-up is
paid on each call. :class:`console.client.Client` validates every event and result
against the protocol's types (msgspec, the contract), which costs more to import than
the whole round trip takes; a hook needs none of it: it sends ``hello`` and one or two
calls on agent.sock and reads their answers. The daemon validates what it is sent, as
from any client; what comes back is read as plain JSON from a socket whose peer runs as
this user (SO_PEERCRED), the same check the full client makes.

Everything shares one ``deadline`` (a ``time.monotonic()`` value): connecting, ``hello``
and every call, so a stalled daemon cannot keep a hook past it.
"""

from __future__ import annotations

import json
import os
import socket
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from typing import Any

MAX_FRAME = 4 * 1024 * 1024  # the protocol's (console/protocol/jsonrpc.py)
BUSY_RETRY_S = 0.01


class Unreachable(ConnectionError):
    """No daemon answered in time (down, stalled, unsafe directory, not ours)."""


class Refused(Exception):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class HookClient:
    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self.deadline = deadline
        self._buf = bytearray()
        self._next_id = 1
        self.hello: dict[str, Any] = {}

    @classmethod
    def connect(
        cls,
        state_dir: str | None,
        *,
        client: str,
        deadline: float,
        agent_pid: int | None,
        per_call: bool = True,
    ) -> HookClient:
        from console.locations import UnsafeLocation, ensure_private_dir, locate

        loc = locate(state_dir)
        try:
            ensure_private_dir(loc.runtime_dir, create=False)
        except UnsafeLocation as exc:
            if not loc.runtime_dir.exists():
                raise Unreachable(
                    f"no daemon is running for {loc.state_dir} (start one: agent-console daemon start)"
                ) from None
            raise Unreachable(str(exc)) from None
        path = str(loc.agent_socket)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self = cls(sock, deadline)
        try:
            self._dial(path)
            self._check_peer()
            params: dict[str, Any] = {"client": client}
            if agent_pid is not None:
                params["agent_pid"] = agent_pid
            if per_call:
                params["per_call"] = True
            self.hello = self.call("hello", params)
        except BaseException:
            sock.close()
            raise
        return self

    def __enter__(self) -> HookClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._sock.close()

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Unreachable("timed out waiting for the daemon (deadline passed)")
        return left

    def _dial(self, path: str) -> None:
        while True:
            self._sock.settimeout(max(0.001, min(10.0, self._left())))
            try:
                self._sock.connect(path)
                return
            except BlockingIOError:  # the accept queue is full: a busy daemon, not a missing one
                if self._left() <= BUSY_RETRY_S:
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

    def _frame(self) -> bytes:
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                frame = bytes(self._buf[:end])
                del self._buf[: end + 1]
                return frame
            if len(self._buf) > MAX_FRAME:
                raise Unreachable("the daemon sent an oversized frame")
            self._sock.settimeout(self._left())
            try:
                chunk = self._sock.recv(1 << 16)
            except TimeoutError:
                raise Unreachable("timed out waiting for the daemon") from None
            except OSError as exc:
                raise Unreachable(f"lost the daemon: {exc}") from None
            if not chunk:
                raise Unreachable("the daemon closed the connection")
            self._buf += chunk

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """One call; its result, or :class:`Refused` with the daemon's error."""
        msg_id = self._next_id
        self._next_id += 1
        data = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}) + "\n"
        self._sock.settimeout(self._left())
        try:
            self._sock.sendall(data.encode("utf-8", "surrogatepass"))
        except TimeoutError:
            raise Unreachable("timed out sending to the daemon") from None
        except OSError as exc:
            raise Unreachable(f"lost the daemon: {exc}") from None
        while True:
            raw = self._frame()
            try:
                msg = json.loads(raw)
            except ValueError:
                raise Unreachable("the daemon sent something that is not JSON") from None
            if not isinstance(msg, dict) or msg.get("id") != msg_id:
                continue  # a notification (events are not subscribed to), or another id
            error = msg.get("error")
            if isinstance(error, dict):
                raise Refused(int(error.get("code", -32603)), str(error.get("message", "")))
            if "result" not in msg:
                raise Unreachable("the daemon's answer has neither result nor error")
            return msg["result"]
