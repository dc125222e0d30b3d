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

import pytest
from support.egress import egress_setup, fetch

from console.store import Store, connection_event
from console.store.event import encode
from console.store.query import HistoryQuery


@pytest.fixture
async def setup():
    async with egress_setup() as made:
        yield made


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
