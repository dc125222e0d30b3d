"""The smaller fidelity and tooling gaps, each against the real
emulator or a real session in a real daemon (back-tab and pending wrap, flags,
underline colour and kinds, the end of `sessions replay`, "busy" input)."""

from __future__ import annotations

import sys
import time

import pytest
from support.tui_sessions import new_session

from console.client import RPCError
from console.protocol.jsonrpc import BUSY
from console.terminal import Screen
from console.terminal.ansi import capture, paint_screen

pytestmark = pytest.mark.needs_bwrap

FLAG = "\U0001f1eb\U0001f1f7"  # France: two regional indicators
UNDERLINES = b"\x1b[4:3;58:2::1:2:3mA\x1b[59;4:4mB\x1b[58;5;9;4:5mC\x1b[4:2mD\x1b[0m"


def fed(data: bytes, cols: int = 10, rows: int = 3) -> Screen:
    screen = Screen(cols, rows)
    screen.feed(data)
    return screen


def rebuilt(screen: Screen) -> Screen:
    cols, rows = screen.size
    return fed(screen.snapshot(), cols, rows)


def test_back_tab_at_the_last_column_clears_the_pending_wrap():
    # xterm and tmux: CBT from the pending-wrap position goes to the previous tab stop
    screen = fed(b"0123456789\x1b[Zab")
    assert screen.text() == "01234567ab"
    assert screen.cursor[:2] == (9, 0)
    # away from the edge CBT is untouched
    screen = fed(b"0123456789\r\n012\x1b[Zx")
    assert screen.text() == "0123456789\nx12"
    # a count goes back that many tab stops from the last column (19 -> 16 -> 8)
    assert fed(b"0123456789" * 2 + b"\x1b[2Zab", cols=20).text() == "01234567ab0123456789"


def test_a_flag_is_one_two_cell_cluster():
    screen = fed(f"x{FLAG}y|".encode())
    assert screen.cursor.x == 5  # x, the flag's two cells, y, |
    row = screen.render(everything=True).rows[0]
    assert (row[0].text, row[0].cells) == (f"x{FLAG}y|" + " " * 5, 10)
    assert rebuilt(screen).text() == f"x{FLAG}y|" and rebuilt(screen).cursor.x == 5
    # three indicators: one flag and a lone indicator; a program's own 2027 stays on
    assert fed(("\U0001f1eb" * 3).encode()).cursor.x == 4
    screen = fed(b"\x1b[?2027h" + FLAG.encode())
    assert screen.cursor.x == 2 and screen._term.mode(2027)
    # other emoji keep their per-codepoint widths (as wcwidth(3) counts them)
    assert fed("a\U0001f469\u200d\U0001f4bbb".encode()).cursor.x == 6


def test_underline_colour_and_kinds_survive_cells_snapshot_capture_and_replay():
    screen = fed(UNDERLINES, cols=20)
    kinds = [(s.text, s.style.underline, s.style.underline_color) for s in screen.render(True).rows[0][:4]]
    assert kinds == [("A", 3, (1, 2, 3)), ("B", 4, None), ("C", 5, 9), ("D", 2, 9)]
    expected = "\x1b[0;4:3;58:2::1:2:3mA\x1b[0;4:4mB\x1b[0;4:5;58:5:9mC\x1b[0;4:2;58:5:9mD\x1b[0m"
    assert capture(screen) == expected
    assert capture(rebuilt(screen)) == expected
    painted = paint_screen(screen, everything=True)
    assert "58:2::1:2:3mA" in painted and "4:4mB" in painted
    # what replay writes, fed to another terminal, gives the same cells
    assert capture(fed(painted.encode(), cols=20)) == expected


DAEMON_POLICY = "approval_timeout_s = 120\n"


SLEEPER = r"""
import os, sys, time, tty
tty.setraw(0)
os.write(1, sys.argv[1].encode())
time.sleep(60)
"""


def wait_for(check, what: str):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.05)
    raise AssertionError(f"never: {what}")


def test_replay_does_not_scroll_the_last_frame(daemon):
    sid = new_session(daemon, [sys.executable, "-c", SLEEPER, "first\r\nlast END"])
    wait_for(lambda: "END" in daemon.cli("sessions", "capture", sid).stdout, "output")
    with daemon.operator() as op:
        op.call("sessions.kill", {"session": sid, "grace_s": 1})
    r = daemon.cli("sessions", "replay", sid, "--speed", "1000")
    assert r.returncode == 0, r.stderr
    assert "last END" in r.stdout
    # the frame ends with the cursor placed where the program left it, not a newline
    assert not r.stdout.endswith("\n"), repr(r.stdout[-40:])
    assert r.stdout.endswith("\x1b[0m")


def test_full_input_buffer_is_busy_not_invalid_params(daemon):
    sid = new_session(daemon, [sys.executable, "-c", SLEEPER, "READY"])
    wait_for(lambda: "READY" in daemon.cli("sessions", "capture", sid).stdout, "raw mode")
    chunk = "x" * (1 << 20)
    with daemon.operator() as op:
        op.call("sessions.input", {"session": sid, "text": chunk})  # most of it queued
        with pytest.raises(RPCError) as err:
            op.call("sessions.input", {"session": sid, "text": chunk})
        assert err.value.code == BUSY != -32602
        assert err.value.message == "session input is busy, try again"
        r = daemon.cli("sessions", "send", sid, "y" * 100_000)
        op.call("sessions.kill", {"session": sid, "grace_s": 1})
    assert r.returncode == 1
    assert "session input is busy, try again" in r.stderr


CLUSTERS = (
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f469\U0001f3fd\u200d\U0001f4bb "
    f"{FLAG} \u0416\u200d\u0416 \u2764\ufe0f\u200d\U0001f525\r\n"
)


def test_capture_prints_clusters_exactly_and_underline_colours_with_e(daemon):
    out = CLUSTERS + UNDERLINES.decode() + " END"
    sid = new_session(daemon, [sys.executable, "-c", SLEEPER, out])
    plain = wait_for(lambda: "END" in (c := daemon.cli("sessions", "capture", sid).stdout) and c, "output")
    styled = daemon.cli("sessions", "capture", sid, "-e").stdout
    with daemon.operator() as op:
        op.call("sessions.kill", {"session": sid, "grace_s": 1})
    # emoji ZWJ sequences and the flag are the characters printed; a joiner between
    # letters (Cyrillic here) is shown escaped
    assert plain.split("\n")[0] == (
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f469\U0001f3fd\u200d\U0001f4bb "
        f"{FLAG} \u0416\\u200d\u0416 \u2764\ufe0f\u200d\U0001f525"
    )
    assert plain.split("\n")[1] == "ABCD END"
    assert styled.split("\n")[1].startswith(
        "\x1b[0;4:3;58:2::1:2:3mA\x1b[0;4:4mB\x1b[0;4:5;58:5:9mC\x1b[0;4:2;58:5:9mD\x1b[0m END"
    )
