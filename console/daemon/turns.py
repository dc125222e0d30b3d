"""Agents take turns in the event loop; the operator never waits for them.

The daemon is one event loop. A frame from an agent costs work in proportion to its size
(decoding, reading its params, parsing its operation), and an agent that pipelines
oversized requests on many connections can queue that work faster than the loop does
it; an operator's ``pending.list`` behind all of it would wait for seconds. So every
agent frame takes a turn before it is handled: each loop iteration starts agent
frames only up to a budget (:data:`AGENT_BYTES_PER_TURN` and
:data:`AGENT_FRAMES_PER_TURN`, at least one frame), in the order they came; the rest
wait for the next iteration, and meanwhile their connections are not read, so what they
send waits in the kernel, not in the daemon. The operator's frames take no turn, and
while one is on its way to its answer (read, decoded, its call's first step) no agent
frame starts: the iteration that serves the operator does only the operator's work and
what was already started. A turn that took long (big frames) is followed by a rest as
long, up to :data:`MAX_REST_S`: agents that keep the daemon busy get half of it, and an
operator's call that arrives meanwhile goes through iterations with no agent work.
"""

from __future__ import annotations

import asyncio
from collections import deque

KiB = 1024
# What agent frames may start in one loop iteration: a few milliseconds of work.
AGENT_BYTES_PER_TURN = 256 * KiB
AGENT_FRAMES_PER_TURN = 32
# A turn shorter than this needs no rest after it; a longer one rests as long, at most MAX.
REST_AFTER_S = 0.002
MAX_REST_S = 0.02


class AgentTurns:
    def __init__(self) -> None:
        self._bytes = 0
        self._frames = 0
        self._waiting: deque[tuple[asyncio.Future[None], int]] = deque()
        self._armed = False
        self._operator = 0  # operator frames between being read and their call's first step
        self._granted_at: float | None = None  # when the last turn was given out

    def operator_arrived(self) -> None:
        """An operator frame is being handled: agent frames wait until it has started."""
        self._operator += 1

    def operator_started(self) -> None:
        """That call took its first step: agent frames may start again."""
        self._operator -= 1
        if self._waiting and not self._operator:
            self._arm()

    def __len__(self) -> int:
        """Agent frames waiting for a turn."""
        return len(self._waiting)

    async def take(self, nbytes: int) -> None:
        """Wait for a turn for a frame of ``nbytes``."""
        if not self._waiting and self._fits(nbytes):
            self._charge(nbytes)
            return
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((future, nbytes))
        self._arm()
        await future

    def _fits(self, nbytes: int) -> bool:
        if self._operator:
            return False
        if self._frames == 0:
            return True  # the first frame of a turn, whatever its size: nothing starves
        return self._frames < AGENT_FRAMES_PER_TURN and self._bytes + nbytes <= AGENT_BYTES_PER_TURN

    def _charge(self, nbytes: int) -> None:
        self._frames += 1
        self._bytes += nbytes
        self._arm()

    def _arm(self) -> None:
        if not self._armed:
            self._armed = True
            asyncio.get_running_loop().call_soon(self._next_turn)

    def _next_turn(self) -> None:
        """A new loop iteration: a new budget, given to the frames that waited longest."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._granted_at is not None and self._waiting and not self._operator:
            took = now - self._granted_at
            self._granted_at = None
            if took > REST_AFTER_S:
                loop.call_later(min(took, MAX_REST_S), self._next_turn)
                return
        self._armed = False
        self._frames = self._bytes = 0
        while self._waiting and self._fits(self._waiting[0][1]):
            future, nbytes = self._waiting.popleft()
            if future.done():  # its connection went away meanwhile
                continue
            future.set_result(None)
            self._charge(nbytes)
            self._granted_at = now
        if self._waiting and not self._operator:
            self._arm()  # (while the operator is served, operator_started arms it)
