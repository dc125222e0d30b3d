"""Fidelity: what a console pane shows, what the daemon's screen holds (`sessions capture`)
and what tmux shows (`capture-pane`), for the same bytes and programs at the same size.

One program goes through the byte cases: for each it waits for a key, resets the
terminal and writes the case's bytes raw. It runs in a daemon session (watched live in a
read-only pane, so the pane's own emulator parses the stream) and in a private tmux
server, both 80x24. Every row must match: the
pane with the daemon's capture, and the daemon's capture with tmux's — except for the
differences each case lists, with their reason (docs/console.md, *Fidelity*). A listed
difference is asserted as it is, so it cannot vanish or change unnoticed.

The programs (vim, less, a Python REPL, htop and vttest's first screens) get the same
keys in the daemon and in tmux; what is stable is compared (all of vim's, less's, the
REPL's and vttest's screens; htop's labels, header row and function-key bar).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support.daemon import DaemonProcess, short_tmp
from support.tui import Clock, make_app, until
from support.tui_sessions import TERM_ENV, show_sessions, shown

from console.cli import main as cli_main
from console.terminal import Screen

COLS, ROWS = 80, 24
APP_SIZE = (120, 40)  # a read-only pane larger than the session shows all of it

pytestmark = [
    pytest.mark.needs_bwrap,
    pytest.mark.programs,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

RESET = b"\x1b[?1049l\x1bc"
# One program goes through all the cases: for each, it waits for a key (the go), then
# leaves the alternate screen, resets the terminal (RIS: tmux's keeps the alternate
# screen) and writes the case's bytes raw, then marks it done.
WRITER = r"""
import os, sys, time, tty
tty.setraw(0)
open(sys.argv[1] + ".ready", "w").close()
for i, data in enumerate(sys.argv[2:]):
    os.read(0, 1)
    os.write(1, bytes.fromhex(data))
    open(f"{sys.argv[1]}.{i}", "w").close()
