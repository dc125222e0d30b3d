"""One pane's attachment to a session: its own daemon connection, its own emulator.

Each pane connects separately (not over the console's main link), so a program that
floods its pane fills only that pane's socket: other panes, the approval queue and the
history keep their own connections and never queue behind it. The daemon streams a
snapshot and then output from its offset; this class feeds both into a
:class:`console.terminal.Screen` on the connection's reading task, in order, and tells
the widget (``on_update``) that something changed, which repaints at most once a frame.

Input is queued and sent in order, one call at a time, so a burst of keys or a long
paste becomes few calls. A lost connection is retried; the re-attach brings a fresh
snapshot, so the pane shows the session as it is now.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from collections.abc import Awaitable, Callable

from console.client import AsyncClient, DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.jsonrpc import BUSY, NOT_FOUND
from console.protocol.notifications import (
    Notification,
    NotificationError,
    SessionEnded,
    SessionOutput,
    SessionResized,
    SessionSnapshot,
)
from console.protocol.requests import (
    SessionsAttach,
    SessionsDetach,
    SessionsGet,
    SessionsInput,
    SessionsResize,
)
from console.protocol.results import SessionsAttachResult
from console.protocol.sessions import SessionObject
from console.terminal import KeyEncoder, MouseEncoder, Screen

Connect = Callable[[], Awaitable[AsyncClient]]

RETRY_S = 1.0
MAX_INPUT_CALL = 1 << 20  # the daemon's limit on one sessions.input
BUSY_RETRIES = 50  # x BUSY_WAIT_S: how long keys wait for a program that does not read
BUSY_WAIT_S = 0.1
SCROLLBACK_LINES = 10_000
# Each pane's own terminal size; the session's is what the daemon says it is.
MIN_SIZE = 2

# States a pane can be in.
CONNECTING, LIVE, ENDED, FAILED = "connecting", "live", "ended", "failed"


def connector(state_dir: str | os.PathLike[str] | None) -> Connect:
    """A new operator connection per pane."""
    return lambda: AsyncClient.connect(state_dir, role="operator", client="agent-console-pane")


class PaneLink:
    """Attach to ``session_id`` and keep a live emulated screen of it.

    ``on_update`` is called (on the event loop, from the connection's reading task)
    after the screen changed or the link's state did; keep it quick.
    """

    def __init__(
        self,
        session_id: str,
        connect: Connect,
        *,
        read_only: bool = False,
        scrollback_lines: int = SCROLLBACK_LINES,
        on_update: Callable[[], None] | None = None,
    ) -> None:
        self.session_id = session_id
        self.read_only = read_only
        self.state = CONNECTING
        self.message = "attaching…"  # inert text for the pane's title bar
        self.info: SessionObject | None = None  # the session, once sessions.get answered
        self.screen: Screen | None = None
        self.keys: KeyEncoder | None = None
        self.mouse: MouseEncoder | None = None
        self.offset = 0
        self.generation = 0  # a new screen (attach, snapshot): everything must be repainted
        self.resyncs = 0
        self.on_update = on_update or (lambda: None)
        self._connect = connect
        self._scrollback_lines = scrollback_lines
        self._client: AsyncClient | None = None
        self._early: list[Notification] = []
        self._outbox = bytearray()
        self._sending: asyncio.Task[None] | None = None
        self._want_size: tuple[int, int] | None = None
        self._sent_size: tuple[int, int] | None = None
        self._sizing: asyncio.Task[None] | None = None
        self._closed = False
        self._unreadable = False  # this connection sent output the pane could not read
        self._attaching = False
        self._attached = asyncio.Event()

    # ------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Attach and stay attached (re-attaching after a lost connection) until the
        session ends, the attach is refused, or :meth:`close`."""
        while not self._closed:
            try:
                client = await self._connect()
            except (DaemonUnreachable, OSError, RPCError) as exc:
                self._set(CONNECTING, f"daemon unreachable, retrying: {inert(str(exc))[:120]}")
                await asyncio.sleep(RETRY_S)
                continue
            if self._closed:
                await client.close()
                return
            self._client = client
            for method in ("session.output", "session.snapshot", "session.resized", "session.ended"):
                client.on_notification(method, self._dispatch)
            self._attaching = True
            self._unreadable = False
            self._early = []
            try:
                result = await client.request(
                    SessionsAttach(session=self.session_id, read_only=self.read_only)
                )
            except RPCError as exc:
                self._attaching = False
                await self._drop_client()
                what = "no such session" if exc.code == NOT_FOUND else inert(exc.message)[:200]
                self._set(FAILED, f"cannot attach: {what}")
                return
            except DaemonUnreachable:
                self._attaching = False
                await self._drop_client()
                await asyncio.sleep(RETRY_S)
                continue
            self._start(result)
            with contextlib.suppress(DaemonUnreachable, RPCError):
                self.info = (await client.request(SessionsGet(session=self.session_id))).session
                self.on_update()
            self._kick_sender()
            self._kick_resize()
            async for _ in client.events():  # nothing is subscribed: this waits for the close
                pass
            self._client = None
            self._attached.clear()
            if self.state == ENDED or self._closed:
                return
            if not self._unreadable:  # which says why already
                self._set(CONNECTING, "lost the daemon; re-attaching…")
            await asyncio.sleep(RETRY_S)

    async def close(self) -> None:
        """Detach (the session keeps running) and drop the connection."""
        self._closed = True
        client = self._client
        if client is not None:
            with contextlib.suppress(DaemonUnreachable, RPCError, OSError):
                await asyncio.wait_for(client.request(SessionsDetach(session=self.session_id)), 2.0)
        await self._drop_client()
        self._release_screen()

    async def wait_attached(self) -> None:
        await self._attached.wait()

    async def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    # ------------------------------------------------------------ the stream

    def _start(self, result: SessionsAttachResult) -> None:
        self._new_screen(result.cols, result.rows, result.snapshot_base64)
        self.offset = result.offset
        self.state = LIVE
        self.message = ""
        self._sent_size = None  # a new connection is a new client to the daemon: say our size again
        self._attaching = False
        early, self._early = self._early, []
        for n in early:
            self._dispatch(n)
        self._attached.set()
        self.on_update()

    def _new_screen(self, cols: int, rows: int, snapshot_b64: str) -> None:
        self._release_screen()
        screen = Screen(cols, rows, scrollback_lines=self._scrollback_lines)
        screen.feed(base64.b64decode(snapshot_b64))
        self.screen = screen
        self.keys = KeyEncoder(screen)
        self.mouse = MouseEncoder(screen)
        self.generation += 1

    def _release_screen(self) -> None:
        for part in (self.keys, self.mouse, self.screen):
            if part is not None:
                part.close()
        self.keys = self.mouse = None
        self.screen = None

    def _dispatch(self, n: Notification) -> None:
        if not isinstance(n, SessionOutput | SessionSnapshot | SessionResized | SessionEnded):
            return
        if n.session != self.session_id or self._unreadable:
            return
        if self._attaching or self.screen is None:
            # The stream can start before the attach's answer arrives: keep it for then.
            self._early.append(n)
        elif isinstance(n, SessionOutput):
            self._on_output(n)
        elif isinstance(n, SessionSnapshot):
            self._on_snapshot(n)
        elif isinstance(n, SessionResized):
            self._on_resized(n)
        else:
            self._on_ended(n)

    def _on_output(self, n: SessionOutput) -> None:
        try:
            data = n.decoded()
        except NotificationError:
            self._lose_stream()
            return
        offset = n.offset
        if offset < self.offset:  # already in the snapshot
            data = data[self.offset - offset :]
        if data and self.screen is not None:
            self.screen.feed(data)
            self.offset = max(self.offset, offset) + len(data)
            self.on_update()

    def _lose_stream(self) -> None:
        """Output the pane cannot read: what follows it would be fed after a hole, so
        nothing more of this connection is; it is dropped, and the re-attach starts over
        from a fresh snapshot."""
        self._unreadable = True
        self._set(CONNECTING, "unreadable output from the daemon; re-attaching…")
        client = self._client
        if client is not None:
            asyncio.get_running_loop().create_task(client.close())

    def _on_snapshot(self, n: SessionSnapshot) -> None:
        # We fell behind and the daemon dropped what we had not read: start over from
        # the screen as it is now. Scrolling back and the selection start over too.
        self._new_screen(n.cols, n.rows, n.snapshot_base64)
        self.offset = n.offset
        self.resyncs += 1
        self.on_update()

    def _on_resized(self, n: SessionResized) -> None:
        if self.screen is None:
            return
        cols, rows = n.cols, n.rows
        if (cols, rows) != self.screen.size:
            self.screen.resize(cols, rows)
            self.generation += 1
        self.on_update()

    def _on_ended(self, n: SessionEnded) -> None:
        reason = n.reason
        self._set(ENDED, f"session {reason}" if reason != "exited" else "exited")
        client = self._client
        if client is not None:
            # Nothing follows an end: let the connection go (run() then returns).
            asyncio.get_running_loop().create_task(client.close())

    def _set(self, state: str, message: str) -> None:
        self.state = state
        self.message = message
        self.on_update()

    # ------------------------------------------------------------ input

    @property
    def writable(self) -> bool:
        return self.state == LIVE and not self.read_only

    def send(self, data: bytes) -> bool:
        """Queue input for the program; False (and nothing sent) when the pane is
        read-only or the session is not live."""
        if not data or not self.writable:
            return False
        self._outbox += data
        self._kick_sender()
        return True

    def _kick_sender(self) -> None:
        if self._outbox and self._client is not None and (self._sending is None or self._sending.done()):
            self._sending = asyncio.get_running_loop().create_task(self._send_loop())

    async def _send_loop(self) -> None:
        busy_tries = 0
        while self._outbox and self._client is not None:
            chunk = bytes(self._outbox[:MAX_INPUT_CALL])
            del self._outbox[: len(chunk)]
            params = SessionsInput(
                session=self.session_id, data_base64=base64.b64encode(chunk).decode("ascii")
            )
            try:
                await self._client.request(params)
                if busy_tries:
                    busy_tries, self.message = 0, ""
                    self.on_update()
            except RPCError as exc:
                if exc.code == BUSY and busy_tries < BUSY_RETRIES:
                    # The program is not reading: keep the keys, in order, and try again.
                    busy_tries += 1
                    self._outbox[:0] = chunk
                    self.message = "session input is busy, trying again"
                    self.on_update()
                    await asyncio.sleep(BUSY_WAIT_S)
                    continue
                self._outbox.clear()
                self.message = f"input refused: {inert(exc.message)[:160]}"
                self.on_update()
                return
            except DaemonUnreachable:
                self._outbox[:0] = chunk  # sent again after the re-attach
                return

    # ------------------------------------------------------------ size

    def resize(self, cols: int, rows: int) -> None:
        """The pane's own size changed: ask for it (the most recently active client's
        size is the session's). Read-only panes only watch."""
        if self.read_only or cols < MIN_SIZE or rows < MIN_SIZE:
            return
        self._want_size = (min(cols, 1000), min(rows, 1000))
        self._kick_resize()

    def _kick_resize(self) -> None:
        if (
            self._want_size is not None
            and self._want_size != self._sent_size
            and self._client is not None
            and self.state == LIVE
            and (self._sizing is None or self._sizing.done())
        ):
            self._sizing = asyncio.get_running_loop().create_task(self._resize_loop())

    async def _resize_loop(self) -> None:
        while self._want_size is not None and self._want_size != self._sent_size and self._client is not None:
            cols, rows = size = self._want_size
            try:
                await self._client.request(SessionsResize(session=self.session_id, cols=cols, rows=rows))
            except (RPCError, DaemonUnreachable):
                return
            self._sent_size = size

    def forget_size(self) -> None:
        """Send our size again on the next :meth:`resize` (after a re-attach)."""
        self._sent_size = None
