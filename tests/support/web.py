"""The web page in a thread of the test, on a real port, over real daemons; a recorder
for ntfy pushes; Debian's chromium through Playwright."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from aiohttp import web

from console.remote.contexts import Target
from console.remote.hostset import HostSet
from console.web.auth import WebAuth
from console.web.inbox import Inbox
from console.web.push import Push
from console.web.server import build_app, site_for

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def have_chromium() -> bool:
    return Path(CHROMIUM).is_file() and shutil.which("chromium") is not None


@dataclass
class WebPage:
    url: str
    token: str
    inbox: Inbox
    auth: WebAuth
    loop: asyncio.AbstractEventLoop
    now: list[float] = field(default_factory=lambda: [1000.0])

    def advance(self, seconds: float) -> None:
        self.now[0] += seconds

    def in_loop(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` run in the page's own thread (where the inbox lives), its value back."""

        async def run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(15)


@contextmanager
def web_page(
    targets: list[Target], state_dir: Any, *, port: int, ntfy: str = "", token: str = "t" * 40
) -> Iterator[WebPage]:
    """The page for ``targets`` on 127.0.0.1:``port``, its auth on a clock the test moves."""
    now = [1000.0]
    auth = WebAuth(token, clock=lambda: now[0])
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def start() -> None:
        hostset = HostSet(targets, state_dir)
        site = site_for("127.0.0.1", port, [f"http://127.0.0.1:{port}"])
        push = Push(ntfy, f"http://127.0.0.1:{port}", auth) if ntfy else None
        inbox = Inbox(
            {n: hostset.connector(n, "agent-console-web") for n in hostset.names},
            on_pending=push.pending if push else None,
        )
        runner = web.AppRunner(build_app(inbox, auth, site), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        inbox.start()
        holder.update(inbox=inbox, runner=runner, hostset=hostset, push=push)
        ready.set()

    thread = threading.Thread(
        target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True
    )
    thread.start()
    assert ready.wait(15), "the web page did not start"
    page = WebPage(f"http://127.0.0.1:{port}", token, holder["inbox"], auth, loop, now)
    try:
        yield page
    finally:

        async def stop() -> None:
            await holder["inbox"].stop()
            if holder["push"] is not None:
                await holder["push"].close()
            await holder["runner"].cleanup()
            await holder["hostset"].close()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(15)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


class _Recorder(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.posts.append({"path": self.path, "headers": dict(self.headers), "body": body.decode()})  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps({"id": "x"}).encode())

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def push_recorder() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An HTTP endpoint on loopback that keeps what is published to it, as an ntfy server
    would receive it (ntfy's publish API is one POST per message)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.posts = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/agents", server.posts  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        thread.join(5)


def wait_until(predicate: Callable[[], Any], timeout_s: float = 15.0) -> Any:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")
