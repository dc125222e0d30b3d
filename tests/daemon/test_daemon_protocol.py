"""Malformed and hostile frames on the real sockets: the right error, and the daemon lives."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading

import pytest
from support.daemon import operation, workspace

from console.client import AsyncClient, Client

DAEMON_POLICY = None  # the daemon's own defaults


def raw(daemon, which="agent"):
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(daemon.loc.agent_socket if which == "agent" else daemon.loc.operator_socket))
    s.settimeout(10)
    return s


def exchange(daemon, payload: bytes, replies: int = 1) -> list:
    s = raw(daemon)
    try:
        s.sendall(payload)
        data = b""
        while data.count(b"\n") < replies:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return [json.loads(line) for line in data.splitlines() if line.strip()]
    finally:
        s.close()


def still_serves(daemon):
    with daemon.agent() as agent:
        return agent.call("daemon.status")["pid"] == daemon.proc.pid


def code(reply):
    return reply["error"]["code"]


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b"{not json\n", -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"hello","method":"daemon.stop"}\n', -32700),
        (b'{"jsonrpc":"2.0","id":NaN,"method":"hello"}\n', -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"hello","params":{"client":"\\ud800"}}\n', -32700),
        (b"\xff\xfe\x00garbage\x01\n", -32700),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", -32700),
        (b"42\n", -32600),
        (b'"hello"\n', -32600),
        (b"[]\n", -32600),
        (b'{"jsonrpc":"1.0","id":1,"method":"hello"}\n', -32600),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"hello"}\n', -32600),
        (b'{"jsonrpc":"2.0","id":[1],"method":"hello"}\n', -32600),
        (b'{"jsonrpc":"2.0","id":true,"method":"hello"}\n', -32600),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"hello"}\n', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":7}\n', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"no.such.method"}\n', -32601),
        (b'{"jsonrpc":"2.0","id":1,"method":"hello","params":"x"}\n', -32602),
        (b'{"jsonrpc":"2.0","id":1,"method":"hello","params":{"bogus":1}}\n', -32602),
        (b'{"jsonrpc":"2.0","id":1,"method":"operation.submit","params":{"operation":[]}}\n', -32602),
    ],
    ids=[
        "not-json",
        "duplicate-keys",
        "nan",
        "lone-surrogate",
        "binary",
        "deep-nesting",
        "number",
        "string",
        "empty-batch",
        "wrong-version",
        "object-id",
        "array-id",
        "bool-id",
        "fraction-id",
        "method-type",
        "unknown-method",
        "params-type",
        "unknown-param",
        "operation-type",
    ],
)
def test_hostile_frame_gets_the_right_error(daemon, payload, expected):
    [reply] = exchange(daemon, payload)
    assert code(reply) == expected
    assert still_serves(daemon)


def test_duplicate_key_error_says_why(daemon):
    [reply] = exchange(daemon, b'{"jsonrpc":"2.0","id":1,"method":"hello","id":2}\n')
    assert reply["error"]["data"]["reason"] == "duplicate_key"


def test_batch_answers_each_entry(daemon):
    replies = exchange(
        daemon,
        b'[{"jsonrpc":"2.0","id":1,"method":"hello"},{"jsonrpc":"2.0","id":2,"method":"nope"},5,'
        b'{"jsonrpc":"2.0","method":"hello"}]\n',
    )
    [batch] = replies
    assert isinstance(batch, list) and len(batch) == 3  # the notification gets no reply
    by_id = {r["id"]: r for r in batch}
    assert "result" in by_id[1]
    assert by_id[2]["error"]["code"] == -32601
    assert by_id[None]["error"]["code"] == -32600


def test_a_64k_line_is_served(daemon):
    ws = workspace()
    # (A long argument: justifications are capped at 16 Ki characters.)
    op = operation(ws, args=["x" * 70_000])
    frame = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "operation.submit", "params": {"operation": op}}
    ).encode()
    assert len(frame) > 65536
    [reply] = exchange(daemon, frame + b"\n")
    assert reply["result"]["verdict"] == "allow"


def test_no_final_newline_is_still_answered(daemon):
    s = raw(daemon)
    s.sendall(b'{"jsonrpc":"2.0","id":3,"method":"hello"}')
    s.shutdown(socket.SHUT_WR)
    data = s.recv(4096)
    s.close()
    assert json.loads(data)["id"] == 3


def test_oversized_frame_closes_the_connection(daemon):
    s = raw(daemon)
    chunk = b"x" * (1 << 20)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the daemon hangs up
        for _ in range(5):
            s.sendall(chunk)
        s.sendall(b'\n{"jsonrpc":"2.0","id":1,"method":"hello"}\n')
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := s.recv(65536):
            data += chunk
    s.close()
    lines = [json.loads(x) for x in data.splitlines() if x.strip()]
    # One error for the oversized frame, and nothing after it: no resync inside the line.
    assert len(lines) <= 1
    if lines:
        assert code(lines[0]) == -32600
    assert still_serves(daemon)


def test_half_a_frame_then_disconnect(daemon):
    s = raw(daemon)
    s.sendall(b'{"jsonrpc":"2.0","id":1,"meth')
    s.close()
    assert still_serves(daemon)


def test_thousands_of_idle_connections(daemon):
    idle = []
    try:
        for _ in range(2000):
            idle.append(raw(daemon))
        assert still_serves(daemon)
        ws = workspace()
        with daemon.agent() as agent:
            assert agent.submit(operation(ws))["verdict"] == "allow"
    finally:
        for s in idle:
            s.close()
    assert still_serves(daemon)


def test_a_client_that_never_reads_is_dropped_not_waited_for(daemon):
    s = raw(daemon, "operator")
    token = daemon.loc.token.read_text().strip()
    s.sendall(
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "hello", "params": {"token": token}}).encode()
        + b"\n"
    )
    # Ask for a lot of output and never read it.
    frame = b'{"jsonrpc":"2.0","id":1,"method":"daemon.status"}\n' * 20000
    with contextlib.suppress(OSError):
        s.sendall(frame)
    assert still_serves(daemon)
    s.close()


def test_daemon_answers_while_another_connection_is_mid_frame(daemon):
    s = raw(daemon)
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"hel')
    assert still_serves(daemon)
    s.sendall(b'lo"}\n')
    assert json.loads(s.recv(4096))["id"] == 1
    s.close()


def test_too_many_in_flight_refuses_only_the_extra_requests(daemon):
    """An agent that floods one connection gets per-request refusals, not a dead link:
    past its 64 waiting requests each extra one is refused by its own id (a quota)."""
    import time

    ws = workspace()
    s = raw(daemon)
    waiting = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "operation.submit",
            "params": {"operation": operation(ws, network="any"), "timeout_s": 30},
        }
    )
    frames = [waiting.replace('"id": 0', f'"id": {i}') for i in range(1, 71)]
    s.sendall(("\n".join(frames) + "\n").encode())
    data = b""
    deadline = time.time() + 20
    while data.count(b"\n") < 6 and time.time() < deadline:
        data += s.recv(65536)
    replies = [json.loads(x) for x in data.splitlines() if x.strip()]
    assert {r["id"] for r in replies} == set(range(65, 71))
    assert all(r["error"]["code"] == -32008 for r in replies)
    assert all(r["error"]["data"]["quota"] == "requests_in_flight" for r in replies)
    s.close()  # the 64 waiting requests are cancelled with the connection
    assert still_serves(daemon)


@contextlib.contextmanager
def accept_queue_full(d):
    """The daemon stopped (SIGSTOP) with its agent socket's accept queue filled; it is
    let go 0.3 s after the block is entered."""
    queued = []
    os.kill(d.proc.pid, signal.SIGSTOP)
    try:
        for _ in range(20_000):
            s = socket.socket(socket.AF_UNIX)
            s.setblocking(False)
            try:
                s.connect(str(d.loc.agent_socket))
            except BlockingIOError:
                s.close()
                break
            queued.append(s)
        else:
            pytest.fail("the accept queue never filled")
        threading.Timer(0.3, os.kill, (d.proc.pid, signal.SIGCONT)).start()
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(d.proc.pid, signal.SIGCONT)
        for s in queued:
            s.close()


def test_a_full_accept_queue_is_waited_out_not_reported_unreachable(fresh_daemon):
    """While the daemon is too busy to accept, its socket's queue fills and a connect
    answers EAGAIN: that is a busy daemon, which the client waits for (within its
    deadline), not a missing one."""
    d = fresh_daemon
    with accept_queue_full(d), Client.connect(d.state_dir, timeout_s=60) as agent:
        assert agent.call("daemon.status")["pid"] == d.proc.pid


async def test_the_async_client_waits_out_a_full_accept_queue_too(fresh_daemon):
    d = fresh_daemon
    with accept_queue_full(d):
        agent = await AsyncClient.connect(d.state_dir)
        try:
            assert (await agent.call("daemon.status"))["pid"] == d.proc.pid
        finally:
            await agent.close()
