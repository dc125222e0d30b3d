"""The operator's client for `agent-console run`: the standard library only
(console/protocol/linewire.py says why).

`agent-console run -- claude` starts before the agent does, so every millisecond of its
own start-up is the agent's. Attaching a terminal needs ``hello``, ``sessions.new``,
``sessions.attach`` and the session's output as notifications, on the operator socket
with the operator token read as the full client reads it (console/locations.py).
"""

from __future__ import annotations

import socket
import time

from console.protocol.linewire import LineWire, Refused, Unreachable, check_runtime

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from console.locations import Locations

__all__ = ["OperatorWire", "Refused", "Unreachable"]

DIAL_S = 10.0  # how long a daemon may stay too busy to accept, as the full client allows


class OperatorWire(LineWire):
    """One blocking operator connection; one call at a time, notifications to a callback."""

    def __init__(self, sock: socket.socket, idle_s: float | None) -> None:
        super().__init__(sock)
        self._idle_s = idle_s  # bounds each wait for the daemon (None: no bound)

    @classmethod
    def connect(cls, loc: Locations, *, client: str, timeout_s: float | None = 30.0) -> OperatorWire:
        from console.locations import UnsafeLocation, read_token

        check_runtime(loc)
        try:
            token = read_token(loc.token)
        except UnsafeLocation as exc:
            raise Unreachable(str(exc)) from None
        self = cls(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), timeout_s)
        self._open(str(loc.operator_socket), time.monotonic() + DIAL_S, {"token": token, "client": client})
        return self

    def __enter__(self) -> OperatorWire:
        return self

    def _wait_s(self) -> float | None:
        return self._idle_s

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
