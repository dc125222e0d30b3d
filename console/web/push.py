"""The optional push: an ntfy topic (self-hostable) is told "an agent on HOST waits on
you", with a link that only opens the request's page.

The message names the host and the request id, never the command or anything else the
agent wrote: a topic is often readable by whoever knows its name, and the server is
someone else's. The link is single-use and expiring, bound to the host, the request id
and the fingerprint (console/web/auth.py); it opens the page after login, where
deciding is still a POST. At most :data:`PER_MINUTE` pushes a minute; the rest are
counted in the log, not sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from urllib.parse import urlsplit

import aiohttp

from console.protocol.pending import PendingItem
from console.web.auth import WebAuth

log = logging.getLogger("agent-console.web")

PER_MINUTE = 10
TIMEOUT_S = 10.0


def check_topic_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or not parts.path.strip("/"):
        raise ValueError(f"--ntfy {url!r}: a topic URL such as https://ntfy.example.org/my-topic")
    return url


class Push:
    def __init__(self, topic_url: str, public_url: str, auth: WebAuth) -> None:
        self.topic_url = check_topic_url(topic_url)
        self.public_url = public_url.rstrip("/")
        self.auth = auth
        self._sent: list[float] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._session: aiohttp.ClientSession | None = None
        self.dropped = 0

    def pending(self, host: str, item: PendingItem) -> None:
        now = time.monotonic()
        self._sent = [t for t in self._sent if now - t < 60]
        if len(self._sent) >= PER_MINUTE:
            self.dropped += 1
            log.warning(
                "push: more than %d a minute; not sent for %s on %s", PER_MINUTE, item.request_id, host
            )
            return
        self._sent.append(now)
        link = f"{self.public_url}/r/{self.auth.link(host, item.request_id, item.fingerprint)}"
        task = asyncio.ensure_future(self._send(host, item.request_id, link))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, host: str, request_id: str, link: str) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT_S))
        try:
            async with self._session.post(
                self.topic_url,
                data=f"An agent on {host} waits on you ({request_id}).".encode(),
                headers={"Title": "agent-console", "Click": link, "Tags": "lock", "Priority": "high"},
            ) as response:
                if response.status >= 300:
                    log.warning("push: %s answered %d", self.topic_url, response.status)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            log.warning("push: cannot reach %s: %s", self.topic_url, exc)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._session is not None:
            await self._session.close()
