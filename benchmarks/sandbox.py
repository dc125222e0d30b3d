"""The sandbox's added latency for `true`, beside running `true` directly.

    python benchmarks/sandbox.py [--n 60]

Target: the sandbox adds <= 20 ms, median, to running `true`. Four ways of
running `/bin/true`, interleaved round by round in one process so the comparison holds
on a noisy machine:

- direct:        asyncio.create_subprocess_exec, wait (the reference)
- bare bwrap:    the same, with the bwrap command line `prepare` builds for a write op
                 in a git repository (protected binds included)
- execute:       the full path: prepare (in a thread: walk, temp root), spawn, pipes,
                 supervision, capture, diagnostics, clean-up
- unrestricted:  execute with no sandbox (environment and temp root only)

and a script run, `sh ./x.sh`, with content pinning (console/sandbox/content_pins.py)
and without: bwrap without the pin mount, bwrap with it (`--ro-bind-data` of a memfd),
and the full execute (which also verifies the content and fills the memfd). The budget:
descriptor-based mounts and run-time hashing add at most 2 ms to `true`;
`verify true` is the run-time check for `true`, which binds no file.
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
from console.sandbox.content_pins import verify_and_pin


def _without_gate(argv: list[str]) -> list[str]:
    """Without the mount check's handshake (`--info-fd R --block-fd W`, console/sandbox/
    verify.py): bare bwrap, descriptor-based binds included; `execute` adds the check."""
    at = argv.index("--info-fd")
    return argv[:at] + argv[at + 4 :]


def _without_data_binds(argv: list[str]) -> list[str]:
    """The same bwrap command line without its `--perms MODE --ro-bind-data FD DEST`."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--perms" and i + 2 < len(argv) and argv[i + 2] == "--ro-bind-data":
            i += 5
            continue
        out.append(argv[i])
        i += 1
    return out


def _rebuilt(argv: list[str], edit: Callable[[list[str]], list[str]]) -> tuple[list[str], tuple[int, ...]]:
    """bwrap's options (read from the memfd `--args` names, console/sandbox/bwrap.py)
    edited, in a memfd of their own: (the command line, the descriptors bwrap reads from
    their offset, to rewind before each run: that memfd, the seccomp filter, the data)."""
    options = edit([a.decode() for a in os.pread(int(argv[2]), 1 << 20, 0).split(b"\0")[:-1]])
    fd = os.memfd_create("bench-args")
    os.write(fd, b"".join(a.encode() + b"\0" for a in options))
    read = [int(options[i + 1]) for i, a in enumerate(options) if a in ("--seccomp", "--ro-bind-data")]
    return [argv[0], "--args", str(fd), *argv[3:]], (fd, *read)


async def spawn(
    argv: list[str],
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
    rewind: tuple[int, ...] = (),
) -> None:
    for fd in rewind:  # bwrap reads a data bind from the descriptor's offset
        os.lseek(fd, 0, os.SEEK_SET)
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, env=env, pass_fds=pass_fds
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
        (ws / "x.sh").write_text("#!/bin/sh\n: script\n")
        script = parse({**wire, "executable": "sh", "args": ["./x.sh"]}, host)
        pinned = prepare(script, cfg, found)
        pin_fds = pinned.pins.fds
        unpinned_argv, unpinned_fds = _rebuilt(pinned.argv, lambda o: _without_gate(_without_data_binds(o)))
        pinned_argv, pinned_fds = _rebuilt(pinned.argv, _without_gate)
        free = parse({**wire, "capabilities": [{"kind": "unrestricted"}]}, host)
        ready = prepare(op, cfg, found)
        bare_argv, bare_fds = _rebuilt(ready.argv, _without_gate)
        bare_env = ready.env

        async def full() -> None:
            result = await execute(op, authorize(op, "bench"), cfg, found)
            if result.exit_code != 0:
                raise SystemExit(f"execute failed: {result.to_dict()}")

        async def script_full() -> None:
            result = await execute(script, authorize(script, "bench"), cfg, found)
            if result.exit_code != 0:
                raise SystemExit(f"script execute failed: {result.to_dict()}")

        async def verify_true() -> None:
            verify_and_pin(op).close()

        async def verify_script() -> None:
            verify_and_pin(script).close()

        async def unrestricted() -> None:
            result = await execute(free, authorize(free, "bench"), cfg, found)
            if result.exit_code != 0:
                raise SystemExit("unrestricted execute failed")

        cases: dict[str, Callable[[], Awaitable[None]]] = {
            "direct": lambda: spawn(["/bin/true"]),
            "bare bwrap": lambda: spawn(bare_argv, bare_env, (*ready.pass_fds, bare_fds[0]), bare_fds),
            "execute": full,
            "unrestricted": unrestricted,
            "verify true": verify_true,
            "script bwrap": lambda: spawn(
                unpinned_argv, pinned.env, (*pinned.pass_fds, unpinned_fds[0]), unpinned_fds
            ),
            "script pinned": lambda: spawn(
                pinned_argv, pinned.env, (*pinned.pass_fds, pinned_fds[0]), (*pin_fds, *pinned_fds)
            ),
            "script execute": script_full,
            "verify script": verify_script,
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
        pinned.close()

    med = {name: statistics.median(t) for name, t in times.items()}
    p90 = {name: statistics.quantiles(t, n=10)[-1] for name, t in times.items()}
    base = med["direct"]
    print(f"{n} runs each, interleaved; milliseconds")
    print(f"{'':14} {'median':>8} {'p90':>8} {'added':>8} {'ratio':>7}")
    for name in (c for c in cases if not c.startswith("verify")):  # those are not runs
        print(f"{name:14} {med[name]:8.2f} {p90[name]:8.2f} {med[name] - base:8.2f} {med[name] / base:6.1f}x")
    added = med["execute"] - base
    print(f"executor's own part (execute - bare bwrap): {med['execute'] - med['bare bwrap']:.2f} ms")
    verdict = "met" if added <= 20 else "missed"
    print(f"target <= 20 ms added, median: execute adds {added:.2f} ms to a direct `true` ({verdict})")
    check = med["verify true"]
    verdict = "met" if check <= 2 else "missed"
    print(f"run-time content check for `true`: {check * 1000:.0f} µs (budget <= 2 ms: {verdict})")
    mount = med["script pinned"] - med["script bwrap"]
    print(
        f"`sh ./x.sh`: the pin mount adds {mount:.2f} ms to bare bwrap; verifying and pinning"
        f" {med['verify script']:.2f} ms; execute with pinning {med['script execute']:.2f} ms"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    asyncio.run(main())