time.sleep(120)
"""


@dataclass(frozen=True)
class Case:
    id: str
    data: bytes
    # rows (0-based) where tmux's capture-pane differs, as tmux has them, and why
    tmux: dict[int, str] = field(default_factory=dict)
    tmux_why: str = ""
    # the same for the pane against the daemon's capture
    pane: dict[int, str] = field(default_factory=dict)
    pane_why: str = ""
    # `capture -e` and `capture-pane -e` are compared cell by cell where the text agrees;
    # this says why they differ where they do
    attrs_why: str = ""


def at(row: int, col: int) -> bytes:
    return b"\x1b[%d;%dH" % (row, col)


def widths(*clusters: str) -> bytes:
    """Each cluster on its own row with a bar at column 10, so the spaces before the bar
    show how many cells the cluster took."""
    return b"".join(at(i + 1, 1) + c.encode() + b"\x1b[10G|" for i, c in enumerate(clusters))


FILL = b"".join(b"line %02d\r\n" % i for i in range(1, 24)) + b"line 24"
CASES = [
    Case("cup", b"A" + at(5, 10) + b"B" + at(24, 80) + b"C" + b"\x1b[3GD\x1b[10dE\x1b[;5HF"),
    Case(
        "relative-moves",
        at(10, 10) + b"X\x1b[3AU\x1b[2BD\x1b[5CR\x1b[4DL\x1b[EN\x1b[2FP\x1b[99CE\x1b[99BZ\x1b[99A\x1b[99DH",
    ),
    Case("autowrap", b"".join(bytes([48 + i % 10]) for i in range(200)) + b"!"),
    Case(
        "pending-wrap",
        at(1, 80)
        + b"X"
        + b"Y"  # the wrap happens on the next character
        + at(3, 80)
        + b"X\rC"  # CR clears the pending wrap
        + at(5, 80)
        + b"X\x1b[DW"  # so does a cursor move: W overwrites column 79
        + at(7, 80)
        + b"X\x08B"  # BS from the pending wrap lands on column 79
        + at(9, 80)
        + b"X"
        + at(9, 80)
        + b"Q",  # CUP to the last column, no wrap yet
        tmux={4: " " * 79 + "W", 6: " " * 79 + "B"},
        tmux_why="tmux moves left from one past the last column; xterm from the last column",
    ),
    Case("no-autowrap", b"\x1b[?7l" + b"a" * 78 + b"bcdefg\r\n\x1b[?7hnext"),
    Case("scroll-up", b"".join(b"row %02d\r\n" % i for i in range(1, 31)) + b"last"),
    Case(
        "scroll-region",
        FILL + b"\x1b[5;10r" + at(10, 1) + b"\n\n\nin region" + at(24, 1) + b"outside",
    ),
    Case("reverse-index", FILL + b"\x1b[5;10r" + at(5, 1) + b"\x1bM\x1bMtop of region"),
    Case("scroll-up-down", FILL + b"\x1b[3;20r\x1b[2S\x1b[r\x1b[3T"),
    Case("insert-delete-line", FILL + at(4, 1) + b"\x1b[2L" + at(10, 1) + b"\x1b[3M"),
    Case(
        "insert-delete-char",
        b"abcdefghij" + at(1, 3) + b"\x1b[3@XYZ\r\n0123456789" + at(2, 2) + b"\x1b[4P",
    ),
    Case("insert-mode", b"abcdef\r\x1b[4hXY\x1b[4l" + at(2, 1) + b"12345\r\x1b[2C\x1b[2X"),
    Case(
        "erase-line",
        b"".join(at(r, 1) + b"0123456789" for r in (1, 2, 3))
        + at(1, 5)
        + b"\x1b[K"
        + at(2, 5)
        + b"\x1b[1K"
        + at(3, 5)
        + b"\x1b[2K",
    ),
    Case("erase-display-below", FILL + at(12, 4) + b"\x1b[J"),
    Case("erase-display-above", FILL + at(12, 4) + b"\x1b[1J"),
    Case("erase-display-all", FILL + at(12, 4) + b"\x1b[2Jafter"),
    Case(
        "tabs",
        b"a\tb\tc\r\n\x1b[3g"
        + at(2, 5)
        + b"\x1bH"
        + at(2, 30)
        + b"\x1bH\r\tx\ty\tz"
        + at(3, 1)
        + b"\x1b[0g\x1b[2Iq",
        tmux={2: "q"},
        tmux_why="tmux 3.3a has no CHT (CSI I); later tmux has",
    ),
    Case("back-tab", at(1, 40) + b"\x1b[Za" + at(2, 80) + b"X\x1b[Zb" + at(3, 30) + b"\x1b[2Zc"),
    Case("wide-cjk", "漢字テスト|".encode() + at(2, 79) + "漢x".encode() + at(4, 80) + "字|".encode()),
    Case("emoji", widths("😀", "👍🏽", "🐍x", "✅", "⌚") + at(8, 80) + "😀|".encode()),
    Case("combining", widths("e\u0301", "a\u0308\u0304", "n\u0303", "\u0915\u093f", "z\u0335\u0336")),
    Case(
        "zwj-sequence",
        widths("👩\u200d💻", "👨\u200d👩\u200d👧", "🏳\ufe0f\u200d🌈"),
        pane={0: "👩💻" + " " * 5 + "|", 1: "👨👩👧" + " " * 3 + "|", 2: "🏳\ufe0f🌈" + " " * 6 + "|"},
        pane_why="the pane never sends a joiner to the operator's terminal: the cells keep their widths",
        tmux={
            0: "👩\u200d💻" + " " * 7 + "|",
            1: "👨\u200d👩\u200d👧" + " " * 7 + "|",
            2: "🏳\ufe0f\u200d🌈" + " " * 8 + "|",
        },
        tmux_why="tmux 3.3a joins the sequence into the first emoji's cell; we count each by wcwidth",
    ),
    Case("flags-and-vs16", widths("🇫🇷", "❤\ufe0f", "☺\ufe0e", "\u2764")),
    Case(
        "sgr-basic",
        b"\x1b[1mbold\x1b[22m \x1b[2mdim\x1b[22m \x1b[3mital\x1b[23m \x1b[4munder\x1b[24m "
        b"\x1b[5mblink\x1b[25m \x1b[7mrev\x1b[27m \x1b[9mstrike\x1b[29m \x1b[8mhid\x1b[28m\r\n"
        + b"".join(b"\x1b[%dm%d" % (30 + i, i) for i in range(8))
        + b"".join(b"\x1b[%dm%d" % (90 + i, i) for i in range(8))
        + b"\x1b[39m"
        + b"".join(b"\x1b[%dm%d" % (40 + i, i) for i in range(8))
        + b"\x1b[0m",
    ),
    Case(
        "sgr-256-truecolour",
        b"\x1b[38;5;208morange\x1b[48;5;22m on green\x1b[0m "
        b"\x1b[38;2;10;200;30mtrue\x1b[48;2;1;2;3m on dark\x1b[0m "
        b"\x1b[38:2::255:0:128mcolon\x1b[0m \x1b[4:3mcurly\x1b[0m",
    ),
    Case(
        "erase-with-background",
        b"\x1b[44m\x1b[2J" + at(3, 1) + b"\x1b[41mred\x1b[K" + at(5, 10) + b"\x1b[42m\x1b[3X\x1b[0m plain",
        attrs_why="capture-pane -e drops blank cells at the end of a row even when coloured (-N too)",
    ),
    Case(
        "alternate-screen",
        b"main text"
        + b"\x1b[?1049h"
        + at(3, 3)
        + b"alternate"
        + b"\x1b[?1049l"
        + b" back"
        + b"\x1b[?1049h\x1b[2J"
        + at(5, 5)
        + b"alt again",
    ),
    Case("alternate-leave", b"main\r\n" + b"\x1b[?1049h" + b"on alt" + b"\x1b[?1049l" + b"then main"),
    Case(
        "save-restore-cursor",
        at(3, 5)
        + b"\x1b7"
        + at(10, 20)
        + b"moved\x1b8here"
        + at(12, 1)
        + b"\x1b[s"
        + at(1, 70)
        + b"x\x1b[uthere",
    ),
    Case(
        "origin-mode",
        b"\x1b[5;15r\x1b[?6h" + at(1, 1) + b"top" + at(99, 1) + b"bottom\x1b[?6l" + at(1, 1) + b"home",
    ),
    Case(
        "rep-and-decaln",
        b"\x1b#8" + at(3, 3) + b"ab\x1b[5b" + at(5, 1) + b"-\x1b[100b",
        tmux={5: "E" * 80},
        tmux_why="tmux stops REP at the end of the line; xterm wraps as if each were printed",
    ),
    Case(
        "charsets",
        b"\x1b(0lqqk\r\nx  x\r\nmqqj\x1b(B plain \x0e\x1b)0lqk\x0f shifted-out",
        tmux={0: "lqqk", 1: "x  x", 2: "mqqj plain lqk shifted-out"},
        tmux_why="tmux keeps line drawing as ASCII with a charset flag, and capture-pane prints the ASCII",
    ),
    Case("controls", b"a\x08b\r\nc\x07d\x1bDe\x1bEf\x0bg\x0ch\r\n\x08\x08start"),
    Case(
        "deccolm-refused",
        FILL + b"\x1b[?3h" + at(1, 1) + b"after",
        tmux=dict.fromkeys(range(1, 24), "") | {0: "after"},
        tmux_why="tmux clears the screen on the refused CSI ? 3 h; agent-console keeps it",
    ),
    Case(
        "bidi-and-invisible",
        "a\u202eb\u200bc\u2066d".encode(),
        pane={0: "abcd"},
        pane_why="the pane drops format characters (never sent to the operator's terminal)",
        tmux={0: "a\u202eb\u200bc\u2066d"},
        tmux_why="capture escapes bidi and zero-width characters (Untrusted text)",
    ),
]


# ------------------------------------------------------------------ the three sides


class Tmux:
    """A private tmux server (own socket, no config), killed at the end."""

    def __init__(self) -> None:
        self.socket = f"fid-{uuid.uuid4().hex[:8]}"
        self._n = 0

    def cmd(self, *args: str, check: bool = True) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=20,
        ).stdout

    def new(self, argv: list[str], cwd: str = "/tmp", **env: str) -> str:
        self._n += 1
        name = f"p{self._n}"
        environment = {**TERM_ENV, **env}
        command = shlex.join(["env", *(f"{k}={v}" for k, v in environment.items()), *argv])
        self.cmd("new-session", "-d", "-s", name, "-x", str(COLS), "-y", str(ROWS), "-c", cwd, command)
        return name

    def keys(self, target: str, data: bytes) -> None:
        self.cmd("send-keys", "-t", target, "-H", *(f"{b:02x}" for b in data))

    def capture(self, target: str, *flags: str) -> str:
        return self.cmd("capture-pane", "-p", *flags, "-t", target)

    def kill(self) -> None:
        self.cmd("kill-server", check=False)


def new_session(daemon: DaemonProcess, argv: list[str], cwd: str = "/tmp", **env: str) -> str:
    with daemon.operator() as op:
        params = {
            "unconfined": True,
            "argv": argv,
            "cwd": cwd,
            "title": "",
            "cols": COLS,
            "rows": ROWS,
            "env": {**TERM_ENV, **env},
        }
        return str(op.call("sessions.new", params)["session"]["id"])


def send(daemon: DaemonProcess, sid: str, data: bytes) -> None:
    with daemon.operator() as op:
        op.call("sessions.input", {"session": sid, "data_base64": base64.b64encode(data).decode()})


def capture(daemon: DaemonProcess, sid: str, *flags: str) -> str:
    """What `agent-console sessions capture` prints (its own code, run in this process)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli_main(["sessions", "capture", "--state-dir", str(daemon.state_dir), *flags, sid])
    assert rc == 0
    return out.getvalue()


