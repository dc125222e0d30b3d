"""Waiting on the history writer from the event loop, one wake-up per commit.

``asyncio.wrap_future`` schedules each finished write back onto the loop by itself: one
``call_soon_threadsafe`` (a self-pipe write and a loop wake-up) per future, so a commit
of 50 decisions woke the loop 50 times. Here the writer thread only appends the finished
future to a list and schedules one flush for all that finished meanwhile.

The result is what the store's future holds and nothing else: an answer is still given
only after its batch's ``COMMIT`` returned, and a failed commit still raises its
:class:`~console.store.StoreUnavailable` in the awaiting task. Cancelling the awaiting
task does not cancel the write (the broker shields writes anyway; the writer skips
settling a future nobody waits on).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class LoopWaiter:
    """Turns the store's ``concurrent.futures.Future`` into awaitables on one loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._lock = threading.Lock()
        self._done: list[tuple[asyncio.Future[Any], Future[Any]]] = []
        self._scheduled = False

    def wait(self, future: Future[T]) -> asyncio.Future[T]:
        """An asyncio future on this loop that settles as ``future`` did."""
        waiter: asyncio.Future[T] = self.loop.create_future()
        if future.done():
            _copy(waiter, future)
            return waiter
        future.add_done_callback(lambda f: self._finished(waiter, f))
        return waiter

    def _finished(self, waiter: asyncio.Future[Any], future: Future[Any]) -> None:
        # On the writer thread (or here, if the future was settled meanwhile).
        with self._lock:
            self._done.append((waiter, future))
            if self._scheduled:
                return
            self._scheduled = True
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self.loop.call_soon_threadsafe(self._flush)

    def _flush(self) -> None:
        with self._lock:
            done, self._done = self._done, []
            self._scheduled = False
        for waiter, future in done:
            _copy(waiter, future)


def _copy(waiter: asyncio.Future[Any], future: Future[Any]) -> None:
    if waiter.done():
        return
    if future.cancelled():
        waiter.cancel()
        return
    exc = future.exception()
    if exc is not None:
        waiter.set_exception(exc)
    else:
        waiter.set_result(future.result())


class Durable:
    """Awaits store writes on the running loop through one :class:`LoopWaiter` per loop.

    The broker and its grant book share one, so a commit that settles writes of both
    wakes the loop once."""

    def __init__(self) -> None:
        self._waiter: LoopWaiter | None = None

    def __call__(self, future: Future[T]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        waiter = self._waiter
        if waiter is None or waiter.loop is not loop:
            waiter = self._waiter = LoopWaiter(loop)
        return waiter.wait(future)
