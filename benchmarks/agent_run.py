"""`agent-console run` start-up beside the bare agent CLI's.

    python benchmarks/agent_run.py [--n 15] [--cli PATH]

Target: `agent-console run -- CLI` starts at most 150 ms later than the bare
CLI, median. Both run `CLI --version` on a real terminal (a PTY), interleaved round by
round against one running daemon; start-up is the time until the terminal shows the
version (the program started and printed), the time until the command exited beside it:

- bare:  the CLI itself;
- run:   `agent-console run -- CLI --version`: the console's CLI starts, asks the daemon
         for a confined session (the sandbox prepared, its mounts checked, the egress
         bridge and the agent socket in place), attaches this terminal and exits with
         the program.

The CLI is Claude Code from scripts/install-claude-code.sh's cache when it is there,
else `--cli` (default /bin/true, which then measures the console's part alone).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ptyprocess import PtyProcess

from console.locations import locate


def claude() -> str | None:
    installer = Path(__file__).resolve().parent.parent / "scripts" / "install-claude-code.sh"
    try:
        r = subprocess.run(["bash", str(installer)], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else None


def timed(argv: list[str], env: dict[str, str], cwd: str, shows: bytes) -> tuple[float, float]:
    """(ms until the terminal shows ``shows``: the program has started and printed, ms
    until the command exited)."""
    start = time.perf_counter()
    proc = PtyProcess.spawn(argv, env=env, cwd=cwd, dimensions=(40, 120))
    out, first = b"", 0.0
    while True:
        try:
            out += proc.read(65536)
        except EOFError:
            break
        if not first and shows in out:
            first = (time.perf_counter() - start) * 1000
    proc.wait()
    took = (time.perf_counter() - start) * 1000
    if proc.exitstatus != 0 or not first:
        raise SystemExit(f"{argv} exited {proc.exitstatus}: {out[-500:]!r}")
    return first, took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=15)
    ap.add_argument("--cli", default="")
    args = ap.parse_args()
    cli = args.cli or claude() or "/bin/true"

    base = Path(tempfile.mkdtemp(prefix="ac-bench-", dir="/tmp"))
    state = base / "s"
    state.mkdir(mode=0o700)
    # The benchmark's own project directory is the workspace, and the only trusted one: the
    # policy refuses a shared parent such as /tmp or /var/tmp as a workspace.
    ws = base / "project"
    ws.mkdir()
    (state / "policy.toml").write_text(f"workspaces = [{json.dumps(str(ws))}]\n")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "console", "daemon", "run", "--state-dir", str(state)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    loc = locate(state)
    env = {**os.environ, "TERM": "xterm-256color", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
    bare = [cli, "--version"]
    run = [sys.executable, "-m", "console", "run", "--state-dir", str(state), "--", cli, "--version"]
    version = subprocess.run(bare, capture_output=True, timeout=60).stdout.strip().splitlines()[0][:20]
    times: dict[str, list[float]] = {"bare": [], "run": []}
    exits: dict[str, list[float]] = {"bare": [], "run": []}
    try:
        deadline = time.monotonic() + 20
        while not loc.operator_socket.exists():
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise SystemExit("the daemon did not start")
            time.sleep(0.05)
        time.sleep(0.5)
        timed(bare, env, str(ws), version)  # warm-up: caches, the daemon's first session
        timed(run, env, str(ws), version)
        for _ in range(args.n):
            for name, argv in (("bare", bare), ("run", run)):
                first, took = timed(argv, env, str(ws), version)
                times[name].append(first)
                exits[name].append(took)
    finally:
        daemon.terminate()
        daemon.wait(20)
        shutil.rmtree(base, ignore_errors=True)

    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (figures scale with load)")
    print(f"{cli} --version, {args.n} runs each, interleaved, on a PTY; milliseconds")
    print(f"{'':6} {'shown, median':>14} {'p90':>8} {'exited, median':>15}")
    for name, values in times.items():
        print(
            f"{name:6} {statistics.median(values):14.1f} {statistics.quantiles(values, n=10)[-1]:8.1f} "
            f"{statistics.median(exits[name]):15.1f}"
        )
    added = statistics.median(times["run"]) - statistics.median(times["bare"])
    verdict = "met" if added <= 150 else "missed"
    ratio = statistics.median(times["run"]) / statistics.median(times["bare"])
    print(
        f"run adds {added:.0f} ms median to the bare CLI's start ({ratio:.2f}x); target <= 150 ms: {verdict}"
    )


if __name__ == "__main__":
    main()
