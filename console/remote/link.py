"""Operator connections to a daemon on another machine, over one SSH connection.

:class:`RemoteHost` keeps the SSH connection (asyncssh; host key pinned by known_hosts,
keys from the SSH agent or files; no agent, X11 or port forwarding is ever offered to
the server) and opens operator connections on it:

1. the first through ``agent-console daemon dial-stdio`` on the host (an exec channel):
   that process reads the operator token there and adds it to our ``hello``;
2. then, on that authenticated connection, ``link.ticket``: a one-time ticket, and the
   path of the daemon's operator socket;
3. a ``direct-streamlocal`` channel to that socket, ``hello`` with the ticket; the
   dial-stdio connection is closed. Later connections (a pane attaching a session) ask
   a connection already open for their ticket.

Where the server refuses streamlocal forwarding (``AllowStreamLocalForwarding no``, a
``restrict``ed key, a forced command), every connection goes through dial-stdio, which
is said once in :attr:`RemoteHost.transport`. The operator token never leaves the host.

Each channel is bridged to one end of a local ``socketpair``, so the clients see a real
socket: :class:`~console.client.AsyncClient` and the blocking
:class:`~console.client.Client` work over it unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import socket
import warnings
from pathlib import Path, PurePosixPath
from typing import Any

with warnings.catch_warnings():
    # asyncssh still names DSA keys, which cryptography warns about on import: noise on
    # every CLI verb's stderr. DSA host keys are not offered by any current sshd.
    warnings.simplefilter("ignore")
    import asyncssh

from console.client import AsyncClient, DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.jsonrpc import MAX_FRAME, METHOD_NOT_FOUND, UNAVAILABLE
from console.protocol.requests import Hello, LinkTicket
from console.protocol.results import ResultError
from console.remote.url import HostURL

log = logging.getLogger("agent-console.remote")
# asyncssh says every channel it opens at INFO: the console's log would be only that.
logging.getLogger("asyncssh").setLevel(logging.WARNING)

CONNECT_TIMEOUT_S = 10.0
KEEPALIVE_S = 10.0  # a silent peer is noticed after KEEPALIVE_S * KEEPALIVE_MAX
KEEPALIVE_MAX = 3
CHUNK = 1 << 16
STDERR_KEPT = 4096
MAX_SOCKET_PATH = 107


class HostUnreachable(DaemonUnreachable):
    """The host, or its daemon, cannot be reached; the message names the host."""


class HelloTimedOut(HostUnreachable):
    """The link opened but the daemon's hello did not come back in time."""


class HostKeyRefused(HostUnreachable):
    """The host's key is not the one known_hosts pins (or none is pinned)."""


def known_hosts_file(url: HostURL) -> Path:
    return Path(url.known_hosts or "~/.ssh/known_hosts").expanduser()


def check_ticket_socket(path: str) -> str:
    """The socket a ticket opens must be a daemon's operator socket: an absolute,
    normalised path named ``operator.sock``. Anything else (another program's socket, a
    path with ``..``) is refused before a channel is asked for."""
    pure = PurePosixPath(path)
    if (
        not path.startswith("/")
        or str(pure) != path
        or ".." in pure.parts
        or pure.name != "operator.sock"
        or len(path.encode("utf-8", "surrogateescape")) > MAX_SOCKET_PATH
        or not path.isprintable()
    ):
        raise HostUnreachable(f"refusing socket {inert(path)[:200]!s}: not a daemon's operator socket")
    return path


