"""The bridge gives the sandbox's listener to the broker, which then accepts the programs'
connections itself; it takes one listening TCP socket per run and nothing else.

In-process (tests/support/egress.py): the real service and sockets, the bridge's own
hand-over code, and the bridge script itself for the case where the broker says no.
Whatever the broker refuses it closes: the descriptors it was sent do not stay open in
the daemon (this process).
"""

from __future__ import annotations

import array
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.egress import egress_setup

from console.sandbox import bridge
from console.store.query import HistoryQuery

REQUEST = b"GET / HTTP/1.0\r\nHost: x\r\n\r\n"


@pytest.fixture
async def setup():
    async with egress_setup() as made:
        yield made


def tcp_listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def send_fds(path: str, data: bytes, fds: list[int]) -> bytes:
    """``data`` with ``fds`` attached, on a new connection to the run's socket: the answer."""

    def go() -> bytes:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(10)
            sock.connect(path)
            ancillary = (
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else []
            )
            sock.sendmsg([data], ancillary)
            answer = b""
            while chunk := sock.recv(512):
                answer += chunk
            return answer

    return await asyncio.to_thread(go)


async def proxied(port: int, upstream_port: int) -> tuple[bytes, bytes]:
    """CONNECT on the sandbox's listener, then a request: (the broker's answer, the body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % upstream_port)
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            return head, b""
        writer.write(REQUEST)
        return head, await reader.read()
    finally:
        writer.close()


async def test_a_listener_handed_over_is_served_by_the_broker_itself(setup):
    egress, run, store, upstream = setup
    listener = tcp_listener()
    port = listener.getsockname()[1]
    assert await asyncio.to_thread(bridge.hand_over, listener, run.socket)
    listener.close()  # the bridge's copy goes (it becomes the command): the broker's stays
    answers = await asyncio.gather(*(proxied(port, upstream.port) for _ in range(20)))
    for head, body in answers:
        assert head.startswith(b"HTTP/1.1 200"), head
        assert body.endswith(b"ok"), body
    assert store.count(HistoryQuery(kinds=("connection",), verdict="allow")) == 20
    # A name the lists refuse is refused there as well, with the reason.
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"CONNECT elsewhere.test:443 HTTP/1.1\r\n\r\n")
    refused = await reader.read()
    writer.close()
    assert refused.startswith(b"HTTP/1.1 403"), refused
    # The run's end closes it: nothing listens on the port any more.
    await egress.close(run)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


_KEPT: list[socket.socket] = []  # what a sent socket needs alive meanwhile


def _connected_tcp() -> list[socket.socket]:
    server = tcp_listener()
    _KEPT.append(server)
    return [socket.create_connection(server.getsockname())]


def _unix_listener() -> list[socket.socket]:
    path = tempfile.mktemp(prefix="ac-ho-", dir="/tmp")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(path)
    sock.listen(1)
    os.unlink(path)
    return [sock]


def _udp() -> list[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    return [sock]


def _bound_not_listening() -> list[socket.socket]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return [sock]


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (_connected_tcp, b"not a listening TCP socket"),
        (_unix_listener, b"not a listening TCP socket"),
        (_udp, b"not a listening TCP socket"),
        (_bound_not_listening, b"not a listening TCP socket"),
        (lambda: [open(os.devnull)], b"not a listening TCP socket"),  # noqa: SIM115
        (lambda: [tcp_listener(), tcp_listener()], b"not a listener hand-over"),
        (list, b"not a listener hand-over"),
    ],
    ids=[
        "connected-tcp",
        "unix-listener",
        "udp",
        "not-listening",
        "a-file",
        "two-listeners",
        "no-descriptor",
    ],
)
async def test_anything_but_one_listening_tcp_socket_is_refused_and_closed(setup, make, why):
    _, run, _, _ = setup
    things = make()
    before = open_fds()
    answer = await send_fds(run.socket, bridge.HANDOVER, [t.fileno() for t in things])
    for t in [*things, *_KEPT]:
        t.close()
    _KEPT.clear()
    assert answer == b"no: " + why + b"\n"
    assert run.tcp_listener is None
    assert open_fds() <= before  # every descriptor it was sent is closed again


async def test_a_listener_sent_with_other_words_is_refused_and_closed(setup):
    _, run, _, _ = setup
    before = open_fds()
    listener = tcp_listener()
    answer = await send_fds(run.socket, b"CONNECT x:443 HTTP/1.1\r\n\r\n", [listener.fileno()])
    listener.close()
    assert answer == b"no: not a listener hand-over\n"
    assert run.tcp_listener is None
    assert open_fds() <= before


async def test_a_second_listener_is_refused_and_the_first_still_serves(setup):
    _, run, _, upstream = setup
    first, second = tcp_listener(), tcp_listener()
    assert await asyncio.to_thread(bridge.hand_over, first, run.socket)
    before = open_fds()
    assert (
        await send_fds(run.socket, bridge.HANDOVER, [second.fileno()])
        == b"no: this run has its listener already\n"
    )
    assert open_fds() <= before
    head, body = await proxied(first.getsockname()[1], upstream.port)
    assert head.startswith(b"HTTP/1.1 200") and body.endswith(b"ok")
    first.close()
    second.close()


async def test_when_the_broker_says_no_the_bridge_carries_the_connections_itself(setup):
    """The bridge script as a sandbox runs it, on a run whose listener is taken already:
    the command it starts still reaches the broker, through the bridge's own relay."""
    _, run, _, upstream = setup
    taken = tcp_listener()
    assert await asyncio.to_thread(bridge.hand_over, taken, run.socket)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    command = (
        "import socket\n"
        f"s = socket.create_connection(('127.0.0.1', {port}))\n"
        f"s.sendall(b'CONNECT 127.0.0.1:{upstream.port} HTTP/1.1\\r\\n\\r\\n')\n"
        "head = b''\n"
        "while b'\\r\\n\\r\\n' not in head: head += s.recv(4096)\n"
        f"s.sendall({REQUEST!r})\n"
        "body = b''\n"
        "while chunk := s.recv(4096): body += chunk\n"
        "print(head.split(b'\\r\\n')[0].decode(), body.endswith(b'ok'))\n"
    )
    script = Path(bridge.__file__)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-S", str(script), f"127.0.0.1:{port}", run.socket, "--",
        sys.executable, "-c", command,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    taken.close()
    assert proc.returncode == 0, err
    assert b"the network bridge serves itself: no: this run has its listener already" in err
    assert out.decode().split() == ["HTTP/1.1", "200", "Connection", "established", "True"]


async def test_a_listener_the_sandbox_stops_is_closed_not_polled(setup, caplog):
    """The program keeps a copy of the listener it handed over; stopping it (``shutdown``)
    ends that run's network only, and the daemon lets the listener go instead of trying
    it again and again."""
    _, run, _, upstream = setup
    listener = tcp_listener()
    port = listener.getsockname()[1]
    assert await asyncio.to_thread(bridge.hand_over, listener, run.socket)
    listener.shutdown(socket.SHUT_RDWR)
    listener.close()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while run.tcp_listener is not None:
        assert loop.time() < deadline, "the daemon still holds the stopped listener"
        await asyncio.sleep(0.02)
    assert "no longer listens" in caplog.text
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    # The run's own socket still serves (the bridge's path).
    reader, writer = await asyncio.open_unix_connection(run.socket)
    writer.write(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % upstream.port)
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    writer.close()
