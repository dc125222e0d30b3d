"""`agent-console sessions capture`: exact text for grapheme clusters, and `-e` with
colours and attributes like `tmux capture-pane -e`, from a real
session in a real daemon."""

from __future__ import annotations

import sys
import time

import pytest
from support.tui_sessions import new_session

from console.terminal import Screen

pytestmark = pytest.mark.needs_bwrap

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
OUTPUT = (
    "\x1b[1;31mred\x1b[0m plain \x1b[7mrev\x1b[0m   \x1b[4:3;38;2;1;2;3mcurly\x1b[0m\r\n"
    f"{FAMILY} a\u200db evil\x1b]52;c;aGk=\x07\r\n"
    "END"
)
PROGRAM = r"""
import os, sys, time, tty
tty.setraw(0)
os.write(1, bytes.fromhex(sys.argv[1]))
time.sleep(60)
"""


DAEMON_POLICY = "approval_timeout_s = 120\n"


def capture(daemon, sid: str, *flags: str) -> str:
    deadline = time.monotonic() + 10
    out = ""
    while time.monotonic() < deadline:
        r = daemon.cli("sessions", "capture", sid, *flags)
        assert r.returncode == 0, r.stderr
        out = r.stdout
        if "END" in out:
            return out
        time.sleep(0.1)
    raise AssertionError(f"END never captured:\n{out}")


def test_capture_keeps_clusters_and_with_e_the_attributes(daemon):
    sid = new_session(daemon, [sys.executable, "-c", PROGRAM, OUTPUT.encode().hex()])
    plain = capture(daemon, sid).split("\n")
    styled = capture(daemon, sid, "-e").split("\n")
    scrolled = capture(daemon, sid, "-e", "--scrollback")
    with daemon.operator() as op:
        op.call("sessions.kill", {"session": sid})
    # an emoji sequence is printed as itself; a joiner hidden between ASCII letters is
    # still shown escaped; the program's escapes never come out
    assert plain[:3] == ["red plain rev   curly", f"{FAMILY} a\\u200db evil", "END"]
    assert styled[0] == (
        "\x1b[0;1;31mred\x1b[0m plain \x1b[0;7mrev\x1b[0m   \x1b[0;4:3;38;2;1;2;3mcurly\x1b[0m"
    )
    assert styled[1:3] == plain[1:3]
    assert "\x1b]" not in "".join(styled) and "\x07" not in "".join(styled)
    assert scrolled.rstrip("\n").endswith("\n".join(styled).rstrip("\n"))
    # what -e prints draws the same cells again
    original, redrawn = Screen(80, 5), Screen(80, 5)
    original.feed(OUTPUT.replace("a\u200db", "ab").encode())
    redrawn.feed("\r\n".join(styled[:3]).replace("a\\u200db", "ab").encode())
    assert original.render(everything=True).rows == redrawn.render(everything=True).rows
