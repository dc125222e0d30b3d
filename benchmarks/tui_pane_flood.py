"""The flood through a console pane: the `pane` measurement of benchmarks/sessions_flood.py.

    python benchmarks/sessions_flood.py [--mb 20] [--rounds 3]   (prints it beside tmux)
    python benchmarks/tui_pane_flood.py [--mb 20] [--rounds 3]   (the same)

A daemon in its own process runs `bash -c 'read; exec cat FILE'` on a 120x40 PTY; the
console (headless Textual, the real app) attaches it in a pane (read-only, so the pane
does not resize the session). The clock starts when the go-ahead line is written to the
session and stops at the first frame the app paints after the pane has drawn the file's
last line. Everything between is counted: the daemon's PTY read, its own screen and
recording, the attach stream over the socket, the pane's emulator and its paint.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from textual.screen import Screen

sys.path.insert(0, str(Path(__file__).parent))
from sessions_common import Tmux
from tui_common import app_for, daemon

from console.client import AsyncClient, Client
from console.tui.panes.terminal_pane import TerminalPane
from console.tui.screens.sessions import SessionsScreen

COLS, ROWS = 120, 40
MARKER = "END-OF-FLOOD"

_seen: dict[str, float] = {}
_original_paint = TerminalPane._paint
_original_refresh = Screen._compositor_refresh


def _paint(self: TerminalPane) -> None:
    _original_paint(self)
    if "marker" not in _seen and any(MARKER in "".join(c.text for c in row) for row in self._rows):
        _seen["marker"] = time.perf_counter()


def _refresh(self: Screen) -> None:  # type: ignore[type-arg]
    _original_refresh(self)
    if "marker" in _seen and "painted" not in _seen:
        _seen["painted"] = time.perf_counter()


async def _pane(path: Path, tmp: Path) -> tuple[float, int]:
    TerminalPane._paint = _paint  # type: ignore[method-assign]
    Screen._compositor_refresh = _refresh  # type: ignore[method-assign]
    _seen.clear()
    with daemon() as (loc, _ws):
        with Client.connect(loc, role="operator") as c:
            params = {
                "argv": ["bash", "-c", f"read _; exec cat {path}"],
                "cwd": str(tmp),
                "cols": COLS,
                "rows": ROWS,
                "env": {"TERM": "xterm-256color"},
            }
            sid = c.call("sessions.new", params)["session"]["id"]
        app = app_for(loc)
        async with app.run_test(size=(COLS, ROWS + 20)) as pilot:
            await pilot.press("4")
            screen = app.views["sessions"]
            assert isinstance(screen, SessionsScreen)
            while not screen.is_mounted:
                await pilot.pause(0.02)
            state = await screen.open_pane(sid, read_only=True)
            while state.link.state != "live":
                await pilot.pause(0.02)
            await pilot.pause(0.3)
            async with await AsyncClient.connect(loc, role="operator") as go:
                t0 = time.perf_counter()
                await go.call("sessions.input", {"session": sid, "text": "\n"})
                deadline = t0 + 300
                while "painted" not in _seen and time.perf_counter() < deadline:
                    await asyncio.sleep(0.005)
            if "painted" not in _seen:
                raise RuntimeError("the pane never showed the last line")
            return _seen["painted"] - t0, state.link.resyncs


def measure_pane(path: Path, tmp: Path, tmux: Tmux) -> float:
    seconds, resyncs = asyncio.run(_pane(path, tmp))
    if resyncs:
        print(f"  (pane fell behind and was re-sent a snapshot {resyncs} times)", file=sys.stderr)
    return seconds


if __name__ == "__main__":
    from sessions_flood import main

    main()
