"""Snapshots carry the state a program relies on.

A client that attaches rebuilds the screen from `Screen.snapshot()`. Compared cell by
cell (text and style) with the screen it was made from, and again after the program
goes on: a DECRC (ESC 8, CSI u) must land where it would have, with the saved pen,
and cells the program skipped must stay blank and unstyled (``ESC[7mREV ESC[1;20H``
is not a reverse bar). The last test does it through a real PTY session and the
daemon's attach."""

from __future__ import annotations

import base64
import random
import sys
import time

import pytest
from support.tui_sessions import new_session
from test_terminal_snapshot import VOCAB

from console.terminal import Screen

pytestmark = pytest.mark.needs_bwrap


def cells(screen: Screen) -> tuple:
    """Every row's styled cells, the cursor, the text and the modes."""
    frame = screen.render(everything=True)
    return frame.rows, screen.cursor, screen.text(), screen.modes


def rebuilt(original: Screen) -> Screen:
    cols, rows = original.size
    copy = Screen(cols, rows, scrollback_lines=50)
    copy.feed(original.snapshot())
    return copy


def assert_same(original: Screen, copy: Screen, when: str) -> None:
    a, b = cells(original), cells(copy)
    if a == b:
        return
    diff = [y for y in a[0] if a[0][y] != b[0].get(y)]
    raise AssertionError(
        f"{when}: rows {diff} differ; cursor {a[1]} vs {b[1]}\n{a[0][diff[0]] if diff else ''}"
    )


# Bytes a program wrote before the client attached, and what it writes after.
CASES = {
    "skipped cells after a reverse run": (b"\x1b[7mREV\x1b[1;20HX\x1b[0m", b""),
    "skipped cells at the end of a styled row": (b"\x1b[7mREV\x1b[1;20H", b"\x1b[0mafter"),
    "gaps after coloured and underlined text": (
        b"\x1b[1;4:3;38;2;1;2;3mA\x1b[5Gb\x1b[2;1H\x1b[41mC\x1b[9GD",
        b"",
    ),
    "cells holding only a background colour": (
        b"\x1b[44m\x1b[2;3H\x1b[5X\x1b[0m\x1b[3;1H\x1b[48;5;123m\x1b[K",
        b"",
    ),
    "DECSC with position and pen": (b"\x1b[3;5H\x1b[1;31m\x1b7\x1b[0m\x1b[Hhello", b"\x1b8SAVED"),
    "CSI s with position and pen": (b"\x1b[4;9H\x1b[7;44m\x1b[s\x1b[0m\x1b[Hhello", b"\x1b[uSAVED"),
    "saved under origin mode": (
        b"\x1b[2;5r\x1b[?6h\x1b[2;3H\x1b[4m\x1b7\x1b[?6l\x1b[0m\x1b[r\x1b[Hhello",
        b"\x1b8SAVED\x1b[1;1Hhome-of-the-region",
    ),
    "saved with a wrap pending": (b"\x1b[1;40H\x1b[32mQ\x1b7\x1b[0m\x1b[5;1Hhello", b"\x1b8W"),
    "saved on the alternate screen": (
        b"\x1b[3;5H\x1b[1;31m\x1b7\x1b[0m\x1b[?1049h\x1b[2;2H\x1b[32m\x1b7\x1b[0m\x1b[Halt",
        b"\x1b8ALT\x1b[?1049lPRI\x1b8AGAIN",
    ),
    "the primary's pen kept by 1049 while the alternate is shown": (
        b"\x1b[44m\x1b[2;2H\x1b[?1049h\x1b[0m\x1b[Halt",
        b"\x1b[?1049lPRI",
    ),
}


@pytest.mark.parametrize(("before", "after"), CASES.values(), ids=list(CASES))
def test_snapshot_is_cell_exact_and_keeps_the_saved_cursor(before, after):
    original = Screen(40, 8, scrollback_lines=50)
    original.feed(before)
    copy = rebuilt(original)
    assert_same(original, copy, "after attaching")
    original.feed(after)
    copy.feed(after)
    assert_same(original, copy, "after the program went on")


def test_a_reverse_run_does_not_smear_over_skipped_cells():
    original = Screen(40, 8)
    original.feed(b"\x1b[7mREV\x1b[1;20HX")
    row = cells(rebuilt(original))[0][0]
    assert [(seg.text, seg.style.reverse) for seg in row[:3]] == [
        ("REV", True),
        (" " * 16, False),
        ("X", True),
    ]


