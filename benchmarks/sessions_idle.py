"""Daemon-side CPU with 20 idle sessions, beside a tmux server with 20 idle panes.

    python benchmarks/sessions_idle.py [--sessions 20] [--seconds 10]

console: a fresh process runs a SessionManager (sampling usage once a second, as
the daemon does) with N idle sessions, half `sleep infinity` and half interactive
shells at their prompt, and measures its own CPU time over the window, as % of one
core. The children's CPU is not counted (it is theirs), nor tmux's children.

tmux: a private server with the same N commands; its CPU over the same window.

Target: console <= 1 % of a core.
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
from sessions_common import Tmux, cpu_seconds

COMMANDS = (["sleep", "infinity"], ["bash", "--norc", "--noprofile", "-i"])


async def _console_worker(n: int, seconds: float) -> dict[str, float]:
    from console.sessions import SessionManager

    with tempfile.TemporaryDirectory() as state:
        manager = SessionManager(Path(state))
        await manager.start()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": state, "PS1": "$ "}
        for i in range(n):
            manager.create(COMMANDS[i % 2], cwd=state, env=env, owner="bench", cols=120, rows=40)
        await asyncio.sleep(3.0)  # let shells print their prompt and go quiet
        pid = os.getpid()
        c0, t0 = cpu_seconds(pid), time.monotonic()
        await asyncio.sleep(seconds)
        c1, t1 = cpu_seconds(pid), time.monotonic()
        samples = sum(1 for s in manager.infos() if manager.stats(s.id).sampled_at > 0)
        await manager.close(grace_s=0.5)
        return {"cpu_percent": 100 * (c1 - c0) / (t1 - t0), "sampled": samples}


def measure_console(n: int, seconds: float) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", "--sessions", str(n), "--seconds", str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def measure_tmux(n: int, seconds: float) -> dict[str, float]:
    tmux = Tmux()
    server = tmux.start()
    try:
        for i in range(n):
            tmux.new_pane(" ".join(COMMANDS[i % 2]), 120, 40)
        time.sleep(3.0)
        c0, t0 = cpu_seconds(server), time.monotonic()
        time.sleep(seconds)
        c1, t1 = cpu_seconds(server), time.monotonic()
        return {"cpu_percent": 100 * (c1 - c0) / (t1 - t0)}
    finally:
        tmux.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(_console_worker(args.sessions, args.seconds))))
        return
    ours = measure_console(args.sessions, args.seconds)
    theirs = measure_tmux(args.sessions, args.seconds)
    print(f"idle CPU with {args.sessions} idle sessions over {args.seconds:.0f} s (% of one core)")
    print(f"  console {ours['cpu_percent']:6.2f} %  (usage sampled for {int(ours['sampled'])} sessions)")
    print(f"  tmux    {theirs['cpu_percent']:6.2f} %")
    verdict = "PASS" if ours["cpu_percent"] <= 1.0 else "FAIL"
    print(f"target console <= 1 %: {verdict}")


if __name__ == "__main__":
    main()
