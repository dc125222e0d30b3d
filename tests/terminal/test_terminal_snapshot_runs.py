"""Attach at any moment of a real program's run: snapshots carry
the whole terminal state.

The recordings in tests/data/runs are what vim, vttest, less and an apt-style progress
display wrote to an 80x24 PTY (scripts/record_terminal_runs.py). At each byte offset a
client attaches: its screen is rebuilt from the daemon's `Screen.snapshot()` at that
point, then fed what the program wrote next, as the attach stream does. Its cells (text
and style), cursor and modes must be the daemon's own at the moment of attaching, a
little later, and at the end of the run: a client that attached mid-sequence, under a
scroll region, with a saved cursor or on the alternate screen sees what everyone sees.
"""

from __future__ import annotations

import pytest
from support.paths import TESTS

from console.terminal import Screen

RUNS = TESTS / "data" / "runs"
COLS, ROWS = 80, 24
LATER = 256  # bytes after attaching at which the screens are compared again
# Every byte offset of the apt-style run; every 2nd, 3rd or 7th of the longer ones,
# which still lands inside every kind of sequence they write (checked once at every
# offset: all passed) and keeps the test to seconds.
STEP = {"apt-style": 1, "vim": 2, "less": 3, "vttest": 7}


def state(screen: Screen) -> tuple:
    return screen.render(everything=True).rows, screen.cursor, screen.modes


@pytest.mark.parametrize("name", sorted(STEP))
def test_a_client_attaching_at_any_byte_sees_the_daemons_screen(name):
    data = (RUNS / f"{name}.bin").read_bytes()
    assert len(data) > 1000, "the recording is missing or empty: run scripts/record_terminal_runs.py"
    # The daemon's screen at every offset a comparison needs, fed byte by byte.
    daemon = Screen(COLS, ROWS, scrollback_lines=50)
    wanted = set(range(0, len(data) + 1, STEP[name]))
    later = {min(k + LATER, len(data)) for k in wanted}
    at: dict[int, tuple] = {}
    snapshots: dict[int, bytes] = {}
    for k in range(len(data) + 1):
        if k in wanted:
            snapshots[k] = daemon.snapshot()
        if k in wanted or k in later:
            at[k] = state(daemon)
        if k < len(data):
            daemon.feed(data[k : k + 1])
    final = (daemon.text(), daemon.cursor, daemon.modes)
    failures = []
    for k in sorted(wanted):
        client = Screen(COLS, ROWS, scrollback_lines=50)
        client.feed(snapshots[k])
        if state(client) != at[k]:
            failures.append((k, "on attaching"))
            continue
        j = min(k + LATER, len(data))
        client.feed(data[k:j])
        if state(client) != at[j]:
            failures.append((k, f"{j - k} bytes later"))
            continue
        client.feed(data[j:])
        if (client.text(), client.cursor, client.modes) != final:
            failures.append((k, "at the end of the run"))
    assert failures == [], f"{len(failures)} offsets differ, the first: {failures[:5]}"
