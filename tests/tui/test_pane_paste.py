"""Paste safety on what terminals actually send, in the real console against a real PTY.

tmux's paste-buffer, xterm, VTE and iTerm2 send line breaks as CR, so a check for LF
alone lets a paste run lines unseen. The program here reads its terminal in raw mode
and records every byte it gets, so each test asserts what the program received."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.tui import Clock, make_app, screen_text, until
from support.tui_sessions import new_session, open_pane, wait_shown
from textual import events

from console.tui.screens.prompts import ConfirmPrompt

pytestmark = pytest.mark.needs_bwrap

SIZE = (120, 40)
START, END = b"\x1b[200~", b"\x1b[201~"

# Raw mode (no line discipline: CR is not turned into LF, ^C is a byte), optionally
# bracketed paste, then every byte read is appended to the file.
RAW_READER = r"""
import os, sys, tty
tty.setraw(0)
if sys.argv[2] == "1":
    os.write(1, b"\x1b[?2004h")
os.write(1, b"reader-ready\r\n")
with open(sys.argv[1], "ab", buffering=0) as f:
    total = 0
    while True:
        data = os.read(0, 4096)
        if not data:
            break
        f.write(data)
        total += len(data)
        os.write(1, b"got %d\r\n" % total)
"""


DAEMON_POLICY = "approval_timeout_s = 120\n"


def reader(daemon, tmp_path: Path, bracketed: bool) -> tuple[str, Path]:
    out = tmp_path / "received"
    out.write_bytes(b"")
    sid = new_session(daemon, [sys.executable, "-c", RAW_READER, str(out), "1" if bracketed else "0"])
    return sid, out


async def received(pilot, out: Path, expected: bytes) -> None:
    try:
        await until(pilot, lambda: out.read_bytes() == expected, timeout=10)
    except AssertionError:
        raise AssertionError(f"the program received {out.read_bytes()!r}, not {expected!r}") from None


async def test_carriage_returns_ask_first_and_confirmed_paste_arrives_exactly(daemon, tmp_path):
    sid, out = reader(daemon, tmp_path, bracketed=False)
    app = make_app(daemon, Clock())
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await wait_shown(pilot, pane, "reader-ready")
        assert not pane.link.screen.modes.bracketed_paste
        # what tmux's paste-buffer sends: CR line breaks
        pane.post_message(events.Paste("echo a\recho b\r"))
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
        # shown escaped, line by line, and nothing sent yet
        await until(pilot, lambda: "echo a\\r" in screen_text(app) and "echo b\\r" in screen_text(app))
        assert "line breaks" in screen_text(app)
        await pilot.pause(0.2)
        assert out.read_bytes() == b""
        await pilot.press("y")
        await received(pilot, out, b"echo a\recho b\r")
        # CRLF asks too, and is one Enter, not two
        pane.post_message(events.Paste("one\r\ntwo"))
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
        await pilot.press("y")
        await received(pilot, out, b"echo a\recho b\rone\rtwo")
        # an escape sequence on one line asks; declining sends nothing
        pane.post_message(events.Paste("ls \x1b[2J\x1b]52;c;aGk=\x07"))
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
        await until(pilot, lambda: "ls \\e[2J\\e]52;c;aGk=\\a" in screen_text(app))
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmPrompt))
        # so do bidi controls that reorder what the eye reads
        pane.post_message(events.Paste("echo \u202eevil"))
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
        await until(pilot, lambda: "\\u202e" in screen_text(app))
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmPrompt))
        # a plain one-line paste goes straight through
        pane.post_message(events.Paste(" plain"))
        await received(pilot, out, b"echo a\recho b\rone\rtwo plain")
        assert not isinstance(app.screen, ConfirmPrompt)


async def test_an_end_marker_inside_a_bracketed_paste_never_ends_the_bracket(daemon, tmp_path):
    sid, out = reader(daemon, tmp_path, bracketed=True)
    app = make_app(daemon, Clock())
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await wait_shown(pilot, pane, "reader-ready")
        await until(pilot, lambda: pane.link.screen.modes.bracketed_paste)
        # lines inside a bracket are data: no question
        pane.post_message(events.Paste("l1\rl2\n"))
        first = START + b"l1\rl2\n" + END
        await received(pilot, out, first)
        assert not isinstance(app.screen, ConfirmPrompt)
        # the classic injection: end the bracket, then a line that runs
        pane.post_message(events.Paste("harmless\x1b[201~rm -rf ~/nothing\r"))
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
        await until(pilot, lambda: "\\e[201~" in screen_text(app))
        await pilot.press("y")
        await received(pilot, out, first + START + b"harmless [201~rm -rf ~/nothing\r" + END)
        second = out.read_bytes()[len(first) :]
        assert second.count(b"\x1b") == 2  # the bracket's own two, nothing inside
        # the 8-bit form (C1 CSI) is neutralised the same way
        pane.post_message(events.Paste("x\u009b201~y"))
        await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
        await pilot.press("y")
        await received(pilot, out, first + second + START + b"x 201~y" + END)
