"""Who is on the other end of a Unix socket (SO_PEERCRED)."""

from __future__ import annotations

import socket
import struct

_UCRED = struct.Struct("3i")

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from typing import NamedTuple

    class PeerCred(NamedTuple):
        pid: int
        uid: int
        gid: int

else:
    # The same tuple without typing.NamedTuple: every hook process checks its daemon's uid
    # with this module, and importing typing would cost each tool call more than the check.
    from collections import namedtuple

    PeerCred = namedtuple("PeerCred", "pid uid gid")


def peer_credentials(sock: socket.socket) -> PeerCred:
    return PeerCred(*_UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)))


def peer_uid(sock: socket.socket) -> int:
    return peer_credentials(sock).uid
