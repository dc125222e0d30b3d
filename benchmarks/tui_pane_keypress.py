"""Key press → echo painted in a terminal pane, p50/p99, beside two references.

    python benchmarks/tui_pane_keypress.py [--presses 300]

A daemon in its own process runs bash (readline echoes each key) on a PTY; the console
(headless Textual, the real app) has it attached in a pane. A key event is posted to the
app as its terminal driver would; the clock stops at the first frame the app paints after
the pane has drawn the echo. Measured in the same run, on the same daemon and shell:

  client    the same round trip without the console: an attached client sends the key
            with sessions.input and waits for the echo on its attach stream (the daemon,
            the PTY and bash; no emulator, no paint)
  tmux      `tmux send-keys` then `capture-pane` until the echo shows (each a process
            spawn, so this is tmux's round trip seen from outside, an upper bound)

Target: pane p50 <= 10 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import statistics
import sys
import time
from pathlib import Path

from textual import events
from textual.screen import Screen

sys.path.insert(0, str(Path(__file__).parent))
from sessions_common import Tmux
from tui_common import app_for, daemon, pct

from console.client import AsyncClient, Client
from console.tui.panes.terminal_pane import TerminalPane
from console.tui.screens.sessions import SessionsScreen

ENV = {"TERM": "xterm-256color", "PS1": "$ ", "HISTFILE": "/dev/null"}
LETTERS = "abcdefghijklmnopqrstuvwxyz"

_paints: list[tuple[float, int]] = []  # (time, pane offset painted)
_frames: list[float] = []
_original_paint = TerminalPane._paint
_original_refresh = Screen._compositor_refresh


def _paint(self: TerminalPane) -> None:
    _original_paint(self)
    _paints.append((time.perf_counter(), self.link.offset))


def _refresh(self: Screen) -> None:  # type: ignore[type-arg]
    _original_refresh(self)
    _frames.append(time.perf_counter())


async def wait(predicate, what: str, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"no {what} within {timeout} s")
        await asyncio.sleep(0.0002)


async def pane_presses(loc, sid: str, count: int) -> list[float]:  # type: ignore[no-untyped-def]
    TerminalPane._paint = _paint  # type: ignore[method-assign]
    Screen._compositor_refresh = _refresh  # type: ignore[method-assign]
    app = app_for(loc)
    out: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        screen = app.views["sessions"]
        assert isinstance(screen, SessionsScreen)
        while not screen.is_mounted:
            await pilot.pause(0.02)
        state = await screen.open_pane(sid)
        await wait(lambda: state.link.state == "live", "attach")
        await pilot.pause(0.5)
        for i in range(count):
            if i % 40 == 39:
                app.post_message(events.Key("ctrl+u", "\x15"))  # clear the line now and then
                await asyncio.sleep(0.05)
            letter = LETTERS[i % len(LETTERS)]
            before = state.link.offset
            t0 = time.perf_counter()
            app.post_message(events.Key(letter, letter))
            await wait(lambda before=before: any(o > before for _, o in _paints[-3:]), "echo")
            shown = next(t for t, o in _paints if t >= t0 and o > before)
            await wait(lambda shown=shown: _frames and _frames[-1] >= shown, "frame")
            out.append((next(f for f in _frames if f >= shown) - t0) * 1000)
            await asyncio.sleep(0.01)
    return out


async def client_presses(loc, sid: str, count: int) -> list[float]:  # type: ignore[no-untyped-def]
    got: list[tuple[float, bytes]] = []
    out: list[float] = []
    async with await AsyncClient.connect(loc, role="operator") as client:
        client.on_notification(
            "session.output", lambda n: got.append((time.perf_counter(), base64.b64decode(n.data_base64)))
        )
        await client.call("sessions.attach", {"session": sid})
        for i in range(count):
            if i % 40 == 39:
                await client.call("sessions.input", {"session": sid, "text": "\x15"})
                await asyncio.sleep(0.05)
            letter = LETTERS[i % len(LETTERS)]
            mark = len(got)
            t0 = time.perf_counter()
            await client.call("sessions.input", {"session": sid, "text": letter})
            await wait(
                lambda mark=mark, letter=letter: any(letter.encode() in d for _, d in got[mark:]), "echo"
            )
            out.append((next(t for t, d in got[mark:] if letter.encode() in d) - t0) * 1000)
            await asyncio.sleep(0.01)
    return out


def tmux_presses(count: int) -> list[float]:
    tmux = Tmux()
    tmux.start()
    out: list[float] = []
    try:
        target = tmux.new_pane("env PS1='$ ' bash --norc --noprofile", 120, 40)
        time.sleep(0.5)
        typed = ""
        for i in range(count):
            if i % 40 == 39:
                tmux.cmd("send-keys", "-t", target, "C-u")
                typed = ""
                time.sleep(0.05)
            letter = LETTERS[i % len(LETTERS)]
            typed += letter
            t0 = time.perf_counter()
            tmux.cmd("send-keys", "-t", target, "-l", letter)
            while not tmux.capture(target).rstrip().endswith(typed):
                pass
            out.append((time.perf_counter() - t0) * 1000)
    finally:
        tmux.kill()
    return out


async def run(count: int) -> None:
    with daemon() as (loc, ws):
        with Client.connect(loc, role="operator") as c:
            # In the benchmark's own workspace: a session's working directory is its
            # workspace, and a shared parent such as /tmp is refused as one.
            params = {"argv": ["bash", "--norc", "--noprofile"], "cwd": str(ws), "env": ENV}
            sid = c.call("sessions.new", params)["session"]["id"]
        await asyncio.sleep(0.5)
        pane = await pane_presses(loc, sid, count)
        client = await client_presses(loc, sid, count)
    tmux = tmux_presses(count)
    print(f"key press → echo, {count} presses into bash, p50 / p99 ms")
    for label, values in (
        ("pane (painted)", pane),
        ("client (no paint)", client),
        ("tmux (from outside)", tmux),
    ):
        print(f"  {label:<20} {statistics.median(values):6.2f} / {pct(values, 99):6.2f}")
    p50 = statistics.median(pane)
    print(
        f"  pane p50 - client p50 = {p50 - statistics.median(client):.2f} ms (the console's own share); "
        f"pane/tmux p50 {p50 / statistics.median(tmux):.2f}"
    )
    print(f"  target pane p50 <= 10 ms: {'met' if p50 <= 10 else 'NOT met'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presses", type=int, default=300)
    args = ap.parse_args()
    asyncio.run(run(args.presses))


if __name__ == "__main__":
    main()
