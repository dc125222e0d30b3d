"""Flood: 20 MB of coloured `ls -l`-like lines `cat` through a 120x40 session until
its screen shows the last line, beside tmux and a raw PTY read loop.

    python benchmarks/sessions_flood.py [--mb 20] [--rounds 3]

Measured, interleaved round by round, on the same file and size:
  raw       ptyprocess spawn + a blocking Python read loop to EOF (the floor: no
            emulation, no recording, no event loop)
  console   SessionManager.create(["cat", file]) until the session's Screen shows
            the last line (ring buffer, libghostty-vt screen and asciicast
            recording all fed)
  attached  the same with one client attached, feeding its own Screen from the
            attach stream, until the client's screen shows the last line
  tmux      `tmux new-session -d -x 120 -y 40 "cat file; tmux wait-for -S c"`,
            then capture-pane until it shows the last line
  pane      the console itself (a daemon process, the headless app) with the session
            attached in a terminal pane, until the app paints the last line
            (benchmarks/tui_pane_flood.py)

Target: console / tmux <= 1.0 and pane / tmux <= 1.0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ptyprocess import PtyProcess

sys.path.insert(0, str(Path(__file__).parent))
from sessions_common import Tmux, ls_lines, write_data
from tui_pane_flood import measure_pane

from console.sessions import Output, SessionManager
from console.terminal import Screen

COLS, ROWS = 120, 40
MARKER = "END-OF-FLOOD"


def measure_raw(path: Path, tmp: Path, tmux: Tmux) -> float:
    t0 = time.monotonic()
    proc = PtyProcess.spawn(["cat", str(path)], dimensions=(ROWS, COLS))
    fd = proc.fd
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
    elapsed = time.monotonic() - t0
    proc.close(force=True)
    return elapsed


async def _console(path: Path, tmp: Path, attached: bool) -> float:
    state = Path(tempfile.mkdtemp(dir=tmp))
    manager = SessionManager(state)
    await manager.start()
    try:
        t0 = time.monotonic()
        info = manager.create(
            ["cat", str(path)], cwd=str(tmp), env=dict(os.environ), owner="bench", cols=COLS, rows=ROWS
        )
        if attached:
            att = manager.attach(info.id, "pane")
            client = Screen(att.snapshot.cols, att.snapshot.rows)
            client.feed(att.snapshot.data)
            while MARKER not in client.text():
                ev = await att.get()
                if isinstance(ev, Output):
                    client.feed(ev.data)
                elif hasattr(ev, "data"):  # a fresh snapshot after falling behind
                    client = Screen(ev.cols, ev.rows)  # type: ignore[union-attr]
                    client.feed(ev.data)
        else:
            screen = manager._sessions[info.id].screen()
            while MARKER not in screen.text():
                await asyncio.sleep(0.002)
        return time.monotonic() - t0
    finally:
        await manager.close()


def measure_console(path: Path, tmp: Path, tmux: Tmux) -> float:
    return asyncio.run(_console(path, tmp, attached=False))


def measure_attached(path: Path, tmp: Path, tmux: Tmux) -> float:
    return asyncio.run(_console(path, tmp, attached=True))


def measure_tmux(path: Path, tmp: Path, tmux: Tmux) -> float:
    # `wait-for` returns once cat has written everything; capture-pane is polled
    # only from then on, so polling does not compete with tmux while it drains.
    channel = f"flood-{time.monotonic_ns()}"
    t0 = time.monotonic()
    target = tmux.new_pane(f"cat {path}; tmux wait-for -S {channel}; sleep 100000", COLS, ROWS)
    tmux.cmd("wait-for", channel)
    seen = tmux.wait_for_text(target, MARKER)
    tmux.cmd("kill-session", "-t", target)
    return seen - t0


MEASURES: dict[str, Callable[[Path, Path, Tmux], float]] = {
    "raw": measure_raw,
    "console": measure_console,
    "attached": measure_attached,
    "tmux": measure_tmux,
    "pane": measure_pane,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        path = write_data(tmp, "flood.txt", ls_lines(int(args.mb * 1_000_000)))
        size_mb = path.stat().st_size / 1e6
        tmux = Tmux()
        tmux.start()
        try:
            results: dict[str, list[float]] = {name: [] for name in MEASURES}
            for _ in range(args.rounds):
                for name, fn in MEASURES.items():
                    results[name].append(fn(path, tmp, tmux))
        finally:
            tmux.kill()
    med = {name: statistics.median(v) for name, v in results.items()}
    print(f"flood: {size_mb:.1f} MB of coloured ls -l lines through {COLS}x{ROWS}, median of {args.rounds}")
    for name, secs in med.items():
        extra = "" if name == "tmux" else f"   ratio to tmux {secs / med['tmux']:.2f}"
        print(f"  {name:<9} {secs:7.3f} s  {size_mb / secs:7.1f} MB/s{extra}")
    for name in ("console", "pane"):
        verdict = "PASS" if med[name] <= med["tmux"] else "FAIL"
        print(f"target {name}/tmux <= 1.0: {med[name] / med['tmux']:.2f} {verdict}")


if __name__ == "__main__":
    main()
