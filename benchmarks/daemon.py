"""Decision round trips through the real daemon, beside a bare asyncio echo of the same frames.

    python benchmarks/daemon.py [--seconds 5] [--pending 10000] [--only grant|abuse]

1. Requests that a standing grant settles (durable decision, group commit), at 1, 10
   and 50 concurrent clients, closed loop: p50/p99 and throughput. The floor is a bare
   asyncio Unix-socket echo server answering the same frames, driven by the same client
   code in the same run.
2. The same at a fixed offered load of 1,000 requests/s (open loop, 50 clients):
   targets p50 <= 1 ms, p99 <= 5 ms. Latency counts from when each request was due. The
   driver runs on a select(2) event loop, whose timeouts are in microseconds: asyncio's
   default epoll loop rounds every timeout up to a whole millisecond, which sent each
   request up to 1 ms late and put about 0.65 ms into both rows' p50. Each row also says
   the same counted from when the request was sent, which leaves out what lateness is
   left (not the daemon's queueing: the sends do not wait for answers). Beside them, the
   echo server's CPU time per answer at this load and closed-loop: on a virtual machine
   whose idle cores sleep, the same work costs several times more when requests come
   one at a time, and that ratio says how much of the daemon's figure is this machine's.
3. 10,000 requests pending at once: submit, list and decide, with the per-request cost
   of the first and the last thousand side by side (it must not grow with the queue).
4. Abuse, on a fresh daemon: the quota cases at once (40 connections holding 4 MiB
   partial frames, a subscriber that stops reading while 24 agents queue 2 MiB requests,
   1 MiB justifications, history-filling agents, huge history pages, ``request.get ""``,
   and 40 connections of one identity pipelining oversized requests), while a separate
   process lists the pending queue as an operator (every 20th call on a fresh connection):
   the daemon's peak RSS (target under 150 MiB), the operator's pending.list p99 (target
   at most 50 ms) and the operator connections dropped (target none), beside the same
   with no abuse, and how long the daemon's loop waited for a CPU meanwhile (what of the
   figure is the machine's). ``--cases identity`` runs one case. Then ``watch.add /usr``
   and ``watch.remove /usr``: inotify watches before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import contextlib

from console.client import AsyncClient
from console.client.spawn import running_pid
from console.locations import locate
from console.protocol import jsonrpc
from console.protocol.events import PendingAdded

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
) -> tuple[list[float], list[float], float]:
    """Latencies counted from when each request was due, and from when it was sent."""
    conns = [await RawConn.open(path) for _ in range(clients)]
    free: asyncio.Queue[RawConn] = asyncio.Queue()
    for c in conns:
        free.put_nowait(c)
    latencies: list[float] = []
    from_send: list[float] = []
    tasks = []

    async def one(scheduled: float) -> None:
        c = await free.get()
        sent = time.perf_counter()
        await c.roundtrip(frame)
        done = time.perf_counter()
        latencies.append(done - scheduled)  # includes any queueing: honest open loop
        from_send.append(done - sent)
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
    return latencies, from_send, n / elapsed


def sent_line(lat: list[float]) -> None:
    print(
        f"  {'  the same, from when it was sent':34} p50 {pct(lat, 0.5):7.3f} ms   p99 {pct(lat, 0.99):7.3f} ms"
    )


def report(
    name: str,
    lat: list[float],
    tput: float,
    cpu_s: tuple[float, float] | None = None,
    client_s: float | None = None,
) -> None:
    # The server's own CPU time per answer (user + system; all its threads, and its event
    # loop's thread): steadier than the rates on a shared machine, where other work takes
    # turns on the cores. The client's (this process) shares those cores.
    cpu = ""
    if cpu_s is not None and lat:
        cpu = f"   server CPU {cpu_s[0] / len(lat) * 1e6:5.0f} us/req (loop {cpu_s[1] / len(lat) * 1e6:4.0f})"
    if client_s is not None and lat:
        cpu += f"{',' if cpu else '  '} client CPU {client_s / len(lat) * 1e6:4.0f} us/req"
    print(f"  {name:34} p50 {pct(lat, 0.5):7.3f} ms   p99 {pct(lat, 0.99):7.3f} ms   {tput:9,.0f} req/s{cpu}")


def _ticks(path: str) -> float:
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User plus system CPU time so far of a process (all threads), and of its main thread
    alone: the event loop's, which bounds the throughput (one loop, one GIL)."""
    return _ticks(f"/proc/{pid}/stat"), _ticks(f"/proc/{pid}/task/{pid}/stat")


