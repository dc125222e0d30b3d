"""Session recordings in asciicast v2, and playing them back.

One header line, then one JSON array per event: `[seconds, "o", text]` for output,
`[seconds, "r", "COLSxROWS"]` for a resize and `[seconds, "i", text]` for input
(only when input recording was asked for, since input can hold passwords). Output
goes through an incremental UTF-8 decoder, so a character split across two PTY reads
is written whole in the later event, never as two replacement characters.

Playback never writes a recording's bytes to a terminal: the events are fed to a
`Screen` and what reaches the terminal is painted from its cells.
"""

from __future__ import annotations

import codecs
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from console.terminal import Screen

FLUSH_BYTES = 64 * 1024


class RecordingError(ValueError):
    """A recording that is not asciicast v2 or is damaged."""


class Recorder:
    """Appends events to an asciicast v2 file. Writes are buffered; `flush` (called by
    the session manager about once a second and at exit) makes them durable enough
    to survive a daemon crash with at most that much lost."""

    def __init__(
        self,
        path: Path,
        *,
        cols: int,
        rows: int,
        title: str,
        env: dict[str, str],
        record_input: bool,
        max_bytes: int,
    ) -> None:
        self.path = path
        self.record_input = record_input
        self.max_bytes = max_bytes
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        self._file: IO[bytes] | None = os.fdopen(fd, "wb", buffering=FLUSH_BYTES)
        self._start = time.monotonic()
        self._out = codecs.getincrementaldecoder("utf-8")("replace")
        self._in = codecs.getincrementaldecoder("utf-8")("replace")
        self.written = 0
        self.truncated = False
        header = {
            "version": 2,
            "width": cols,
            "height": rows,
            "timestamp": int(time.time()),
            "title": title,
            "env": {k: env[k] for k in ("TERM", "SHELL") if k in env},
        }
        self._write(_ENCODE(header) + b"\n")
        self.flush()  # a crash must never leave a recording without its header

    def output(self, data: bytes) -> None:
        text = self._out.decode(data)
        if text:
            self._event("o", text)

    def input(self, data: bytes) -> None:
        if self.record_input:
            text = self._in.decode(data)
            if text:
                self._event("i", text)

    def resize(self, cols: int, rows: int) -> None:
        self._event("r", f"{cols}x{rows}")

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is None:
            return
        tail = self._out.decode(b"", final=True)
        if tail:
            self._event("o", tail)
        self._file.close()
        self._file = None

    def _event(self, code: str, text: str) -> None:
        if self._file is None or self.truncated:
            return
        elapsed = round(time.monotonic() - self._start, 6)
        raw = _ENCODE([elapsed, code, text]) + b"\n"
        if self.written + len(raw) > self.max_bytes:
            # The marker may pass the cap by its own length; nothing is written after it.
            self.truncated = True
            raw = _ENCODE([elapsed, "m", "recording truncated: size limit reached"]) + b"\n"
            self._write(raw)
            self.flush()
            return
        self._write(raw)

    @property
    def open(self) -> bool:
        return self._file is not None

    def _write(self, raw: bytes) -> None:
        assert self._file is not None
        self._file.write(raw)
        self.written += len(raw)


# msgspec writes the same JSON as the json module (control characters as \uXXXX,
# other text as UTF-8) about five times faster, which matters during a flood.
_ENCODE = msgspec.json.Encoder().encode


@dataclass(frozen=True, slots=True)
class Event:
    time: float
    code: str  # "o", "i", "r" or "m"
    data: str


def read_recording(path: Path) -> tuple[dict[str, Any], Iterator[Event]]:
    """The header and a lazy iterator over the events. A torn last line (the daemon
    died mid-write) ends the iteration quietly; any other damage raises."""
    f = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by the iterator
    first = f.readline()
    try:
        header = json.loads(first)
    except json.JSONDecodeError as exc:
        f.close()
        raise RecordingError(f"{path}: not an asciicast file") from exc
    if not isinstance(header, dict) or header.get("version") != 2:
        f.close()
        raise RecordingError(f"{path}: not asciicast version 2")
    for key in ("width", "height"):
        if not isinstance(header.get(key), int) or not 1 <= header[key] <= 4096:
            f.close()
            raise RecordingError(f"{path}: bad {key} in header")

    def events() -> Iterator[Event]:
        with f:
            lines = iter(f)
            for line in lines:
                try:
                    t, code, data = json.loads(line)
                except (json.JSONDecodeError, ValueError, TypeError) as exc:
                    if next(lines, None) is None and not line.endswith("\n"):
                        return  # torn tail
                    raise RecordingError(f"{path}: damaged event line") from exc
                if not isinstance(t, int | float) or not isinstance(code, str) or not isinstance(data, str):
                    raise RecordingError(f"{path}: damaged event line")
                yield Event(float(t), code, data)

    return header, events()


def _parse_size(data: str) -> tuple[int, int] | None:
    cols, sep, rows = data.partition("x")
    if sep and cols.isdigit() and rows.isdigit() and 1 <= int(cols) <= 4096 and 1 <= int(rows) <= 4096:
        return int(cols), int(rows)
    return None


def screen_from_recording(path: Path, *, scrollback_lines: int = 10_000) -> Screen:
    """A `Screen` left as the recording's end: every output and resize applied."""
    from console.terminal import Screen  # the emulator's library: only for what replays

    header, events = read_recording(path)
    screen = Screen(header["width"], header["height"], scrollback_lines=scrollback_lines)
    for ev in events:
        _apply(screen, ev)
    return screen


def _apply(screen: Screen, ev: Event) -> None:
    if ev.code == "o":
        screen.feed(ev.data.encode("utf-8", "replace"))
    elif ev.code == "r" and (size := _parse_size(ev.data)) is not None:
        screen.resize(*size)


def replay(
    path: Path,
    *,
    speed: float = 1.0,
    write: Callable[[str], None],
    max_idle: float = 2.0,
    fps: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Screen:
    """Play a recording in real time (times `speed`) by painting a `Screen` fed with
    it: `write` receives escape sequences of our own making (`console.terminal.ansi`),
    at most `fps` frames a second; pauses longer than `max_idle` seconds are cut
    short. Returns the final screen."""
    if not speed > 0:
        raise ValueError("speed must be > 0")
    from console.terminal import Screen
    from console.terminal.ansi import paint_screen

    header, events = read_recording(path)
    screen = Screen(header["width"], header["height"])
    write("\x1b[0m\x1b[2J")
    frame_gap = 1.0 / fps
    clock = 0.0  # playback time reached, in recording seconds
    shown_at = -frame_gap
    dirty = False
    for ev in events:
        wait = min(ev.time - clock, max_idle) / speed
        if wait > 0:
            if dirty:
                write(paint_screen(screen))
                dirty, shown_at = False, ev.time
            sleep(wait)
        clock = ev.time
        _apply(screen, ev)
        if ev.code in ("o", "r"):
            dirty = True
            if ev.code == "r":
                write("\x1b[0m\x1b[2J" + paint_screen(screen, everything=True))
                dirty, shown_at = False, clock
            elif clock - shown_at >= frame_gap:
                write(paint_screen(screen))
                dirty, shown_at = False, clock
    if dirty:
        write(paint_screen(screen))
    # A reset and no newline: on a frame that fills the terminal a newline would
    # scroll its top row away; the shell's prompt comes back where the program's
    # cursor was.
    write("\x1b[0m")
    return screen
