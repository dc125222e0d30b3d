"""Running the web page: the hosts' inbox, the auth, the optional push, the server."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from console.remote.contexts import Target
from console.remote.hostset import HostSet
from console.web.auth import WebAuth, web_token
from console.web.inbox import Inbox
from console.web.push import Push
from console.web.server import build_app, site_for


@dataclass(frozen=True)
class WebOptions:
    bind: str
    port: int
    token_file: Path
    public_urls: tuple[str, ...] = ()
    ntfy: str = ""


def is_loopback(bind: str) -> bool:
    if bind == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return False


async def serve(options: WebOptions, targets: list[Target], state_dir: str | os.PathLike[str] | None) -> None:
    token = web_token(options.token_file)
    auth = WebAuth(token)
    family = socket.AF_INET6 if ":" in options.bind else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((options.bind, options.port))
    port = int(listener.getsockname()[1])  # the one the system chose for --port 0
    site = site_for(options.bind, port, list(options.public_urls))
    hostset = HostSet(targets, state_dir)
    push: Push | None = None
    if options.ntfy:
        push = Push(options.ntfy, options.public_urls[0], auth)
    inbox = Inbox(
        {name: hostset.connector(name, "agent-console-web") for name in hostset.names},
        on_pending=push.pending if push is not None else None,
    )
    runner = web.AppRunner(build_app(inbox, auth, site), access_log=None)
    await runner.setup()
    await web.SockSite(runner, listener).start()
    inbox.start()
    where = f"[{options.bind}]" if ":" in options.bind else options.bind
    sys.stdout.write(
        f"agent-console web: http://{where}:{port}/ for {', '.join(hostset.names)} "
        f"(log in with the token in {options.token_file})\n"
    )
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await inbox.stop()
        if push is not None:
            await push.close()
        await runner.cleanup()
        await hostset.close()
        with contextlib.suppress(Exception):
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
