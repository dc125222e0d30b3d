"""Stand-in daemons for what a real one never sends: answers of the wrong shape.

It listens on ``agent.sock`` of a state directory, as the real one does (a private
runtime directory), and answers each call of one client from a table, method by
method, so a test can see what a hook or the CLI makes of a malformed answer.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from console.client import AsyncClient
from console.locations import ensure_private_dir, locate
from support.daemon import short_tmp

# What a daemon's hello says on agent.sock, at its smallest.
HELLO = {"protocol": 2, "role": "agent", "daemon_pid": 1, "version": "9", "peer_pid": 1}


@contextmanager
def fake_daemon(state_dir: Path, answers: Mapping[str, Any]) -> Iterator[None]:
    """Serve one connection on ``state_dir``'s agent.sock with ``answers`` (method →
    result) until the client hangs up; stops within 10 s whatever the client does."""
    loc = locate(state_dir)
    ensure_private_dir(loc.state_dir)
    ensure_private_dir(loc.runtime_dir)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(loc.agent_socket))
    server.listen(1)
    server.settimeout(10)

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        conn.settimeout(10)
        with conn, conn.makefile("rb") as lines:
            try:
                for line in lines:
                    call = json.loads(line)
                    reply = {"jsonrpc": "2.0", "id": call["id"], "result": answers[call["method"]]}
                    conn.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                pass  # the client went: nothing more to answer

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.close()
        thread.join(15)


Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def client_of(serve: Serve) -> AsyncIterator[AsyncClient]:
    """An operator :class:`AsyncClient` connected to a peer that ``serve`` plays (no hello:
    the test speaks for the daemon from the first frame)."""
    path = short_tmp() / "fake.sock"
    server = await asyncio.start_unix_server(serve, path=str(path))
    reader, writer = await asyncio.open_unix_connection(str(path))
    client = AsyncClient(reader, writer, "operator")
    try:
        yield client
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
