"""Snapshot fidelity over many random streams of everyday terminal output.

A client attaching to a session rebuilds the screen from `Screen.snapshot()` and
then follows the live stream, so the snapshot must put a fresh screen in the same
state: text, cursor, modes, and (blank rows aside) scrollback. The streams mix
text, colours, cursor movement, erasing, scrolling regions, the alternate screen,
insert mode, autowrap, tabs and titles, at several sizes.

Known losses, kept out of the vocabulary here and documented on `snapshot`: the
saved cursor (DECSC), the contents of an alternate screen entered with mode 47
while the primary one is shown, a cursor outside the margins under origin mode,
and wide characters split by a soft wrap.
"""

from __future__ import annotations

import random

import pytest

from console.terminal import Screen

VOCAB = [
    b"hello",
    b"world ",
    b"x" * 30,
    b"\r\n",
    b"\r",
    b"\n",
    b"\t",
    b"\x08",
    b"\x1b[31m",
    b"\x1b[0m",
    b"\x1b[1;4;7m",
    b"\x1b[38;2;10;20;30m",
    b"\x1b[44m",
    b"\x1b[K",
    b"\x1b[1K",
    b"\x1b[2J",
    b"\x1b[J",
    b"\x1b[H",
    b"\x1b[5;10H",
    b"\x1b[3A",
    b"\x1b[2C",
    b"\x1b[2;5r",
    b"\x1b[r",
    b"\x1bM",
    b"\x1bD",
    b"\x1b[L",
    b"\x1b[M",
    b"\x1b[P",
    b"\x1b[@",
    b"\x1b[S",
    b"\x1b[T",
    b"\x1b[?1049h",
    b"\x1b[?1049l",
    b"\x1b[?1h",
    b"\x1b[?1l",
    b"\x1b[?2004h",
    b"\x1b[?1000h",
    b"\x1b[?1006h",
    b"\x1b[?25l",
    b"\x1b[?25h",
    b"\x1b[4h",
    b"\x1b[4l",
    b"\x1b[?7l",
    b"\x1b[?7h",
    b"\x1b[3g",
    b"\x1bH",
    b"\x1b]2;t\x07",
]


def non_blank(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


@pytest.mark.parametrize("chunk", range(10))
def test_snapshot_round_trips_random_streams(chunk):
    failures = []
    for seed in range(chunk * 40, chunk * 40 + 40):
        rnd = random.Random(seed)
        cols, rows = rnd.choice([(10, 4), (20, 6), (80, 24)])
        stream = b"".join(rnd.choice(VOCAB) for _ in range(rnd.randrange(1, 80)))
        original = Screen(cols, rows, scrollback_lines=50)
        original.feed(stream)
        copy = Screen(cols, rows, scrollback_lines=50)
        copy.feed(original.snapshot())
        same = (
            copy.text() == original.text()
            and copy.cursor == original.cursor
            and copy.modes == original.modes
            and non_blank(copy.text(scrollback=True)) == non_blank(original.text(scrollback=True))
        )
        if not same:
            failures.append((seed, stream))
    assert failures == []


def test_origin_mode_cursor_comes_back_relative_to_the_margins():
    s = Screen(20, 8)
    s.feed(b"top\x1b[3;6r\x1b[?6h\x1b[2;4Hin region")
    copy = Screen(20, 8)
    copy.feed(s.snapshot())
    assert copy.cursor == s.cursor and copy.text() == s.text() and copy.modes == s.modes
    for scr in (s, copy):
        scr.feed(b"\x1b[1;1Hhome")  # origin-relative in both
    assert copy.text() == s.text()
