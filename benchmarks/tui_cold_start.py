"""Cold start of the console to its first paint, against a minimal Textual app and a bare interpreter.

    python benchmarks/tui_cold_start.py [--runs 7] [--pending 50]

Each run is a new process (``python -m``-style, imports included), timed from just
before it is spawned to (a) its first painted frame and (b) the first frame that shows
the daemon's pending queue. A real daemon with ``--pending`` waiting requests serves it.
References, in the same run: a new interpreter that does nothing, and a minimal
Textual app (one Static) to its first frame. Target: <= 1 s to first paint.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

from tui_common import daemon, median

HERE = Path(__file__)


def child_console(state_dir: str, pending: int) -> None:
    """Runs in the measured process: print the clock at the first frame and at the first loaded frame."""
    from textual.screen import Screen

    from console.tui.app import ConsoleApp
    from console.tui.settings.config import Config, Notifications
    from console.tui.settings.prepared import prepare

    original = Screen._compositor_refresh
    marks: dict[str, float] = {}
    app = ConsoleApp(
        prepare(Config(notifications=Notifications(toast=False, bell=False, desktop="off"))),
        state_dir=state_dir,
    )

    def paint(self: Screen) -> None:  # type: ignore[type-arg]
        original(self)
        now = time.perf_counter()
        marks.setdefault("first", now)
        if app.pending.total >= pending and "loaded" not in marks:
            marks["loaded"] = now
            app.exit()

    Screen._compositor_refresh = paint  # type: ignore[method-assign]
    app.run(headless=True)
    print(f"{marks['first']} {marks['loaded']}")


def child_minimal() -> None:
    from textual.app import App
    from textual.screen import Screen
    from textual.widgets import Static

    original = Screen._compositor_refresh

    class Minimal(App[None]):
        def compose(self):  # type: ignore[no-untyped-def]
            yield Static("hello")

    app = Minimal()

    def paint(self: Screen) -> None:  # type: ignore[type-arg]
        original(self)
        print(time.perf_counter())
        app.exit()

    Screen._compositor_refresh = paint  # type: ignore[method-assign]
    app.run(headless=True)


def spawn(*args: str) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(HERE), *args], capture_output=True, text=True, check=True, cwd=HERE.parent.parent
    ).stdout
    marks = [float(x) for x in out.split()]
    return t0, marks


async def seed(loc, ws, n: int) -> subprocess.Popen[bytes]:
    from console.client import AsyncClient

    proc = subprocess.Popen([sys.executable, str(HERE), "--agent", str(loc.state_dir), str(ws), str(n)])
    async with await AsyncClient.connect(loc, role="operator") as c:
        while (await c.call("daemon.status")).get("pending", 0) < n:
            await asyncio.sleep(0.1)
    return proc


async def agent(state_dir: str, ws: str, n: int) -> None:
    from console.client import AsyncClient

    client = await AsyncClient.connect(state_dir, role="agent")
    ops = [
        {
            "kind": "process",
            "executable": "true",
            "workspace_root": ws,
            "network": "any",
            "args": [f"--n={i}"],
        }
        for i in range(n)
    ]
    await asyncio.gather(*(client.submit(op) for op in ops), return_exceptions=True)


def run(runs: int, pending: int) -> None:
    bare, minimal, first, loaded = [], [], [], []
    with daemon() as (loc, ws):
        proc = asyncio.run(seed(loc, ws, pending))
        try:
            for _ in range(runs):
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                bare.append((time.perf_counter() - t0) * 1000)
                t0, marks = spawn("--minimal")
                minimal.append((marks[0] - t0) * 1000)
                t0, marks = spawn("--console", str(loc.state_dir), str(pending))
                first.append((marks[0] - t0) * 1000)
                loaded.append((marks[1] - t0) * 1000)
        finally:
            proc.kill()
            proc.wait()
    print(f"cold start to first paint, {runs} runs, median ms (new process each time)")
    print(f"  reference: python -c pass                    {median(bare):7.1f}")
    print(f"  reference: minimal Textual app, first frame  {median(minimal):7.1f}")
    print(
        f"  console, first frame                         {median(first):7.1f}   "
        f"({median(first) / median(minimal):.2f}x the minimal app)"
    )
    print(f"  console, first frame with {pending} pending shown   {median(loaded):7.1f}")
    print(f"  target <= 1000 ms: {'met' if median(loaded) <= 1000 else 'NOT met'}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--console":
        child_console(sys.argv[2], int(sys.argv[3]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--minimal":
        child_minimal()
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--agent":
        asyncio.run(agent(sys.argv[2], sys.argv[3], int(sys.argv[4])))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--pending", type=int, default=50)
    args = ap.parse_args()
    run(args.runs, args.pending)


if __name__ == "__main__":
    main()