class RemoteHost:
    """One remote daemon, by ``name``, reached through ``url``."""

    def __init__(self, name: str, url: HostURL, *, connect_timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self.name = name
        self.url = url
        self.connect_timeout_s = connect_timeout_s
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = asyncio.Lock()
        self._clients: set[AsyncClient] = set()
        self._bridges: set[asyncio.Task[None]] = set()
        # "" until known; "streamlocal" once a channel opened; "stdio: <why>" when refused.
        self.transport = "stdio: asked for" if url.transport == "stdio" else ""

    # ---------------------------------------------------------------- the SSH connection

    async def ssh(self) -> asyncssh.SSHClientConnection:
        conn = self._conn
        if conn is not None and not conn.is_closed():
            return conn
        self._conn = None
        url = self.url
        known = known_hosts_file(url)
        if not known.is_file():
            raise HostKeyRefused(
                f"{self.name}: no known_hosts file at {known}, so no host key is pinned: connect once "
                f"with `ssh -p {url.port} {url.address.rsplit(':', 1)[0] if url.port != 22 else url.address}` "
                "and check the key it shows, or name a file with ?known_hosts=PATH"
            )
        options: dict[str, Any] = {
            "known_hosts": str(known),
            "connect_timeout": self.connect_timeout_s,
            "keepalive_interval": KEEPALIVE_S,
            "keepalive_count_max": KEEPALIVE_MAX,
            "agent_forwarding": False,
            "x11_forwarding": False,
            "preferred_auth": "publickey",
            "password": None,
        }
        if url.user:
            options["username"] = url.user
        if url.identity:
            options["client_keys"] = [str(Path(url.identity).expanduser())]
        try:
            conn = await asyncssh.connect(url.host, url.port, **options)
        except asyncssh.HostKeyNotVerifiable as exc:
            raise HostKeyRefused(
                f"{self.name}: the host key of {url.address} is not the one pinned in {known} "
                f"({exc.reason}); refusing it. If the host was reinstalled, check its new key out of "
                "band, remove the old line (ssh-keygen -R) and pin the new one"
            ) from None
        except asyncssh.PermissionDenied:
            raise HostUnreachable(
                f"{self.name}: {url.address} accepted none of the keys offered (SSH agent"
                + (f", {url.identity}" if url.identity else ", ~/.ssh/id_*")
                + "); passwords are not used"
            ) from None
        except asyncssh.KeyImportError as exc:
            raise HostUnreachable(
                f"{self.name}: cannot use the key {url.identity}: {exc}; a key with a passphrase "
                "goes into the SSH agent (ssh-add)"
            ) from None
        except (OSError, TimeoutError, asyncssh.Error) as exc:
            raise HostUnreachable(f"{self.name}: cannot reach {url.address}: {_why(exc)}") from None
        self._conn = conn
        return conn

    async def close(self) -> None:
        for client in list(self._clients):
            await client.close()
        self._clients.clear()
        for task in list(self._bridges):
            task.cancel()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(Exception):
                await conn.wait_closed()

    # ---------------------------------------------------------------- operator connections

    async def open_client(self, client: str = "agent-console") -> AsyncClient:
        """A new operator connection, authenticated on the host (see the module's doc)."""
        async with self._lock:
            if self.transport.startswith("stdio"):
                return self._track(await self._stdio_client(client))
            minter = next((c for c in self._clients if not c.closed), None)
            fresh = None
            if minter is None:
                fresh = minter = await self._stdio_client(client)
            try:
                ticket = await minter.request(LinkTicket())
            except RPCError as exc:
                if exc.code == METHOD_NOT_FOUND:  # an older daemon: dial-stdio serves as well
                    self.transport = "stdio: the daemon gives no link tickets"
                    return self._track(fresh if fresh is not None else await self._stdio_client(client))
                if fresh is not None:
                    await fresh.close()
                raise HostUnreachable(f"{self.name}: the daemon gave no link ticket: {_why(exc)}") from None
            except DaemonUnreachable as exc:
                if fresh is not None:
                    await fresh.close()
                raise HostUnreachable(f"{self.name}: the daemon gave no link ticket: {_why(exc)}") from None
            try:
                opened = await self._streamlocal_client(
                    check_ticket_socket(ticket.socket), ticket.ticket, client
                )
            except asyncssh.ChannelOpenError as exc:
                self.transport = f"stdio: streamlocal refused ({inert(exc.reason)[:120]})"
                log.info("%s: %s", self.name, self.transport)
                return self._track(fresh if fresh is not None else await self._stdio_client(client))
            except BaseException:
                if fresh is not None:
                    await fresh.close()
                raise
            self.transport = "streamlocal"
            if fresh is not None:
                await fresh.close()
            return self._track(opened)

    async def open_stdio_socket(self) -> tuple[socket.socket, asyncio.Task[None], list[bytes]]:
        """A local socket bridged to a new ``dial-stdio`` on the host (for the blocking
        client); the task ends when the bridge does; the list gathers the remote stderr."""
        conn = await self.ssh()
        process = await self._dial_process(conn)
        return self._bridge(process.stdout, process.stdin, process)

    def _track(self, client: AsyncClient) -> AsyncClient:
        self._clients = {c for c in self._clients if not c.closed}
        self._clients.add(client)
        return client

    async def _dial_process(self, conn: asyncssh.SSHClientConnection) -> asyncssh.SSHClientProcess[bytes]:
        argv = [self.url.command, "daemon", "dial-stdio"]
        if self.url.state_dir:
            argv += ["--state-dir", self.url.state_dir]
        try:
            return await conn.create_process(shlex.join(argv), encoding=None)
        except (asyncssh.Error, OSError) as exc:
            raise HostUnreachable(f"{self.name}: cannot run agent-console there: {_why(exc)}") from None

    async def _stdio_client(self, client: str) -> AsyncClient:
        conn = await self.ssh()
        process = await self._dial_process(conn)
        sock, bridge, stderr = self._bridge(process.stdout, process.stdin, process)
        try:
            return await self._hello(sock, Hello(client=client))
        except HelloTimedOut:
            said = stderr_said(stderr)
            raise HostUnreachable(dial_silent(self.name, self.connect_timeout_s, said)) from None
        except HostUnreachable:
            raise
        except DaemonUnreachable:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(bridge), 2.0)
            said = stderr_said(stderr)
            status = process.exit_status
            hint = (
                "; is agent-console on the remote PATH? name it with ?command=/path/to/agent-console"
                if status == 127
                else ""
            )
            raise HostUnreachable(
                f"{self.name}: dial-stdio ended"
                + (f" (exit {status})" if status is not None else "")
                + (f": {said}" if said else "")
                + hint
            ) from None

    async def _streamlocal_client(self, path: str, ticket: str, client: str) -> AsyncClient:
        conn = await self.ssh()
        reader, writer = await conn.open_unix_connection(path)
        sock, _, _ = self._bridge(reader, writer, None)
        return await self._hello(sock, Hello(client=client, ticket=ticket))

    async def _hello(self, sock: socket.socket, params: Hello) -> AsyncClient:
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=MAX_FRAME)
        client = AsyncClient(reader, writer, "operator")
        try:
            client.hello = await asyncio.wait_for(client.call("hello", params), self.connect_timeout_s)
        except TimeoutError:
            await client.close()
            raise HelloTimedOut(f"{self.name}: the daemon did not say hello in time") from None
        except ResultError:
            await client.close()
            raise
        except RPCError as exc:
            await client.close()
            if exc.code == UNAVAILABLE and isinstance(exc.data, dict) and "dial" in exc.data:
                raise HostUnreachable(f"{self.name}: {inert(exc.message)[:300]}") from None
            raise HostUnreachable(
                f"{self.name}: the daemon refused the link: {inert(exc.message)[:300]}"
            ) from None
        except BaseException:
            await client.close()
            raise
        return client

    # ---------------------------------------------------------------- bridging

    def _bridge(
        self,
        reader: asyncssh.SSHReader[bytes],
        writer: asyncssh.SSHWriter[bytes],
        process: asyncssh.SSHClientProcess[bytes] | None,
    ) -> tuple[socket.socket, asyncio.Task[None], list[bytes]]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        stderr: list[bytes] = []
        task = asyncio.ensure_future(_pump(ours, reader, writer, process, stderr))
        self._bridges.add(task)
        task.add_done_callback(self._bridges.discard)
        return theirs, task, stderr


