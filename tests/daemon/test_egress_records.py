"""The egress broker's history: every connection's decision is committed before anything
goes upstream, connections decided together share a commit, and a history that cannot
be written refuses the connection (with the reason), never lets it through unrecorded.

In-process, with the real service, store, approval broker and sockets: a run's Unix
socket as the sandbox's bridge would reach it, and a server on the host's loopback.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from console.daemon.broker import Broker
from console.daemon.egress import EgressService, RunContext
from console.daemon.events import EventHub
from console.daemon.policy_source import PolicySource
from console.store import Store, connection_event
from console.store.event import encode
from console.store.query import HistoryQuery


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


@pytest.fixture
async def setup():
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


def connections(store: Store, verdict: str) -> int:
    return store.count(HistoryQuery(kinds=("connection",), verdict=verdict))


async def test_every_connection_made_together_is_in_the_history(setup):
    egress, run, store, upstream = setup
    answers = await asyncio.gather(*(fetch(run.socket, upstream.port) for _ in range(40)))
    for head, body in answers:
        assert head.startswith(b"HTTP/1.1 200"), head
        assert body.endswith(b"ok"), body
    assert upstream.arrived == 40
    assert connections(store, "allow") == 40
    assert egress.status().allowed == 40


async def test_an_answer_after_the_client_is_done_sending_still_arrives(setup):
    _, run, store, upstream = setup
    answers = await asyncio.gather(*(fetch(run.socket, upstream.port, half_close=True) for _ in range(10)))
    for head, body in answers:
        assert head.startswith(b"HTTP/1.1 200"), head
        assert body.endswith(b"ok"), body
    assert connections(store, "allow") == 10


async def test_megabytes_each_way_arrive_intact_at_a_slow_reader(setup):
    """What the client sends before the broker's answer goes upstream first, then the rest;
    the client reads slowly, so each side waits on the other (the relay holds
    back rather than buffers); every byte arrives in order and the end is passed on."""
    _, run, store, upstream = setup
    payload = os.urandom(8 << 20)
    early = 100_000
    reader, writer = await asyncio.open_unix_connection(run.socket)
    try:
        writer.write(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\nECHO\r\n\r\n" % upstream.port + payload[:early])
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head

        async def send() -> None:
            for at in range(early, len(payload), 1 << 16):
                writer.write(payload[at : at + (1 << 16)])
                await writer.drain()
            writer.write_eof()

        async def receive() -> bytes:
            got = bytearray()
            while chunk := await reader.read(1 << 15):
                got += chunk
                await asyncio.sleep(0.001)
            return bytes(got)

        _, got = await asyncio.gather(send(), receive())
    finally:
        writer.close()
    assert len(got) == len(payload)
    assert got == payload
    assert connections(store, "allow") == 1


async def test_a_destination_that_refuses_is_a_502_after_the_decision_is_recorded(setup):
    egress, run, store, upstream = setup
    head, body = await fetch(run.socket, upstream.closed_port)
    assert head.startswith(b"HTTP/1.1 502"), head
    assert b"cannot connect to 127.0.0.1:%d" % upstream.closed_port in head + body
    assert connections(store, "allow") == 1
    assert egress.status().allowed == 0


async def test_a_history_that_cannot_be_written_refuses_the_connection(setup):
    egress, run, store, upstream = setup
    store.close()  # every write now fails: the store is unavailable
    answers = await asyncio.gather(*(fetch(run.socket, upstream.port) for _ in range(5)))
    for head, body in answers:
        assert head.startswith(b"HTTP/1.1 403"), head
        assert b"cannot record the connection" in head + body
    assert upstream.arrived == 0
    assert egress.status().allowed == 0


@pytest.mark.parametrize(
    ("host", "port", "agent"),
    [
        ("api.example.com", 443, "claude@s-1"),
        ("127.0.0.1", 65535, "agent \u00e9t\u00e9 \U0001f600"),
        ("::1", 1, ""),
        ("x", 80, "lone \ud800 surrogate"),
    ],
)
def test_a_connection_body_is_written_as_the_general_path_writes_it(host, port, agent):
    event = connection_event(
        at=1.5, host=host, port=port, address=host, protocol="connect", verdict="allow",
        source="policy", reason="r", workspace_root="/w", agent=agent,
    )  # fmt: skip
    if "\ud800" in agent:
        with pytest.raises(ValueError, match="surrogate"):
            encode(event)
        return
    assert type(event.body).__name__ == "_Canonical"  # its text made with it
    assert encode(event) == encode(dataclasses.replace(event, body=dict(event.body)))
