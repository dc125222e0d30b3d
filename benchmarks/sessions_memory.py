"""Memory per session holding 10,000 lines of 200-column scrollback, beside tmux.

    python benchmarks/sessions_memory.py [--sessions 5] [--lines 10000]

console: a fresh process runs a SessionManager; after one warm-up session (so code
and libraries are loaded) it starts N sessions at 200x40, each running
`sh -c 'cat FILE; exec sleep ...'` on the same file of 10,040 coloured 200-column
lines, waits until every screen shows the last line and its scrollback is packed
(the manager's once-a-second housekeeping), and reports (RSS after - before) / N.
Everything a live session holds is included: screen, ring buffer (1 MiB),
recording buffer, PTY. The children's memory is theirs, for tmux too.

tmux: a private server with history-limit 10000; N sessions at 200x40 run the
same command; (server RSS after - before) / N once every pane's history is full (tmux
then keeps 90-100 % of the limit; the console keeps a little over it).

Target: console below tmux.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from sessions_common import Tmux, rss, wide_lines, write_data

COLS, ROWS = 200, 40


async def _console_worker(path: Path, n: int, lines: int) -> dict[str, float]:
    from console.sessions import SessionManager

    with tempfile.TemporaryDirectory() as state:
        manager = SessionManager(Path(state), scrollback_lines=lines)
        await manager.start()
        env = dict(os.environ)

        last = f"{lines + ROWS - 1:08d}"
        command = ["sh", "-c", f"cat {path}; exec sleep 1000000"]

        async def run(count: int) -> list[str]:
            ids = [
                manager.create(command, cwd="/", env=env, owner="b", cols=COLS, rows=ROWS).id
                for _ in range(count)
            ]
            deadline = time.monotonic() + 120
            while not all(last in manager.screen_text(sid) for sid in ids):
                if time.monotonic() > deadline:
                    raise TimeoutError("sessions never showed their last line")
                await asyncio.sleep(0.05)
            # Wait for the housekeeping task to pack each idle scrollback.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if all(manager._sessions[sid].screen().compress(0) for sid in ids):
                    break
                await asyncio.sleep(0.2)
            return ids

        await run(1)
        before = rss(os.getpid())
        ids = await run(n)
        after = rss(os.getpid())
        screen = manager._sessions[ids[0]].screen()
        result = {
            "per_session": (after - before) / n,
            "scrollback_rows": screen.scrollback_rows,
        }
        await manager.close()
        return result


def measure_console(path: Path, n: int, lines: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", str(path), "--sessions", str(n), "--lines", str(lines)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def measure_tmux(path: Path, n: int, lines: int) -> dict[str, float]:
    tmux = Tmux(history_limit=lines)
    server = tmux.start()
    try:
        warm = tmux.new_pane(f"cat {path}; sleep 100000", COLS, ROWS)
        _wait_history(tmux, [warm], lines)
        before = rss(server)
        targets = [tmux.new_pane(f"cat {path}; sleep 100000", COLS, ROWS) for _ in range(n)]
        _wait_history(tmux, targets, lines)
        time.sleep(1.0)
        after = rss(server)
        history = int(tmux.cmd("display-message", "-p", "-t", targets[0], "#{history_size}").strip())
        return {"per_session": (after - before) / n, "scrollback_rows": history}
    finally:
        tmux.kill()


def _wait_history(tmux: Tmux, targets: list[str], lines: int) -> None:
    # tmux drops the oldest tenth of the history when it reaches the limit, so a
    # full pane holds between 90 and 100 % of it.
    deadline = time.monotonic() + 120
    for target in targets:
        while (
            int(tmux.cmd("display-message", "-p", "-t", target, "#{history_size}").strip() or 0) < 0.9 * lines
        ):
            if time.monotonic() > deadline:
                raise TimeoutError("tmux history never filled")
            time.sleep(0.1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=5)
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(_console_worker(args.worker, args.sessions, args.lines))))
        return
    with tempfile.TemporaryDirectory() as d:
        path = write_data(Path(d), "wide.txt", wide_lines(args.lines + ROWS, COLS))
        ours = measure_console(path, args.sessions, args.lines)
        theirs = measure_tmux(path, args.sessions, args.lines)
    mb = 1024 * 1024
    print(
        f"memory per session, {args.lines} lines of {COLS}-column scrollback, {args.sessions} sessions each"
    )
    print(f"  console {ours['per_session'] / mb:7.2f} MiB  ({int(ours['scrollback_rows'])} rows kept)")
    print(f"  tmux    {theirs['per_session'] / mb:7.2f} MiB  ({int(theirs['scrollback_rows'])} rows kept)")
    ratio = ours["per_session"] / theirs["per_session"]
    print(f"target console/tmux < 1.0: {ratio:.2f} {'PASS' if ratio < 1.0 else 'FAIL'}")


if __name__ == "__main__":
    main()
