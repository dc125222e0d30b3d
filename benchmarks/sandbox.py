"""The sandbox's added latency for `true`, beside running `true` directly.

    python benchmarks/sandbox.py [--n 60]

Target (issue 5): the sandbox adds <= 20 ms, median, to running `true`. Four ways of
running `/bin/true`, interleaved round by round in one process so the comparison holds
on a noisy machine:

- direct:        asyncio.create_subprocess_exec, wait (the reference)
- bare bwrap:    the same, with the bwrap command line `prepare` builds for a write op
                 in a git repository (protected binds included)
- execute:       the full path: prepare (in a thread: walk, temp root), spawn, pipes,
                 supervision, capture, diagnostics, clean-up
- unrestricted:  execute with no sandbox (environment and temp root only)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from console.contract import OSHost, parse
from console.policy import authorize
from console.sandbox import SandboxConfig, execute, prepare, probe


async def spawn(argv: list[str], env: dict[str, str] | None = None) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, env=env
    )
    if await proc.wait() != 0:
        raise SystemExit(f"{argv[0]} failed")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=60)
    n = ap.parse_args().n

    found = await asyncio.to_thread(probe)
    if not found.available:
        raise SystemExit(f"no sandbox: {found.reason}")
    print(f"probe: bubblewrap {found.version}, {found.duration_ms:.0f} ms (run once at daemon start)")
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (figures scale with load)")

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / ".git" / "hooks").mkdir(parents=True)
        (ws / ".git" / "config").write_text("[core]\n")
        (ws / "src").mkdir()
        for i in range(50):
            (ws / "src" / f"m{i}.py").write_text("")
        state = Path(tmp) / "state"
        state.mkdir()
        cfg = SandboxConfig(hidden_paths=(str(state),), temp_base=tmp, inherit_env={"PATH": "/usr/bin:/bin"})
        wire = {
            "kind": "process",
            "executable": "/bin/true",
            "workspace_root": str(ws),
            "workspace_access": "write",
        }
        host = OSHost()
        op = parse(wire, host)
        free = parse({**wire, "capabilities": [{"kind": "unrestricted"}]}, host)
        ready = prepare(op, cfg, found)
        bare_argv, bare_env = ready.argv, ready.env

        async def full() -> None:
            result = await execute(op, authorize(op, "bench"), cfg, found)
            if result.exit_code != 0:
                raise SystemExit(f"execute failed: {result.to_dict()}")

        async def unrestricted() -> None:
            result = await execute(free, authorize(free, "bench"), cfg, found)
            if result.exit_code != 0:
                raise SystemExit("unrestricted execute failed")

        cases: dict[str, Callable[[], Awaitable[None]]] = {
            "direct": lambda: spawn(["/bin/true"]),
            "bare bwrap": lambda: spawn(bare_argv, bare_env),
            "execute": full,
            "unrestricted": unrestricted,
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for case in cases.values():  # warm-up
            await case()
        for _ in range(n):
            for name, case in cases.items():
                start = time.perf_counter()
                await case()
                times[name].append((time.perf_counter() - start) * 1000)
        ready.close()

    med = {name: statistics.median(t) for name, t in times.items()}
    p90 = {name: statistics.quantiles(t, n=10)[-1] for name, t in times.items()}
    base = med["direct"]
    print(f"{n} runs each, interleaved; milliseconds")
    print(f"{'':14} {'median':>8} {'p90':>8} {'added':>8} {'ratio':>7}")
    for name in cases:
        print(f"{name:14} {med[name]:8.2f} {p90[name]:8.2f} {med[name] - base:8.2f} {med[name] / base:6.1f}x")
    added = med["execute"] - base
    print(f"executor's own part (execute - bare bwrap): {med['execute'] - med['bare bwrap']:.2f} ms")
    verdict = "met" if added <= 20 else "missed"
    print(f"target <= 20 ms added, median: execute adds {added:.2f} ms to a direct `true` ({verdict})")
    print(f"load average after: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    asyncio.run(main())
