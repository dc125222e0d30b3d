"""The egress broker in-process: the real service, store and approval broker, a run's
Unix socket as the sandbox's bridge reaches it, and a server on the host's loopback."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from console.daemon.broker import Broker
from console.daemon.egress import EgressRun, EgressService, RunContext
from console.daemon.events import EventHub
from console.daemon.policy_source import PolicySource
from console.store import Store


class Upstream:
    """A server on the host's loopback: answers any request with ``ok``; counts arrivals.
    A request ``ECHO`` is answered with every byte that follows it, until the client's EOF."""

    def __init__(self) -> None:
        self.arrived = 0
        self.server: asyncio.Server | None = None
        self.port = 0
        # A port bound but not listening: connecting to it is refused.
        self.closed = socket.socket()
        self.closed.bind(("127.0.0.1", 0))
        self.closed_port = self.closed.getsockname()[1]

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.arrived += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            if head.startswith(b"ECHO"):
                # Small buffers on this side: the broker soon has to wait for it, too.
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 16)
                while chunk := await reader.read(1 << 16):
                    writer.write(chunk)
                    await writer.drain()
                return
            writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def egress_setup() -> AsyncIterator[tuple[EgressService, EgressRun, Store, Upstream]]:
    """(the service, one run of it, the history, the upstream server), closed after."""
    base = Path(tempfile.mkdtemp(prefix="ac-egress-", dir="/tmp"))  # short socket paths
    ws = base / "project"
    ws.mkdir()
    upstream = Upstream()
    await upstream.start()
    policy = base / "policy.toml"
    policy.write_text(
        f'workspaces = ["{ws}"]\n'
        f'network = {{ allow = ["127.0.0.1"], private = ["127.0.0.1"], ports = [{upstream.port}, {upstream.closed_port}] }}\n'
    )
    source = PolicySource(policy)
    source.reload()
    store = Store.open(base / "history.db")
    egress = EgressService(str(base / "run"), source, store, Broker(store, EventHub(), source))
    run = await egress.open(RunContext(workspace=str(ws), label="a test run"))
    try:
        yield egress, run, store, upstream
    finally:
        await egress.close_all()
        assert upstream.server is not None
        upstream.server.close()
        upstream.closed.close()
        store.close()
        shutil.rmtree(base, ignore_errors=True)


async def fetch(socket_path: str, port: int, *, half_close: bool = False) -> tuple[bytes, bytes]:
    """CONNECT through the run's socket, then one request: (the broker's answer, the body).
    ``half_close``: say "nothing more" right after the request, before the answer."""
    reader, writer = await asyncio.open_unix_connection(socket_path)
    try:
        writer.write(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % port)
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            return head, await reader.read()
        writer.write(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        if half_close:
            writer.write_eof()
        return head, await reader.read()
    finally:
        writer.close()
