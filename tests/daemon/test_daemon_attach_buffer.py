"""An attach stream's socket holds whole output frames, so one send a loop turn moves them.

The kernel's default send buffer (about 208 KiB) is smaller than one output frame of a
flood; the daemon widens it for a connection that attaches (Connection.widen_send_buffer),
on a real socket pair here.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

from console.daemon.connection import Connection, Role
from console.daemon.session_service import ATTACH_SEND_BUFFER
from console.protocol.peer import PeerCred


def _wmem_max() -> int:
    return int(Path("/proc/sys/net/core/wmem_max").read_text())


async def _connection() -> tuple[Connection, socket.socket]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    reader, writer = await asyncio.open_unix_connection(sock=ours)
    daemon: Any = None  # widening the buffer asks nothing of the daemon
    conn = Connection(
        daemon, Role.OPERATOR, PeerCred(os.getpid(), os.getuid(), os.getgid()), reader, writer, {}
    )
    return conn, theirs


async def test_attaching_widens_the_send_buffer_as_far_as_the_kernel_allows():
    conn, theirs = await _connection()
    sock = conn.writer.get_extra_info("socket")
    try:
        before = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        conn.widen_send_buffer(ATTACH_SEND_BUFFER)
        after = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        # Linux reports twice what was asked (its bookkeeping), capped at twice wmem_max.
        assert after >= min(ATTACH_SEND_BUFFER, _wmem_max())
        assert after >= before
        if _wmem_max() >= ATTACH_SEND_BUFFER:
            # The point of it: a whole 1 MiB frame leaves in one send, unread by the peer.
            frame = b"x" * (1 << 20)
            sock_raw = socket.socket(fileno=os.dup(sock.fileno()))
            try:
                sock_raw.setblocking(False)
                assert sock_raw.send(frame) == len(frame)
            finally:
                sock_raw.close()
        # Never narrowed: widening again to less keeps what it has.
        conn.widen_send_buffer(4096)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == after
    finally:
        conn.writer.close()
        theirs.close()
