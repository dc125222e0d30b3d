"""Connecting to a daemon socket that may be too busy to accept.

A Unix listening socket whose accept queue is full answers a non-blocking connect with
EAGAIN. That is a busy daemon, not a missing one: both clients retry at a short interval
until their wait ends, then report a timeout. (asyncio's own ``open_unix_connection``
takes EAGAIN for "in progress" and hands back a socket that was never connected.)
"""

from __future__ import annotations

import socket
import time

BUSY_RETRY_S = 0.01


def unix_blocking(sock: socket.socket, path: str, wait_s: float | None) -> None:
    """Connect ``sock`` to ``path`` within ``wait_s``; TimeoutError when it stays busy.
    With no bound (None) a blocking connect waits for room in the queue by itself."""
    if wait_s is None:
        sock.settimeout(None)
        sock.connect(path)
        return
    end = time.monotonic() + wait_s
    while True:
        sock.settimeout(max(0.001, end - time.monotonic()))
        try:
            sock.connect(path)
            return
        except BlockingIOError:
            if time.monotonic() + BUSY_RETRY_S >= end:
                raise TimeoutError from None
            time.sleep(BUSY_RETRY_S)


async def unix_async(path: str, wait_s: float) -> socket.socket:
    """A non-blocking socket connected to ``path`` within ``wait_s``; TimeoutError when
    it stays busy, the OSError of the connect otherwise."""
    import asyncio  # here: the blocking clients (the CLI, hooks) never load it

    loop = asyncio.get_running_loop()
    end = loop.time() + wait_s
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        while True:
            try:
                sock.connect(path)  # a Unix socket connects at once or not at all
                return sock
            except BlockingIOError:
                if loop.time() + BUSY_RETRY_S >= end:
                    raise TimeoutError from None
                await asyncio.sleep(BUSY_RETRY_S)
    except BaseException:
        sock.close()
        raise