def cpu_since(pid: int, start: tuple[float, float]) -> tuple[float, float]:
    now = cpu_seconds(pid)
    return now[0] - start[0], now[1] - start[1]


COMMIT_FLOOR = r"""
import json, sqlite3, sys, time
# One-row transactions as the daemon's history commits them (WAL, synchronous=FULL), one
# after another: a durable answer cannot come sooner than one of these.
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("PRAGMA synchronous = FULL")
conn.execute("CREATE TABLE t (x TEXT)")
lat = []
stop = time.monotonic() + float(sys.argv[2])
while time.monotonic() < stop:
    t0 = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO t VALUES (?)", ("x" * 600,))
    conn.execute("COMMIT")
    lat.append(time.perf_counter() - t0)
print(json.dumps(lat))
"""


def commit_floor(path: Path, seconds: float) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", COMMIT_FLOOR, str(path), str(seconds)], capture_output=True, check=True
    ).stdout
    return json.loads(out)


async def pending_phase(loc, ws: Path, n: int) -> None:
    op = await AsyncClient.connect(loc, role="operator")
    # An agent identity may have 64 requests waiting; each connection here is one agent.
    agents = [await AsyncClient.connect(loc, role="agent") for _ in range(max(1, -(-n // 60)))]
    print(f"\n{n:,} requests pending at once")

    events: asyncio.Queue[str] = asyncio.Queue()
    await op.subscribe(["pending"])

    async def collect() -> None:
        async for e in op.events():
            if isinstance(e, PendingAdded):
                events.put_nowait(e.request.request_id)

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


PROBE = r"""
import json, socket, sys, time
# Raw frames, read to the newline and not decoded: the time is the daemon's, not this
# process's JSON parser's (a 200-item page is ~400 KB). Every 20th call comes on a fresh
# connection (connect, hello, pending.list), timed whole: an operator who opens the
# console during the abuse must get in as fast. A connection the daemon drops (reset,
# closed, an error answer) is counted.
path, token, seconds = sys.argv[1], open(sys.argv[2]).read().strip(), float(sys.argv[3])
def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s
def call(s, i, method, params):
    s.sendall(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode() + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(1 << 20)
        if not chunk:
            raise ConnectionResetError("closed by the daemon")
        data += chunk
    if b'"error"' in data[:200]:
        raise ConnectionResetError(data[:200].decode(errors="replace"))
    return data
s = connect()
call(s, 0, "hello", {"token": token})
lat, dropped = [], 0
stop = time.monotonic() + seconds
i = 1
while time.monotonic() < stop:
    t0 = time.perf_counter()
    try:
        if i % 20 == 0:
            s.close()
            s = connect()
            call(s, i, "hello", {"token": token})
        call(s, i, "pending.list", {})
    except OSError:
        dropped += 1
        s.close()
        s = connect()
        call(s, i, "hello", {"token": token})
        continue
    lat.append(time.perf_counter() - t0)
    i += 1
    time.sleep(0.005)
print(json.dumps({"lat": lat, "dropped": dropped}))
"""


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def schedstat(pid: int) -> tuple[float, float]:
    """(seconds run, seconds waited runnable for a CPU) of the daemon's event-loop thread:
    how much of a latency is the machine's (other processes, other helpers' work) and not
    the daemon's."""
    try:
        ran, waited, _ = Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()
    except (OSError, ValueError):
        return 0.0, 0.0
    return int(ran) / 1e9, int(waited) / 1e9


def inotify_watches(pid: int) -> int:
    """inotify watches the process holds (the `inotify wd:` lines of its fds' fdinfo)."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        with contextlib.suppress(OSError):
            n += Path(f"/proc/{pid}/fdinfo/{fd}").read_text().count("inotify wd:")
    return n


async def probe(loc, seconds: float) -> tuple[list[float], int]:
    """pending.list latencies seen by a separate process (so our own load does not count),
    and how many of its connections the daemon dropped."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        PROBE,
        str(loc.operator_socket),
        str(loc.token),
        str(seconds),
        stdout=subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    found = json.loads(out)
    return found["lat"], found["dropped"]


ABUSE_CASES = ("partial", "subscriber", "big", "history", "identity")
IDENTITY_CONNECTIONS = 40


async def abuse_phase(loc, ws: Path, pid: int, seconds: float, cases: tuple[str, ...] = ABUSE_CASES) -> None:
    MiB = 1 << 20
    print("\nabuse (the quota cases, all at once)")
    # A queue of ordinary requests for pending.list to list, as in a busy session.
    agents = [await AsyncClient.connect(loc, role="agent") for _ in range(4)]
    waiting = [
        asyncio.create_task(
            agents[i % 4].submit(
                {
                    "kind": "process",
                    "executable": "true",
                    "args": [f"q{i}"],
                    "workspace_root": str(ws),
                    "network": "any",
                },
                timeout_s=600,
            )
        )
        for i in range(200)
    ]
    async with await AsyncClient.connect(loc, role="operator") as op:
        while (await op.call("pending.list", {"limit": 1}))["count"] < 200:
            await asyncio.sleep(0.05)
    quiet, quiet_dropped = await probe(loc, max(3.0, seconds))
    base_rss = rss_mib(pid)
    peak = [base_rss]
    refused: dict[str, int] = {}
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_mib(pid))
            await asyncio.sleep(0.02)

    def hello(msg_id: int, method: str, params: dict | None = None) -> bytes:
        return jsonrpc.encode(jsonrpc.request(msg_id, method, params or {}))

    async def partial_holder() -> None:
        try:
            r, w = await asyncio.open_unix_connection(str(loc.agent_socket), limit=4 << 20)
            w.write(hello(1, "hello"))
            await r.readuntil(b"\n")
            w.write(
                b'{"jsonrpc":"2.0","id":2,"method":"daemon.status","params":{"x":"' + b"y" * (4 * MiB - 100)
            )
            await w.drain()
            line = await asyncio.wait_for(r.readuntil(b"\n"), 30)
            quota = json.loads(line)["error"]["data"]["quota"]
            refused[quota] = refused.get(quota, 0) + 1
            w.close()
        except (OSError, asyncio.IncompleteReadError, TimeoutError, KeyError, ValueError):
            pass

    async def stuck_subscriber() -> None:
        _r, w = await asyncio.open_unix_connection(str(loc.operator_socket))
        w.write(
            hello(1, "hello", {"token": loc.token.read_text().strip()})
            + hello(2, "subscribe", {"topics": ["pending"]})
        )
        await stop.wait()  # never reads
        w.close()

    async def big_requests() -> None:
        big = {"kind": "process", "executable": "true", "workspace_root": str(ws), "network": "any"}
        clients = [await AsyncClient.connect(loc, role="agent") for _ in range(24)]
        tasks = [
            asyncio.create_task(
                c.submit({**big, "args": ["p" * (500 * 1024), "q" * (500 * 1024), str(i)]}, timeout_s=20)
            )
            for i, c in enumerate(clients)
        ]
        await asyncio.gather(*tasks, return_exceptions=True)
        for c in clients:
            await c.close()

    async def history_fillers() -> None:
        async with await AsyncClient.connect(loc, role="agent") as a:
            for _ in range(30):
                try:
                    await a.submit(
                        {
                            "kind": "process",
                            "executable": "true",
                            "workspace_root": str(ws),
                            "justification": "j" * MiB,
                        }
                    )
                except Exception as exc:
                    q = getattr(exc, "data", {}) or {}
                    refused[q.get("quota", "?")] = refused.get(q.get("quota", "?"), 0) + 1
            for i in range(40):
                try:
                    await a.submit(
                        {
                            "kind": "process",
                            "executable": "true",
                            "workspace_root": str(ws),
                            "args": ["h" * (500 * 1024), "k" * (500 * 1024), str(i)],
                        }
                    )
                except Exception as exc:
                    q = getattr(exc, "data", {}) or {}
                    refused[q.get("quota", "?")] = refused.get(q.get("quota", "?"), 0) + 1
                    break
        async with await AsyncClient.connect(loc, role="operator") as op:
            for _ in range(5):
                await op.call("history.query", {"kinds": ["request"], "limit": 5000})
            try:
                await op.call("request.get", {"request_id": ""})
            except Exception as exc:
                refused["invalid request_id"] = refused.get("invalid request_id", 0) + (
                    getattr(exc, "code", 0) == -32602
                )

    async def one_identity() -> None:
        """Forty connections of one agent identity, each pipelining oversized requests (1 MiB
        justifications, command lines over 1 MiB) as fast as the socket takes them, and
        reading the refusals as they come: a hostile agent does not wait for its answers."""
        first = await AsyncClient.connect(loc, role="agent")
        ident = first.hello["agent"]
        await first.close()
        why = {"kind": "process", "executable": "true", "workspace_root": str(ws), "justification": "j" * MiB}
        cmd = {
            "kind": "process",
            "executable": "true",
            "workspace_root": str(ws),
            "args": ["c" * (1100 * 1024)],
        }
        frames = [hello(i, "operation.submit", {"operation": op}) for i, op in enumerate((why, cmd), start=2)]

        async def connection(n: int) -> None:
            while not stop.is_set():
                try:
                    r, w = await asyncio.open_unix_connection(str(loc.agent_socket), limit=8 << 20)
                    w.write(hello(1, "hello", {"agent_id": ident["id"], "agent_secret": ident["secret"]}))
                    line = json.loads(await r.readuntil(b"\n"))
                    if "error" in line:
                        quota = (line["error"].get("data") or {}).get("quota", "hello refused")
                        refused[quota] = refused.get(quota, 0) + 1
                        w.close()
                        await asyncio.sleep(0.2)
                        continue

                    async def drain(r: asyncio.StreamReader) -> None:
                        with contextlib.suppress(OSError, ValueError, asyncio.LimitOverrunError):
                            while line := await r.readline():
                                quota = ((json.loads(line).get("error") or {}).get("data") or {}).get("quota")
                                if quota:
                                    refused[quota] = refused.get(quota, 0) + 1

                    reader = asyncio.create_task(drain(r))
                    while not stop.is_set() and not reader.done():
                        w.write(frames[n % 2])
                        await w.drain()
                    reader.cancel()
                    w.close()
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    await asyncio.sleep(0.05)

        await asyncio.gather(*(connection(n) for n in range(IDENTITY_CONNECTIONS)), return_exceptions=True)

    sampler = asyncio.create_task(sample())
    abuse = [asyncio.create_task(partial_holder()) for _ in range(40 if "partial" in cases else 0)]
    abuse += [asyncio.create_task(stuck_subscriber())] if "subscriber" in cases else []
    abuse += [asyncio.create_task(big_requests())] if "big" in cases else []
    abuse += [asyncio.create_task(history_fillers())] if "history" in cases else []
    abuse += [asyncio.create_task(one_identity())] if "identity" in cases else []
    sched0, load0 = schedstat(pid), os.getloadavg()[0]
    loud, loud_dropped = await probe(loc, max(5.0, seconds))
    sched1, load1 = schedstat(pid), os.getloadavg()[0]
    stop.set()
    await asyncio.gather(*abuse, return_exceptions=True)
    stop.set()
    await sampler
    async with await AsyncClient.connect(loc, role="operator") as op:
        while page := (await op.call("pending.list"))["pending"]:
            for item in page:
                await op.call("decide", {"target": item["request_id"], "action": "deny"})
    await asyncio.gather(*waiting, return_exceptions=True)
    for a in agents:
        await a.close()
    print(f"  refused, by quota: {json.dumps(dict(sorted(refused.items())))}")
    print(
        f"  daemon RSS: {base_rss:.0f} MiB before, peak {peak[0]:.0f} MiB during (target under 150 MiB): "
        f"{'met' if peak[0] < 150 else 'missed'}"
    )
    print(
        f"  operator pending.list (200 pending), no abuse:  p50 {pct(quiet, 0.5):6.2f} ms  "
        f"p99 {pct(quiet, 0.99):6.2f} ms  ({len(quiet)} calls, {quiet_dropped} connections dropped)"
    )
    print(
        f"  operator pending.list (200 pending), abuse:     p50 {pct(loud, 0.5):6.2f} ms  "
        f"p99 {pct(loud, 0.99):6.2f} ms  ({len(loud)} calls, {loud_dropped} connections dropped)"
    )
    print(
        f"  the daemon's loop thread meanwhile: ran {sched1[0] - sched0[0]:.2f} s, waited for a CPU "
        f"{sched1[1] - sched0[1]:.2f} s; load average {load0:.1f} -> {load1:.1f} on {os.cpu_count()} cores"
    )
    met = pct(loud, 0.99) <= 50 and loud_dropped == 0
    print(f"  target p99 at most 50 ms and no operator connection dropped: {'met' if met else 'missed'}")
    if Path("/usr").is_dir():
        async with await AsyncClient.connect(loc, role="operator") as op:
            before = inotify_watches(pid)
            t0 = time.perf_counter()
            await op.call("watch.add", {"workspace_root": "/usr"})
            added = inotify_watches(pid)
            await op.call("watch.remove", {"workspace_root": "/usr"})
            print(
                f"  watch.add /usr: inotify watches {before} -> {added} ({time.perf_counter() - t0:.1f} s); "
                f"after watch.remove /usr: {inotify_watches(pid)}"
            )


async def main_async(args: argparse.Namespace) -> None:
    base = Path(tempfile.mkdtemp(prefix="acb-", dir="/tmp"))
    ws = base / "ws"
    ws.mkdir()
    loc = locate(base / "s")
    loc.state_dir.mkdir(mode=0o700)
    loc.policy.write_text(f"workspaces = [{json.dumps(str(ws))}]\n")  # the benchmark's workspace is trusted
    # --profile: the daemon runs under cProfile (its event loop thread), written at exit.
    profile = ["-m", "cProfile", "-o", args.profile] if args.profile else []
    argv = [
        sys.executable,
        *profile,
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

        if args.only == "abuse":
            await abuse_phase(loc, ws, daemon.pid, args.seconds, tuple(args.cases.split(",")))
            return
        print(
            f"frame {len(frame)} bytes; each daemon answer is a decision committed to SQLite first (group commit)"
        )
        print(f"cpu cores: {os.cpu_count()}")
        for clients in (50,) if args.only == "grant" else (1, 10, 50):
            print(f"\n{clients} concurrent client(s), closed loop, {args.seconds:.0f} s each")
            echo0, mine = cpu_seconds(echo.pid), time.process_time()
            lat, tput = await closed_loop([echo_path], frame, clients, args.seconds)
            echo_closed = cpu_since(echo.pid, echo0)[0] / len(lat)  # the 50 clients' run is last
            report(
                "floor: bare asyncio echo",
                lat,
                tput,
                cpu_since(echo.pid, echo0),
                client_s=time.process_time() - mine,
            )
            cpu0, mine = cpu_seconds(daemon.pid), time.process_time()
            lat, tput = await closed_loop([str(loc.agent_socket)], frame, clients, args.seconds)
            report(
                "daemon: grant-settled decision",
                lat,
                tput,
                cpu_since(daemon.pid, cpu0),
                time.process_time() - mine,
            )

        print("\nfixed offered load 1,000 req/s, 50 clients (open loop)")
        echo0 = cpu_seconds(echo.pid)
        lat, sent, tput = await open_loop(echo_path, frame, 1000, args.seconds)
        echo_open = cpu_since(echo.pid, echo0)
        report("floor: bare asyncio echo", lat, tput, echo_open)
        sent_line(sent)
        print(
            f"  {'  this machine: the echo CPU per answer':34} {echo_open[0] / len(lat) * 1e6:.0f} us at 1,000 req/s "
            f"against {echo_closed * 1e6:.0f} us closed-loop ({echo_open[0] / len(lat) / echo_closed:.1f}x)"
        )
        commits = commit_floor(base / "commit-floor.db", min(args.seconds, 3.0))
        report("floor: one SQLite commit (FULL)", commits, len(commits) / min(args.seconds, 3.0))
        cpu0, mine = cpu_seconds(daemon.pid), time.process_time()
        lat, sent, tput = await open_loop(str(loc.agent_socket), frame, 1000, args.seconds)
        report(
            "daemon: grant-settled decision",
            lat,
            tput,
            cpu_since(daemon.pid, cpu0),
            time.process_time() - mine,
        )
        sent_line(sent)
        ok = pct(lat, 0.5) <= 1 and pct(lat, 0.99) <= 5
        ok_sent = pct(sent, 0.5) <= 1 and pct(sent, 0.99) <= 5
        print(
            f"  target p50 <= 1 ms and p99 <= 5 ms at 1,000 req/s, from when due: {'met' if ok else 'missed'}"
        )
        print(f"  the same target, from when sent: {'met' if ok_sent else 'missed'}")
        if args.only == "grant":
            return

        await pending_phase(loc, ws, args.pending)
        # The abuse figures come from a daemon of their own: the 10,000-request phase
        # leaves this one's heap high-water mark behind, which would count as abuse.
        daemon.terminate()
        daemon.wait(30)
        fresh = locate(base / "s2")
        fresh.state_dir.mkdir(mode=0o700)
        fresh.policy.write_text(f"workspaces = [{json.dumps(str(ws))}]\n")
        with open(base / "daemon2.log", "wb") as log:
            daemon = subprocess.Popen(
                [*argv[:-3], str(fresh.state_dir), *argv[-2:]], stdout=subprocess.DEVNULL, stderr=log
            )
        deadline = time.monotonic() + 30
        while running_pid(fresh) != daemon.pid:
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the daemon did not start; see {base / 'daemon2.log'}")
            await asyncio.sleep(0.05)
        await abuse_phase(fresh, ws, daemon.pid, args.seconds)
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
    ap.add_argument("--profile", metavar="FILE", help="run the daemon under cProfile, stats written to FILE")
    ap.add_argument("--cases", default=",".join(ABUSE_CASES), help="abuse cases to run together (comma list)")
    ap.add_argument(
        "--only",
        choices=["all", "grant", "abuse"],
        default="all",
        help="run every section; only the grant-settled parts (50 clients closed loop, then the "
        "fixed 1,000 req/s load); or only the abuse one",
    )
    # select(2), not epoll: its timeouts are in microseconds (see the docstring). It takes
    # descriptors below 1,024 only; the most this benchmark opens at once is about 200.
    with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(selectors.SelectSelector())) as runner:
        runner.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
