"""Decision round trips through the real daemon, beside a bare asyncio echo of the same frames.

    python benchmarks/daemon.py [--seconds 5] [--pending 10000]

1. Requests that a standing grant settles (durable decision, group commit), at 1, 10
   and 50 concurrent clients, closed loop: p50/p99 and throughput. The floor is a bare
   asyncio Unix-socket echo server answering the same frames, driven by the same client
   code in the same run.
2. The same at a fixed offered load of 1,000 requests/s (open loop, 50 clients):
   targets p50 <= 1 ms, p99 <= 5 ms.
3. 10,000 requests pending at once: submit, list and decide, with the per-request cost
   of the first and the last thousand side by side (it must not grow with the queue).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from console.client import AsyncClient
from console.client.spawn import running_pid
from console.locations import locate
from console.protocol import jsonrpc

ECHO_SERVER = r"""
import asyncio, os, sys
async def handle(r, w):
    try:
        while True:
            line = await r.readuntil(b"\n")
            w.write(line)
    except Exception:
        pass
async def main():
    server = await asyncio.start_unix_server(handle, sys.argv[1], limit=4 << 20)
    print("ready", flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))] * 1000


class RawConn:
    """A minimal pipelining JSON-line client, identical for the daemon and the echo floor."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.r, self.w = reader, writer

    @classmethod
    async def open(cls, path: str) -> RawConn:
        r, w = await asyncio.open_unix_connection(path, limit=4 << 20)
        return cls(r, w)

    async def roundtrip(self, frame: bytes) -> bytes:
        self.w.write(frame)
        return await self.r.readuntil(b"\n")

    def close(self) -> None:
        self.w.close()


async def closed_loop(
    paths: list[str], frame: bytes, clients: int, seconds: float
) -> tuple[list[float], float]:
    conns = [await RawConn.open(paths[i % len(paths)]) for i in range(clients)]
    latencies: list[float] = []
    stop = time.perf_counter() + seconds

    async def run(c: RawConn) -> None:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            await c.roundtrip(frame)
            latencies.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(run(c) for c in conns))
    elapsed = time.perf_counter() - t0
    for c in conns:
        c.close()
    return latencies, len(latencies) / elapsed


async def open_loop(
    path: str, frame: bytes, rate: float, seconds: float, clients: int = 50
) -> tuple[list[float], float]:
    conns = [await RawConn.open(path) for _ in range(clients)]
    free: asyncio.Queue[RawConn] = asyncio.Queue()
    for c in conns:
        free.put_nowait(c)
    latencies: list[float] = []
    tasks = []

    async def one(scheduled: float) -> None:
        c = await free.get()
        await c.roundtrip(frame)
        latencies.append(time.perf_counter() - scheduled)  # includes any queueing: honest open loop
        free.put_nowait(c)

    start = time.perf_counter()
    n = int(rate * seconds)
    for i in range(n):
        at = start + i / rate
        delay = at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(at)))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    for c in conns:
        c.close()
    return latencies, n / elapsed


def report(name: str, lat: list[float], tput: float) -> None:
    print(f"  {name:34} p50 {pct(lat, 0.5):7.3f} ms   p99 {pct(lat, 0.99):7.3f} ms   {tput:9,.0f} req/s")


async def pending_phase(loc, ws: Path, n: int) -> None:
    op = await AsyncClient.connect(loc, role="operator")
    agents = [await AsyncClient.connect(loc, role="agent") for _ in range(max(1, n // 900))]
    print(f"\n{n:,} requests pending at once")

    events: asyncio.Queue[str] = asyncio.Queue()
    await op.subscribe(["pending"])

    async def collect() -> None:
        async for e in op.events():
            events.put_nowait(e["request"]["request_id"])

    collector = asyncio.create_task(collect())
    answers = []
    submit_times = []
    for i in range(n):
        a = agents[i % len(agents)]
        t0 = time.perf_counter()
        answers.append(
            asyncio.create_task(
                a.submit(
                    {
                        "kind": "process",
                        "executable": "true",
                        "args": [f"p{i}"],
                        "workspace_root": str(ws),
                        "network": "any",
                    },
                    timeout_s=600,
                )
            )
        )
        await events.get()  # the request is in the queue (and the operator was told)
        submit_times.append(time.perf_counter() - t0)
    k = n // 10
    print(
        f"  submit -> pending event, first {k:,}: median {statistics.median(submit_times[:k]) * 1e3:.3f} ms"
        f"   last {k:,}: median {statistics.median(submit_times[-k:]) * 1e3:.3f} ms"
    )
    t0 = time.perf_counter()
    listed = await op.call("pending.list")
    t_list = time.perf_counter() - t0
    print(
        f"  pending.list of {listed['count']:,}: {t_list * 1e3:.1f} ms ({t_list / listed['count'] * 1e6:.1f} us per item)"
    )
    ids = [p["request_id"] for p in listed["pending"]]
    decide_times = []
    for rid in ids:
        t0 = time.perf_counter()
        await op.call("decide", {"target": rid, "action": "deny"})
        decide_times.append(time.perf_counter() - t0)
    print(
        f"  decide (durable), first {k:,}: median {statistics.median(decide_times[:k]) * 1e3:.3f} ms"
        f"   last {k:,}: median {statistics.median(decide_times[-k:]) * 1e3:.3f} ms"
    )
    await asyncio.gather(*answers)
    collector.cancel()
    for c in [op, *agents]:
        await c.close()


async def main_async(args: argparse.Namespace) -> None:
    base = Path(tempfile.mkdtemp(prefix="acb-", dir="/tmp"))
    ws = base / "ws"
    ws.mkdir()
    loc = locate(base / "s")
    argv = [
        sys.executable,
        "-m",
        "console",
        "daemon",
        "run",
        "--state-dir",
        str(loc.state_dir),
        "--log-level",
        "warning",
    ]
    with open(base / "daemon.log", "wb") as log:
        daemon = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
    echo_path = str(base / "echo.sock")
    echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, echo_path], stdout=subprocess.PIPE)
    try:
        assert echo.stdout is not None
        echo.stdout.readline()
        deadline = time.monotonic() + 30
        while running_pid(loc) != daemon.pid:
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the daemon did not start; see {base / 'daemon.log'}")
            await asyncio.sleep(0.05)

        operation = {
            "kind": "process",
            "executable": "true",
            "args": ["bench"],
            "workspace_root": str(ws),
            "network": "any",
        }
        async with await AsyncClient.connect(loc, role="agent") as agent:
            fp = (await agent.submit(operation, timeout_s=0.05))["fingerprint"]
        async with await AsyncClient.connect(loc, role="operator") as op:
            await op.call("grants.add", {"fingerprint": fp, "scope": "always"})
        frame = jsonrpc.encode(jsonrpc.request(1, "operation.submit", {"operation": operation}))
        async with await AsyncClient.connect(loc, role="agent") as agent:
            check = await agent.submit(operation)
            assert check["reason"] == "grant_always", check

        print(
            f"frame {len(frame)} bytes; each daemon answer is a decision committed to SQLite first (group commit)"
        )
        print(f"cpu cores: {os.cpu_count()}")
        for clients in (1, 10, 50):
            print(f"\n{clients} concurrent client(s), closed loop, {args.seconds:.0f} s each")
            lat, tput = await closed_loop([echo_path], frame, clients, args.seconds)
            report("floor: bare asyncio echo", lat, tput)
            lat, tput = await closed_loop([str(loc.agent_socket)], frame, clients, args.seconds)
            report("daemon: grant-settled decision", lat, tput)

        print("\nfixed offered load 1,000 req/s, 50 clients (open loop)")
        lat, tput = await open_loop(echo_path, frame, 1000, args.seconds)
        report("floor: bare asyncio echo", lat, tput)
        lat, tput = await open_loop(str(loc.agent_socket), frame, 1000, args.seconds)
        report("daemon: grant-settled decision", lat, tput)
        ok = pct(lat, 0.5) <= 1 and pct(lat, 0.99) <= 5
        print(f"  target p50 <= 1 ms and p99 <= 5 ms at 1,000 req/s: {'met' if ok else 'missed'}")

        await pending_phase(loc, ws, args.pending)
    finally:
        daemon.terminate()
        daemon.wait(30)
        echo.terminate()
        echo.wait(5)
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--pending", type=int, default=10_000)
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