@pytest.mark.parametrize("chunk", range(4))
def test_random_streams_round_trip_cell_exact(chunk):
    vocab = [*VOCAB, b"\x1b7", b"\x1b8", b"\x1b[s", b"\x1b[u", b"\x1b[7m", b"\x1b[1;20H", b"\x1b[3;7H"]
    vocab += [b"\x1b[4:3m", b"\x1b[48;5;123m", b"\x1b[X", b"\x1b[3X"]
    after = b"\x1b8Z\x1b[u\x1b[?1049lY\x1b8W"
    failures = []
    for seed in range(chunk * 60, chunk * 60 + 60):
        rnd = random.Random(seed)
        cols, rows = rnd.choice([(10, 4), (20, 6), (80, 24)])
        original = Screen(cols, rows, scrollback_lines=50)
        original.feed(b"".join(rnd.choice(vocab) for _ in range(rnd.randrange(1, 80))))
        copy = rebuilt(original)
        same = cells(original) == cells(copy)
        original.feed(after)
        copy.feed(after)
        if not (same and cells(original) == cells(copy)):
            failures.append(seed)
    assert failures == []


# The program: raw mode (no output processing), the first part, wait for a byte, the second.
PROGRAM = r"""
import os, sys, time, tty
tty.setraw(0)
os.write(1, bytes.fromhex(sys.argv[1]))
os.read(0, 1)
os.write(1, bytes.fromhex(sys.argv[2]))
time.sleep(60)
"""
BEFORE = (
    b"\x1b[7mREV\x1b[1;20HX"  # a gap in a reverse run
    b"\x1b[0m\x1b[44m\x1b[3;5H\x1b[6X"  # an erase in blue
    b"\x1b[5;8H\x1b[1;32m\x1b7"  # saved: row 5, column 8, bold green
    b"\x1b[0m\x1b[8;1HEND"
)
AFTER = b"\x1b8SAVED\x1b[0m"


DAEMON_POLICY = "approval_timeout_s = 120\n"


def screen_text(op, sid: str, needle: str) -> str:
    deadline = time.monotonic() + 10
    text = ""
    while time.monotonic() < deadline:
        text = op.call("sessions.screen", {"session": sid})["text"]
        if needle in text:
            return text
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} never on the daemon's screen:\n{text}")


def test_attaching_to_a_real_session_rebuilds_its_screen(daemon):
    sid = new_session(daemon, [sys.executable, "-c", PROGRAM, BEFORE.hex(), AFTER.hex()])
    with daemon.operator() as op, daemon.operator() as typist:
        info = op.call("sessions.get", {"session": sid})["session"]
        cols, rows = info["cols"], info["rows"]
        daemon_text = screen_text(op, sid, "END")
        attached = op.call("sessions.attach", {"session": sid, "read_only": True})
        client = Screen(attached["cols"], attached["rows"])
        client.feed(base64.b64decode(attached["snapshot_base64"]))
        # what the daemon's screen holds: the same engine fed the same bytes
        reference = Screen(cols, rows)
        reference.feed(BEFORE)
        assert reference.text() == daemon_text
        assert_same(reference, client, "after attaching")
        typist.call("sessions.input", {"session": sid, "text": "x"})  # not the read-only client
        daemon_text = screen_text(op, sid, "SAVED")
        op.call("sessions.kill", {"session": sid})
    for screen in (reference, client):
        screen.feed(AFTER)
    assert_same(reference, client, "after DECRC")
    assert client.text() == daemon_text
    assert client.text().split("\n")[4] == " " * 7 + "SAVED"


def test_taking_a_snapshot_leaves_the_painted_frames_right():
    # A snapshot reads the cells through a render state of its own, which used to take
    # the terminal's dirty marks with it: the next frames kept the rows as they were.
    screen = Screen(40, 4)
    screen.render()
    screen.feed(b"\x1b[7mone\x1b[0m\r\n")
    screen.snapshot()
    screen.feed(b"next")
    painted = screen.render()
    rows = {y: "".join(seg.text for seg in row).rstrip() for y, row in painted.rows.items()}
    assert rows.get(0) == "one" and rows.get(1) == "next", rows
