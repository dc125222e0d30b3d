"""Bounded capture of one output stream: the first and the last bytes, and a count.

A command may print gigabytes; the outcome keeps at most ``capture_bytes`` of each
stream — the first half as the head, the most recent half as the tail — and counts the
rest. While nothing has been dropped the head holds everything and the tail is empty,
so ``head + tail`` is the whole stream exactly when ``truncated`` is false.
"""

from __future__ import annotations

import base64
from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Stream(StrEnum):
    STDOUT = "stdout"
    STDERR = "stderr"


@dataclass(frozen=True, slots=True)
class OutputChunk:
    """Bytes of one stream, starting at ``offset`` (absolute within that stream)."""

    stream: Stream
    offset: int
    data: bytes


@dataclass(frozen=True, slots=True)
class StreamResult:
    head: bytes = b""
    tail: bytes = b""
    total_bytes: int = 0
    truncated: bool = False

    @property
    def tail_offset(self) -> int:
        """Where the tail starts in the stream."""
        return self.total_bytes - len(self.tail)

    def to_dict(self) -> dict[str, Any]:
        """Text (invalid UTF-8 replaced, so a multi-byte character cut at an edge shows as
        U+FFFD) for people, and the exact bytes in base64 for programs."""
        return {
            "head": self.head.decode("utf-8", "replace"),
            "tail": self.tail.decode("utf-8", "replace"),
            "head_base64": base64.b64encode(self.head).decode("ascii"),
            "tail_base64": base64.b64encode(self.tail).decode("ascii"),
            "tail_offset": self.tail_offset,
            "total_bytes": self.total_bytes,
            "truncated": self.truncated,
        }


class StreamCapture:
    """Accumulates one stream; see the module docstring.

    The tail is a queue of chunks trimmed a whole chunk at a time (and to the byte only
    when the result is taken), so a long stream costs O(1) per chunk, whatever the
    capture size.
    """

    __slots__ = ("_head", "_head_limit", "_tail", "_tail_limit", "_tail_size", "total")

    def __init__(self, capture_bytes: int) -> None:
        if capture_bytes < 0:
            raise ValueError("capture_bytes must not be negative")
        self._head_limit = (capture_bytes + 1) // 2
        self._tail_limit = capture_bytes - self._head_limit
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.total = 0

    def add(self, data: bytes) -> None:
        if not data:
            return
        self.total += len(data)
        if self.total <= self._head_limit + self._tail_limit:
            self._head += data
            return
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        elif room < 0:
            # First overflow: the head keeps its first half, the rest starts the tail.
            self._push(bytes(self._head[self._head_limit :]))
            del self._head[self._head_limit :]
        self._push(data)

    def _push(self, data: bytes) -> None:
        self._tail.append(data)
        self._tail_size += len(data)
        while self._tail and self._tail_size - len(self._tail[0]) >= self._tail_limit:
            self._tail_size -= len(self._tail.popleft())

    def result(self) -> StreamResult:
        tail = b"".join(self._tail)
        tail = tail[len(tail) - self._tail_limit :] if len(tail) > self._tail_limit else tail
        retained = len(self._head) + len(tail)
        return StreamResult(bytes(self._head), tail, self.total, self.total > retained)
