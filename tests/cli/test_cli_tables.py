"""CLI tables as a kubectl user expects them: a header on every
table, colour and width only on a terminal, plain text when piped."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest
from support.daemon import workspace

pytestmark = pytest.mark.needs_bwrap

DAEMON_POLICY = None  # the daemon's own defaults


@pytest.fixture(scope="module")
def daemon(daemon):
    """The shared daemon, with one long command in its history for the tables to fold."""
    ws = workspace()
    r = daemon.cli("exec", "--workspace", str(ws), "--", "true", *(f"word{i}" for i in range(40)))
    assert r.returncode == 0, r.stderr
    return daemon


def on_a_tty(daemon, *args: str, columns: int = 80) -> str:
    """Run the CLI with its stdout on a real terminal of ``columns`` columns."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "console", *args, "--state-dir", str(daemon.state_dir)],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(30)
    os.close(leader)
    return b"".join(chunks).decode()


def test_history_has_a_header_and_is_plain_when_piped(daemon):
    out = daemon.cli("history").stdout
    first = out.splitlines()[0]
    assert first.split()[:3] == ["WHEN", "ID", "/"] and "COMMAND" in first
    assert "\x1b[" not in out


def test_history_on_a_terminal_has_colour_and_fits_the_width(daemon):
    out = on_a_tty(daemon, "history", columns=140)
    assert "\x1b[1mWHEN" in out and "\x1b[32mallow" in out
    plain = [line for line in out.replace("\r", "").splitlines() if "r-" in line]
    import re

    assert plain
    for line in plain:
        shown = re.sub(r"\x1b\[[0-9;]*m", "", line)
        assert len(shown) <= 140 and shown.endswith("…"), line  # cut at a word, and says so
    piped = daemon.cli("history").stdout
    assert "word39" in piped  # piped output is not cut to a width