def rows(text: str) -> list[str]:
    """Rows with trailing blanks trimmed, padded or cut to the screen's height."""
    lines = [line.rstrip() for line in text.split("\n")][:ROWS]
    return lines + [""] * (ROWS - len(lines))


def cells(styled: str) -> list[Any]:
    """Styled capture (either tool's SGR) replayed into a fresh emulator: its cells, so
    two spellings of the same attributes compare equal."""
    screen = Screen(COLS, ROWS)
    try:
        lines = styled.rstrip("\n").split("\n")[:ROWS]
        screen.feed("\r\n".join(f"\x1b[0m{line}" for line in lines).encode())
        frame = screen.render(everything=True)
        return [frame.rows[y] for y in range(ROWS)]
    finally:
        screen.close()


def pane_rows(pane: Any) -> list[str]:
    return rows(shown(pane))


# ------------------------------------------------------------------ byte cases


@dataclass
class Seen:
    pane: list[str]
    daemon: list[str]
    tmux: list[str]
    daemon_styled: str
    tmux_styled: str


def wait_file(path: Path, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never written"
        time.sleep(0.01)


def _tmux_cases(tmux: Tmux, flags: Path) -> dict[str, tuple[list[str], str]]:
    """Each case in tmux: go, then its capture once two in a row agree."""
    target = tmux.new(
        [sys.executable, "-c", WRITER, str(flags / "t"), *((RESET + c.data).hex() for c in CASES)]
    )
    out = {}
    wait_file(flags / "t.ready")
    for i, case in enumerate(CASES):
        tmux.keys(target, b"g")
        wait_file(flags / f"t.{i}")
        before, text = None, tmux.capture(target)
        while text != before:
            time.sleep(0.05)
            before, text = text, tmux.capture(target)
        out[case.id] = (rows(text), tmux.capture(target, "-e"))
    return out


async def _watch_cases(daemon: DaemonProcess, tmux: Tmux, flags: Path) -> dict[str, Seen]:
    """Each case in the daemon, watched live in a read-only pane (so the pane's emulator
    parses the stream itself), while tmux runs through the same cases beside it."""
    in_tmux = asyncio.create_task(asyncio.to_thread(_tmux_cases, tmux, flags))
    sid = new_session(
        daemon, [sys.executable, "-c", WRITER, str(flags / "d"), *((RESET + c.data).hex() for c in CASES)]
    )
    seen: dict[str, Seen] = {}
    app = make_app(daemon, Clock())
    async with app.run_test(size=APP_SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        state = await screen.open_pane(sid, read_only=True)
        pane = screen.pane_widget(state)
        assert pane is not None
        await until(pilot, lambda: pane.link.state == "live" and pane.link.screen is not None)
        written = pane.link.offset
        await asyncio.to_thread(wait_file, flags / "d.ready")
        for case in CASES:
            send(daemon, sid, b"g")
            written += len(RESET + case.data)
            await until(pilot, lambda: pane.link.offset >= written)  # noqa: B023
            daemon_rows = rows(capture(daemon, sid))
            expected = [case.pane.get(i, row) for i, row in enumerate(daemon_rows)]
            with contextlib.suppress(AssertionError):
                await until(pilot, lambda: pane_rows(pane) == expected, timeout=3)  # noqa: B023
            seen[case.id] = Seen(
                pane=pane_rows(pane),
                daemon=daemon_rows,
                tmux=[],
                daemon_styled=capture(daemon, sid, "-e"),
                tmux_styled="",
            )
    for case_id, (tmux_rows, tmux_styled) in (await in_tmux).items():
        seen[case_id].tmux, seen[case_id].tmux_styled = tmux_rows, tmux_styled
    return seen


DAEMON_POLICY = "approval_timeout_s = 120\n"


@pytest.fixture(scope="module")
def tmux() -> Iterator[Tmux]:
    t = Tmux()
    try:
        yield t
    finally:
        t.kill()


@pytest.fixture(scope="module")
def seen(daemon: DaemonProcess, tmux: Tmux) -> dict[str, Seen]:
    flags = short_tmp("fid-")
    try:
        return asyncio.run(_watch_cases(daemon, tmux, flags))
    finally:
        shutil.rmtree(flags, ignore_errors=True)


def differs(ours: list[str], theirs: list[str], listed: dict[int, str]) -> None:
    """`theirs` is `ours` except for the listed rows, which must be as listed and differ."""
    for row, text in listed.items():
        assert ours[row] != text, f"row {row}: the listed difference is gone"
    assert theirs == [listed.get(i, row) for i, row in enumerate(ours)]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_pane_shows_the_daemons_screen(seen: dict[str, Seen], case: Case) -> None:
    s = seen[case.id]
    assert any(s.daemon), "the case drew nothing"
    differs(s.daemon, s.pane, case.pane)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_daemon_screen_matches_tmux(seen: dict[str, Seen], case: Case) -> None:
    s = seen[case.id]
    differs(s.daemon, s.tmux, case.tmux)


ATTR_CASES = [c for c in CASES if not c.tmux]


@pytest.mark.parametrize("case", ATTR_CASES, ids=[c.id for c in ATTR_CASES])
def test_daemon_attributes_match_tmux(seen: dict[str, Seen], case: Case) -> None:
    s = seen[case.id]
    if case.attrs_why:
        assert cells(s.daemon_styled) != cells(s.tmux_styled), "the listed difference is gone"
    else:
        assert cells(s.daemon_styled) == cells(s.tmux_styled)


# ------------------------------------------------------------------ programs


@dataclass(frozen=True)
class Step:
    keys: bytes  # typed into the program (the same bytes in the daemon and in tmux)
    needle: str  # shown once the program has answered them
    differs: str = ""  # why tmux shows this screen otherwise (asserted to differ)
    again: bool = False  # tmux shows the same screen as before


@dataclass(frozen=True)
class Program:
    id: str
    argv: list[str]
    steps: list[Step]
    env: dict[str, str] = field(default_factory=dict)
    # None: every row is compared; else only rows holding one of these labels, by label
    labels: tuple[str, ...] | None = None


DECCOLM = "DECCOLM is refused without clearing the screen (as xterm by default); tmux clears and homes"
LONG = "".join(f"row {i:03d} of the file\n" for i in range(1, 301))
NOTES = "".join(f"{i:02d} the quick brown fox jumps over the lazy dog\n" for i in range(1, 41))
PROGRAMS = [
    Program(
        "vim",
        ["vim", "-u", "NONE", "-N", "-i", "NONE", "-n", "notes.txt"],
        [
            Step(b"", "01 the quick"),
            Step(b":set number\r", "  1 01 the"),
            Step(b"15Gdd", "16 the quick"),  # delete a line in the middle
            Step(b"Oinserted above\x1b", "inserted above"),
        ],
    ),
    Program(
        "less",
        ["less", "long.txt"],
        [Step(b"", "row 001"), Step(b" ", "row 030"), Step(b"/row 250\r", "row 250"), Step(b"g", "row 001")],
        env={"LESS": "", "LESSHISTFILE": "-"},
    ),
    Program(
        "python-repl",
        [sys.executable, "-q"],
        [
            Step(b"", ">>>"),
            Step(b"6 * 7\r", "42"),
            Step(b"print('x' * 100)\r", "xxxxx\n"),  # a line longer than the screen
            Step(b"for i in range(3):\r\tprint('loop', i)\r\r", "loop 2"),
        ],
        env={"PYTHON_BASIC_REPL": "1"},
    ),
    Program(
        "htop",
        ["htop", "-d", "100"],
        [Step(b"", "F10Quit")],
        labels=("Tasks:", "Load average:", "Uptime:", "Mem[", "Swp[", "PID USER", "F1Help"),
    ),
    Program(
        "vttest",
        ["vttest"],
        [
            Step(b"", "Enter choice number"),
            Step(b"1\r", "unbroken bor"),  # test 1, cursor movements: the frame of E's and *'s
            # the same at 132 columns, then the autowrap test at 80 and at 132: vttest
            # counts on DECCOLM to clear the screen and home the cursor
            Step(b"\r", "Push <RETURN>", differs=DECCOLM),
            Step(b"\r", "Push <RETURN>", differs=DECCOLM),
            Step(b"\r", "Push <RETURN>", differs=DECCOLM, again=True),
            Step(b"\r", "four identical lines"),
            Step(b"\r", "This is a correct sentence"),
        ],
    ),
]


def stable(read, needle: str, was: list[str] | None = None, timeout: float = 15.0) -> list[str]:
    """Rows once they are no longer ``was``, ``needle`` shows and two reads 0.1 s apart
    agree."""
    deadline = time.monotonic() + timeout
    before = None
    while True:
        now = read()
        if now != was and needle in "\n".join(now) and now == before:
            return now
        assert time.monotonic() < deadline, f"{needle!r} never settled; shows:\n" + "\n".join(now)
        before = now
        time.sleep(0.1)


def compared(screen: list[str], labels: tuple[str, ...] | None) -> list[str] | dict[str, int]:
    """All rows, or where each label sits (its row), for a program whose numbers change."""
    if labels is None:
        return screen
    squeezed = [" ".join(row.replace("[", "[ ").split()).replace("[ ", "[") for row in screen]
    return {label: next((i for i, row in enumerate(squeezed) if label in row), -1) for label in labels}


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.id for p in PROGRAMS])
async def test_program_in_pane_daemon_and_tmux(daemon, tmux, tmp_path, program: Program) -> None:
    if shutil.which(program.argv[0]) is None:
        pytest.fail(f"{program.argv[0]} is not installed (./dev installs it)")
    (tmp_path / "notes.txt").write_text(NOTES)
    (tmp_path / "long.txt").write_text(LONG)
    sid = new_session(daemon, program.argv, cwd=str(tmp_path), **program.env)
    target = tmux.new(program.argv, cwd=str(tmp_path), **program.env)
    app = make_app(daemon, Clock())
    async with app.run_test(size=APP_SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        ours: list[str] | None = None
        theirs: list[str] | None = None
        for n, step in enumerate(program.steps):
            if step.keys:
                send(daemon, sid, step.keys)
                tmux.keys(target, step.keys)
            ours = await asyncio.to_thread(stable, lambda: rows(capture(daemon, sid)), step.needle, ours)
            theirs = await asyncio.to_thread(
                stable, lambda: rows(tmux.capture(target)), step.needle, None if step.again else theirs
            )
            if n == 0:  # attach once the program has drawn: the pane starts from the snapshot
                state = await screen.open_pane(sid, read_only=True)
                pane = screen.pane_widget(state)
                assert pane is not None
            with contextlib.suppress(AssertionError):
                await until(pilot, lambda: pane_rows(pane) == ours, timeout=5)  # noqa: B023
            assert pane_rows(pane) == ours, f"step {n}: the pane is not the daemon's screen"
            if step.differs:
                assert ours != theirs, f"step {n}: the listed difference is gone"
                continue
            assert compared(ours, program.labels) == compared(theirs, program.labels), f"step {n}"
            if program.labels is not None:
                assert -1 not in compared(ours, program.labels).values()  # type: ignore[union-attr]
