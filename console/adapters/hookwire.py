"""The hooks' own client for agent.sock: the standard library only
(console/protocol/linewire.py says why).

Everything shares one ``deadline`` (a ``time.monotonic()`` value): connecting, ``hello``
and every call, so a stalled daemon cannot keep a hook past it.
"""

from __future__ import annotations

import socket
import time

from console.protocol.linewire import LineWire, Refused, Unreachable, check_runtime

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["HookClient", "Refused", "Unreachable"]


class HookClient(LineWire):
    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__(sock)
        self.deadline = deadline

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
        from console.locations import locate

        loc = locate(state_dir)
        check_runtime(loc)
        params: dict[str, Any] = {"client": client}
        if agent_pid is not None:
            params["agent_pid"] = agent_pid
        if per_call:
            params["per_call"] = True
        self = cls(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), deadline)
        self._open(str(loc.agent_socket), deadline, params)
        return self

    def __enter__(self) -> HookClient:
        return self

    def _wait_s(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Unreachable("timed out waiting for the daemon (deadline passed)")
        return left
