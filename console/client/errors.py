"""Client-side errors, and the checks made before trusting a socket."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from console.locations import Locations, UnsafeLocation, ensure_private_dir, locate, read_token
from console.protocol.jsonrpc import RPCError

__all__ = ["DaemonTimedOut", "DaemonUnreachable", "RPCError", "socket_for"]


class DaemonUnreachable(ConnectionError):
    """No daemon answers (not running, wrong state dir, unsafe socket directory)."""


class DaemonTimedOut(DaemonUnreachable):
    """The other end is there but said nothing within the bound: unlike a refusal or a
    hang-up, the cause may be slowness on the way (a remote shell's start-up files)."""


def socket_for(role: str, state_dir: str | os.PathLike[str] | Locations | None) -> tuple[Path, str]:
    """The socket path for ``role`` and the token to present (operators only)."""
    loc = state_dir if isinstance(state_dir, Locations) else locate(state_dir)
    try:
        ensure_private_dir(loc.runtime_dir, create=False)
    except UnsafeLocation as exc:
        if not loc.runtime_dir.exists():
            raise DaemonUnreachable(
                f"no daemon is running for {loc.state_dir} (start one: agent-console daemon start)"
            ) from None
        raise DaemonUnreachable(str(exc)) from None
    if role == "operator":
        try:
            token = read_token(loc.token)
        except UnsafeLocation as exc:
            raise DaemonUnreachable(str(exc)) from None
        return loc.operator_socket, token
    if role != "agent":
        raise ValueError("role is 'agent' or 'operator'")
    return loc.agent_socket, ""


def check_peer(sock: socket.socket) -> None:
    """The daemon must run as us: a socket someone else answers is not ours to trust."""
    from console.protocol.peer import peer_uid

    if peer_uid(sock) != os.geteuid():
        raise DaemonUnreachable("the process answering on the socket is not running as you; refusing it")
