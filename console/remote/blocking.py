"""The blocking :class:`~console.client.Client` over SSH, for the CLI.

A CLI verb makes one connection and exits, so it goes through ``dial-stdio`` at once: a
ticket and a streamlocal channel would cost that same remote start and a channel more.
The SSH side runs on an event loop in a thread of its own; the client gets the local end
of the bridge, a real socket, and everything else is the ordinary blocking client.
Closing the client ends the bridge, the remote dial-stdio, the SSH connection and the
thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from typing import Any

from console.client import Client, DaemonTimedOut, DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.jsonrpc import UNAVAILABLE
from console.protocol.requests import Hello
from console.remote.contexts import Target
from console.remote.link import HostUnreachable, RemoteHost, dial_silent, stderr_said


def connect_blocking(
    target: Target, *, client: str = "agent-console-cli", timeout_s: float | None = 30.0
) -> Client:
    """An operator :class:`Client` on ``target``'s daemon (``target.url`` must be set)."""
    assert target.url is not None
    ready: concurrent.futures.Future[tuple[Any, list[bytes]]] = concurrent.futures.Future()
    thread = threading.Thread(
        target=_run, args=(RemoteHost(target.name, target.url), ready), name=f"ssh-{target.name}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + (timeout_s or 30.0) + 5.0
    try:
        sock, stderr = ready.result(timeout=max(1.0, deadline - time.monotonic()))
    except concurrent.futures.TimeoutError:
        raise HostUnreachable(f"{target.name}: no answer from {target.url.address} in time") from None
    result = Client(sock, "operator", idle_s=timeout_s)
    try:
        result.hello = result.call("hello", Hello(client=client))
    except RPCError as exc:
        result.close()
        if exc.code == UNAVAILABLE and isinstance(exc.data, dict) and "dial" in exc.data:
            raise HostUnreachable(f"{target.name}: {inert(exc.message)[:300]}") from None
        raise HostUnreachable(
            f"{target.name}: the daemon refused the link: {inert(exc.message)[:300]}"
        ) from None
    except DaemonTimedOut:
        result.close()
        said = stderr_said(stderr)
        raise HostUnreachable(dial_silent(target.name, timeout_s or 30.0, said)) from None
    except DaemonUnreachable:
        result.close()
        thread.join(3.0)
        said = stderr_said(stderr)
        raise HostUnreachable(
            f"{target.name}: dial-stdio ended" + (f": {said}" if said else "") + " (is agent-console on the "
            "remote PATH? name it with ?command=/path/to/agent-console)"
        ) from None
    return result


def _run(host: RemoteHost, ready: concurrent.futures.Future[tuple[Any, list[bytes]]]) -> None:
    async def main() -> None:
        try:
            sock, bridge, stderr = await host.open_stdio_socket()
        except BaseException as exc:
            ready.set_exception(exc)
            await host.close()
            return
        ready.set_result((sock, stderr))
        with contextlib.suppress(Exception):
            await bridge
        await host.close()

    asyncio.run(main())