async def _pump(
    sock: socket.socket,
    reader: asyncssh.SSHReader[bytes],
    writer: asyncssh.SSHWriter[bytes],
    process: asyncssh.SSHClientProcess[bytes] | None,
    stderr: list[bytes],
) -> None:
    """Copy between the local socket and the channel until either side ends."""
    local_reader, local_writer = await asyncio.open_unix_connection(sock=sock, limit=MAX_FRAME)

    async def up() -> None:
        with contextlib.suppress(OSError, asyncssh.Error):
            while data := await local_reader.read(CHUNK):
                writer.write(data)
                await writer.drain()
            writer.write_eof()

    async def down() -> None:
        with contextlib.suppress(OSError, asyncssh.Error):
            while data := await reader.read(CHUNK):
                local_writer.write(data)
                await local_writer.drain()

    async def errors() -> None:
        if process is None:
            return
        with contextlib.suppress(OSError, asyncssh.Error):
            kept = 0
            while data := await process.stderr.read(CHUNK):
                if kept < STDERR_KEPT:
                    stderr.append(data[: STDERR_KEPT - kept])
                    kept += len(stderr[-1])

    upward = asyncio.ensure_future(up())
    side = asyncio.ensure_future(errors())
    try:
        await down()
    finally:
        upward.cancel()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(side, 1.0)
        writer.close()
        local_writer.close()
        with contextlib.suppress(Exception):
            await local_writer.wait_closed()
        if process is not None:
            with contextlib.suppress(TimeoutError, asyncssh.Error, OSError):
                await asyncio.wait_for(process.wait_closed(), 1.0)


def stderr_said(chunks: list[bytes]) -> str:
    """What the remote command wrote on stderr, inert, its last 300 characters."""
    return inert(b"".join(chunks).decode("utf-8", "replace").strip())[-300:]


def dial_silent(name: str, waited_s: float, said: str) -> str:
    """Why a dial-stdio that started said nothing: most often the host's shell, which sshd
    runs before the command, taking its time over a start-up file."""
    return (
        f"{name}: dial-stdio said nothing in {waited_s:g} s"
        + (f" ({said})" if said else "")
        + ": a slow or waiting shell start-up file on the host (~/.bashrc runs before the command), "
        "or a stuck daemon there (agent-console daemon status, run on the host)"
    )


def _why(exc: BaseException) -> str:
    text = getattr(exc, "reason", "") or getattr(exc, "strerror", "") or str(exc) or type(exc).__name__
    return inert(str(text))[:300]
