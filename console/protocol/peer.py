"""Who is on the other end of a Unix socket (SO_PEERCRED)."""

from __future__ import annotations

import socket
import struct
from typing import NamedTuple

_UCRED = struct.Struct("3i")


class PeerCred(NamedTuple):
    pid: int
    uid: int
    gid: int


def peer_credentials(sock: socket.socket) -> PeerCred:
    return PeerCred(*_UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)))


def peer_uid(sock: socket.socket) -> int:
    return peer_credentials(sock).uid
