"""DECCOLM is refused, as xterm and tmux do by default: a program's ``CSI ? 40 h`` then
``CSI ? 3 h`` must not resize the emulated screen to 132 columns while the PTY and the
session stay at 80. Checked in the emulator, split at every byte
boundary, and in a real session's screen in the daemon."""

from __future__ import annotations

import time

import pytest
from support.tui_sessions import new_session

from console.terminal import Screen

pytestmark = pytest.mark.needs_bwrap

# 132-column permission, DECCOLM, both in one set, leading zeros, sub-parameters,
# and other modes in the same set that must still take effect (DECCKM, bracketed paste).
STREAM = b"hi\x1b[?40h\x1b[?3h\x1b[?40;3h\x1b[?040h\x1b[?3h\x1b[?1;40:1;2004h\x1b[?3h\x1b[?40h\x1b[?3lok"


def assert_refused(screen: Screen) -> None:
    assert screen.size == (80, 24)
    modes = screen.modes
    assert modes.application_cursor and modes.bracketed_paste  # the rest of the set applied
    assert screen.text().startswith("hiok")  # and DECCOLM cleared nothing


def test_deccolm_does_not_resize_the_screen():
    screen = Screen(80, 24)
    screen.feed(STREAM)
    assert_refused(screen)
    screen.feed(b"\r\n" + b"x" * 100)
    assert screen.text().split("\n")[1] == "x" * 80  # wraps at 80, not 132


def test_deccolm_split_at_every_byte_boundary_is_refused():
    for i in range(len(STREAM) + 1):
        for j in range(i, len(STREAM) + 1, 3):
            screen = Screen(80, 24)
            for part in (STREAM[:i], STREAM[i:j], STREAM[j:]):
                screen.feed(part)
            assert_refused(screen)
    screen = Screen(80, 24)
    for byte in STREAM:
        screen.feed(bytes([byte]))
    assert_refused(screen)


def test_a_held_back_tail_reaches_an_attaching_client():
    """A feed that ends inside ``CSI ? 4``: the snapshot carries it, so the client
    parses the rest of the set as the daemon does (and refuses it too)."""
    daemon_screen = Screen(80, 24)
    daemon_screen.feed(b"a\x1b[?4")
    client = Screen(80, 24)
    client.feed(daemon_screen.snapshot())
    for screen in (daemon_screen, client):
        screen.feed(b"0;2004h\x1b[?3hZ")
        assert screen.size == (80, 24) and screen.modes.bracketed_paste
        assert screen.text() == "aZ"


def test_an_overlong_split_set_is_dropped_not_passed_through():
    screen = Screen(80, 24)
    screen.feed(b"\x1b[?" + b"1;" * 300)
    screen.feed(b"1;40h\x1b[?3hok")
    assert screen.size == (80, 24) and screen.text() == "ok"


DAEMON_POLICY = "approval_timeout_s = 120\n"


def test_a_session_keeps_its_width(daemon):
    script = r"printf 'hi\033[?40h\033[?3h'; sleep 0.1; printf '\033[?3h%0140d\n' 0; exec sleep 60"
    sid = new_session(daemon, ["sh", "-c", script])
    with daemon.operator() as op:
        cols = op.call("sessions.get", {"session": sid})["session"]["cols"]
        assert cols < 132
        deadline = time.monotonic() + 10
        lines: list[str] = []
        while time.monotonic() < deadline and lines[1:2] != ["0" * (142 - cols)]:
            lines = op.call("sessions.screen", {"session": sid})["text"].split("\n")
            time.sleep(0.05)
        op.call("sessions.kill", {"session": sid})
    # wrapped at the PTY's width, not at 132
    assert lines[:2] == ["hi" + "0" * (cols - 2), "0" * (142 - cols)], lines
