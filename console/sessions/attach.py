"""A client's view of a session: a snapshot, then the live stream from its offset.

The session pushes into a bounded buffer and never waits. A client that falls more
than `max_pending` bytes behind loses its queued output and gets a fresh snapshot
the next time it asks (built then, from the screen as it is at that moment, so a
stalled client costs nothing while it stalls).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_PENDING = 4 * 1024 * 1024
# The most output one `Output` carries (base64 in a JSON frame must stay under 4 MiB).
MAX_OUTPUT = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Output:
    """Bytes of the stream starting at absolute `offset`; feed them to the screen."""

    offset: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Start over: a fresh `Screen(cols, rows)` fed `data` stands for the stream up to
    `offset`; output continues from there."""

    offset: int
    data: bytes
    cols: int
    rows: int


@dataclass(frozen=True, slots=True)
class Resized:
    """The session's terminal was resized at `offset`: resize the screen there."""

    offset: int
    cols: int
    rows: int


@dataclass(frozen=True, slots=True)
class Ended:
    """The session's process exited (or the client was detached); nothing follows."""

    offset: int
    reason: str  # "exited", "detached", "removed"


AttachEvent = Output | Snapshot | Resized | Ended


class Attachment:
    """Created by `SessionManager.attach`; read it with `await get()` or `async for`."""

    def __init__(
        self,
        session_id: str,
        client_id: str,
        read_only: bool,
        first: Snapshot,
        resync: Callable[[], Snapshot],
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> None:
        self.session_id = session_id
        self.client_id = client_id
        self.read_only = read_only
        self.snapshot = first  # the initial state; not repeated by get()
        self._resync = resync
        self._max_pending = max_pending
        # Output waits as [offset, [chunks], end] so that appending stays cheap; it is
        # joined into one `Output` when the client takes it.
        self._queue: deque[AttachEvent | list[Any]] = deque()
        self._pending = 0
        self._behind = False
        self._end: Ended | None = None
        self._done = False
        self._wake = asyncio.Event()
        self.resyncs = 0  # how many times this client fell behind

    # -- session side --------------------------------------------------------------

    def _push_output(self, offset: int, data: bytes) -> None:
        if self._behind or self._end is not None:
            return
        if self._pending + len(data) > self._max_pending:
            self._queue.clear()
            self._pending = 0
            self._behind = True
        else:
            last = self._queue[-1] if self._queue else None
            if isinstance(last, list) and last[2] == offset:
                last[1].append(data)
                last[2] += len(data)
            else:
                self._queue.append([offset, [data], offset + len(data)])
            self._pending += len(data)
        self._wake.set()

    def _push_resize(self, offset: int, cols: int, rows: int) -> None:
        if not self._behind and self._end is None:
            self._queue.append(Resized(offset, cols, rows))
            self._wake.set()

    def _push_end(self, offset: int, reason: str) -> None:
        if self._end is None:
            self._end = Ended(offset, reason)
            self._wake.set()

    # -- client side ---------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._done

    def get_nowait(self) -> AttachEvent | None:
        """The next event, or None when none is ready. Consecutive output is
        delivered as one `Output`."""
        if self._done:
            return None
        if self._behind:
            self._behind = False
            self.resyncs += 1
            self._queue.clear()
            self._pending = 0
            return self._resync()
        if self._queue:
            ev = self._queue.popleft()
            if isinstance(ev, list):
                # At most MAX_OUTPUT per event: joined, a backlog could outgrow a frame.
                offset, chunks, end = ev
                size, i = 0, 0
                while i < len(chunks) and (i == 0 or size + len(chunks[i]) <= MAX_OUTPUT):
                    size += len(chunks[i])
                    i += 1
                out = Output(offset, b"".join(chunks[:i]))
                if i < len(chunks):
                    self._queue.appendleft([offset + size, chunks[i:], end])
                self._pending -= len(out.data)
                return out
            return ev
        if self._end is not None:
            self._done = True
            return self._end
        self._wake.clear()
        return None

    async def get(self) -> AttachEvent:
        """Wait for the next event. After an `Ended` it raises `EOFError`."""
        while True:
            if self._done:
                raise EOFError("attachment ended")
            ev = self.get_nowait()
            if ev is not None:
                return ev
            await self._wake.wait()

    def __aiter__(self) -> Attachment:
        return self

    async def __anext__(self) -> AttachEvent:
        try:
            return await self.get()
        except EOFError:
            raise StopAsyncIteration from None
