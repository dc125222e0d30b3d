"""A bounded byte ring addressed by absolute stream offsets.

Readers (an agent polling output, a client catching up) name the absolute offset
they want; when the writer has already overwritten it they get what is left and
the number of bytes they missed, instead of an error or a stalled writer.
"""

from __future__ import annotations

from typing import NamedTuple


class ReadResult(NamedTuple):
    data: bytes
    next_offset: int  # the offset to ask for next time
    dropped_bytes: int  # bytes between the requested offset and the oldest kept one


class RingBuffer:
    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError("ring capacity must be positive")
        self._cap = capacity
        # bytearray(n) is calloc'd: pages not yet written cost no memory.
        self._buf = bytearray(capacity)
        self._end = 0  # absolute offset one past the newest byte

    @property
    def capacity(self) -> int:
        return self._cap

    @property
    def end(self) -> int:
        """Total bytes ever written: the absolute offset of the next byte."""
        return self._end

    @property
    def start(self) -> int:
        """Absolute offset of the oldest byte still held."""
        return max(0, self._end - self._cap)

    def write(self, data: bytes | memoryview) -> None:
        n = len(data)
        if n == 0:
            return
        cap = self._cap
        if n > cap:  # only the newest `cap` bytes can be kept
            data = data[n - cap :]
            self._end += n - cap
            n = cap
        pos = self._end % cap
        first = min(n, cap - pos)
        self._buf[pos : pos + first] = data[:first]
        if first < n:
            self._buf[: n - first] = data[first:]
        self._end += n

    def read(self, offset: int, max_bytes: int) -> ReadResult:
        if offset < 0:
            raise ValueError("offset must be >= 0")
        if offset > self._end:
            raise ValueError(f"offset {offset} is beyond the end of the stream ({self._end})")
        if max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        start = self.start
        dropped = 0
        if offset < start:
            dropped = start - offset
            offset = start
        n = min(max_bytes, self._end - offset)
        if n == 0:
            return ReadResult(b"", offset, dropped)
        cap = self._cap
        pos = offset % cap
        first = min(n, cap - pos)
        data = bytes(self._buf[pos : pos + first])
        if first < n:
            data += bytes(self._buf[: n - first])
        return ReadResult(data, offset + n, dropped)
