"""The console's command start-up beside the bare interpreter's.

    python benchmarks/cli_start.py [--n 30] [--python PATH ...]

Every allowed tool call of every supervised agent runs ``agent-console exec --ticket``
after its hook (benchmarks/hook_latency.py times the hook), so the CLI's own start-up is
paid per command as well. Each round runs, in turn:

- ``python -I -c pass``: the reference, the interpreter alone;
- ``python -c 'import console.cli'``: the CLI package alone;
- ``agent-console --version``;
- ``agent-console exec --ticket ID`` with no daemon running: an allowed call's exec, to
  its exit 3 at the connect (all of the start-up a real one pays before it connects);
- ``agent-console pending`` with no daemon running: an operator command, to its exit 3.

Each is its own process, timed exec to exit (wall) and by its CPU time (user + system:
steadier than wall time on a busy machine). ``--python`` (repeatable) times other
interpreters, such as another checkout's venv, in the same rounds: before and after a
change, side by side.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(argv: list[str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one process, exec to exit."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument(
        "--python", action="append", default=[], help="an interpreter to time (repeatable; default: this one)"
    )
    args = ap.parse_args()
    pythons = args.python or [sys.executable]
    base = Path(tempfile.mkdtemp(prefix="ac-bench-"))
    state = str(base / "s")  # no daemon runs here
    commands = {
        (py, name): argv
        for py in pythons
        for name, argv in {
            "python -I -c pass": [py, "-I", "-c", "pass"],
            "import console.cli": [py, "-I", "-c", "import console.cli"],
            "--version": [py, "-I", "-m", "console", "--version"],
            "exec --ticket ID": [
                py,
                "-I",
                "-m",
                "console",
                "exec",
                "--ticket",
                "r-bench-1",
                "--state-dir",
                state,
            ],
            "pending (no daemon)": [py, "-I", "-m", "console", "pending", "--state-dir", state],
        }.items()
    }
    wall: dict[tuple[str, str], list[float]] = {key: [] for key in commands}
    cpu: dict[tuple[str, str], list[float]] = {key: [] for key in commands}
    try:
        for argv in commands.values():  # warm-up: the page cache, the bytecode
            run(argv)
        for _ in range(args.n):
            for key, argv in commands.items():
                w, c = run(argv)
                wall[key].append(w)
                cpu[key].append(c)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (wall figures scale with load)")
    print(f"{args.n} rounds, each command its own process, exec to exit, interleaved; milliseconds")
    for py in pythons:
        print(py)
        print(f"  {'':<22}{'wall':>8}{'p90':>8}{'+ bare':>9}{'CPU':>8}{'+ bare':>9}")
        bare_wall = statistics.median(wall[py, "python -I -c pass"])
        bare_cpu = statistics.median(cpu[py, "python -I -c pass"])
        for (of, name), values in wall.items():
            if of != py:
                continue
            w, c = statistics.median(values), statistics.median(cpu[of, name])
            p90 = sorted(values)[int(0.9 * (len(values) - 1))]
            print(f"  {name:<22}{w:8.1f}{p90:8.1f}{w - bare_wall:9.1f}{c:8.1f}{c - bare_cpu:9.1f}")


if __name__ == "__main__":
    main()
