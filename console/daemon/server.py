"""The two Unix sockets: private directory, stale-socket handling, peer credentials.

Security checks follow tmux: the runtime directory must be a real directory owned by us
with mode 0700; each socket is created 0600; and every accepted connection's peer uid
(``SO_PEERCRED``) must be ours, whatever the filesystem permissions say.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

from console.locations import UnsafeLocation, check_socket_path
from console.protocol.peer import PeerCred, peer_credentials

log = logging.getLogger("agent-console.server")

READ_BUFFER = 256 * 1024
# An agent connection waiting for its turn (console/daemon/turns.py) holds at most twice
# this much read ahead of it; the rest waits in the kernel.
AGENT_READ_BUFFER = 64 * 1024
# What one recv() asks the kernel for. asyncio's socket transports ask for 256 KiB, and
# Python allocates that much for every recv() before shrinking it to what came: a block
# that size comes from mmap (glibc's threshold is 128 KiB, and limit_heap_growth keeps
# it there), so each small frame cost an mmap, page faults and a munmap: 95 us a
# send+recv of 300 bytes on a socketpair here, against 15-19 us at 64 KiB, which comes
# from the heap. A big frame takes a few more reads.
RECV_SIZE = 64 * 1024


class AlreadyRunning(RuntimeError):
    def __init__(self, pid: int | None) -> None:
        super().__init__(f"already running, pid {pid}" if pid else "already running")
        self.pid = pid


def live_daemon_pid(path: Path) -> int | None:
    """The pid of the daemon listening at ``path``, or None when nothing answers there."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
                return None
            raise
        return peer_credentials(s).pid


def prepare_socket_path(path: Path) -> None:
    """Replace a stale socket; refuse a live one, or anything that is not a socket."""
    check_socket_path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a socket"
        raise UnsafeLocation(f"{path} exists and is {kind}; remove it and start again")
    pid = live_daemon_pid(path)
    if pid is not None:
        raise AlreadyRunning(pid)
    log.info("replacing stale socket %s", path)
    path.unlink()


async def listen(
    path: Path,
    on_connect: Callable[[asyncio.StreamReader, asyncio.StreamWriter, PeerCred], Awaitable[None]],
    *,
    read_buffer: int = READ_BUFFER,
) -> asyncio.Server:
    prepare_socket_path(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    # As deep as the kernel allows (net.core.somaxconn): a burst of agents connecting at
    # once waits in the queue instead of failing with EAGAIN.
    sock.listen(4096)
    sock.setblocking(False)
    my_uid = os.geteuid()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raw = writer.get_extra_info("socket")
        try:
            peer = peer_credentials(raw)
        except OSError:
            writer.close()
            return
        transport = writer.transport
        if isinstance(getattr(transport, "max_size", None), int):  # asyncio's selector transport
            transport.max_size = RECV_SIZE  # type: ignore[attr-defined]  # checked just above
        if peer.uid != my_uid:
            log.warning("refused a connection on %s from uid %d (pid %d)", path.name, peer.uid, peer.pid)
            writer.close()
            return
        await on_connect(reader, writer, peer)

    # Connections frame their own input (console/daemon/connection.py) and read in chunks;
    # the limit only bounds what a transport buffers before it pauses reading. asyncio
    # listens again with its own backlog (100 unless told): the same depth, here too.
    return await asyncio.start_unix_server(accept, sock=sock, limit=read_buffer, backlog=4096)


def limit_heap_growth() -> None:
    """Big buffers (agents' frames, operations, history rows) come from mmap and go back
    to the system when freed: glibc otherwise raises its mmap threshold after the first
    free of a big block, and later big blocks then stay in the heap, so a burst of
    large requests would leave the daemon's RSS high for good. No-op off glibc."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 128 * 1024)
    mallopt(m_trim_threshold, 256 * 1024)


def close_socket_file(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
