"""History store: durable decisions/s with group commit, and history queries over 1M rows.

    python benchmarks/store.py [--seconds 3] [--clients 50] [--rounds 3] [--rows 1000000] [--rebuild]

1. Durable decisions/s: as in the daemon, one asyncio loop runs ``--clients`` tasks
   that each append a decision (its request and decision events, one job) and await
   it through ``asyncio.wrap_future`` before sending the next, like agents waiting for
   their answer. The same store code runs with group commit (``max_batch=2000``) and
   with one commit per decision (``max_batch=1``), in this run, on the same disk.
   Target: >= 2,000 durable decisions/s.
2. History queries over ``--rows`` events (built once through the Store API and cached
   under /tmp), each timed against a plain ``SELECT * FROM events ORDER BY seq DESC
   LIMIT 200`` on the same file, measured in this run. Target: <= 100 ms for a search
   returning the newest 200 matches.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from console.store import SCHEMA_VERSION, Event, HistoryQuery, Store

CACHE = Path("/tmp/agent-console-bench")
GENERATOR = 2  # bump when the generated history changes

COMMANDS = [
    "git status",
    "git diff --stat HEAD~{n}",
    "git commit -m 'fix issue {n}'",
    "git push origin feature-{n}",
    "python -m pytest -q tests/test_module_{n}.py",
    "npm run build -- --env=stage{n}",
    "rm -rf build/dist-{n}",
    "cat src/package/module_{n}.py",
    "ls -la src/pkg_{n}",
    "curl -sS https://api.example.com/v1/items/{n}",
    "make -j4 target_{n}",
    "sed -i s/old/new/g docs/page_{n}.md",
    "cargo test --package crate_{n}",
    "docker compose up -d service{n}",
]
JUSTIFICATIONS = [
    "Run the tests after the refactor of module {n}.",
    "Check what changed before committing.",
    "Build the bundle to see whether the error is gone.",
    "Clean the stale build output.",
    "Fetch the API response to compare with fixture {n}.",
    "Publish the branch so CI runs.",
]
REASONS = ["escalation_requires_approval", "within_ceiling", "grant_always", "read_only_command"]
SOURCES = ["operator", "policy", "grant", "timeout"]
TOOLS = ["claude-code:Bash", "shell", "git", "mcp:files"]


def generate(rng: random.Random, i: int) -> list[Event]:
    """One request's events: request, decision, usually an outcome, sometimes a file event."""
    n = rng.randrange(500)
    command = rng.choice(COMMANDS).format(n=n)
    if i % 2000 == 0:
        command = "touch .git/hooks/pre-commit"
    if i % 7000 == 0:
        command += " # needle-7f3a"
    at = 1_700_000_000.0 + i * 2.0
    rid = f"req-{i:08d}"
    tool = rng.choice(TOOLS)
    common = {
        "request_id": rid,
        "fingerprint": f"{rng.getrandbits(256):064x}",
        "tool": tool,
        "executable": "/usr/bin/" + command.split()[0],
        "command": command,
        "cwd": f"/home/dev/projects/app-{n % 20}/src",
        "workspace_root": f"/home/dev/projects/app-{n % 20}",
        "session_id": f"session-{i // 500}",
        "justification": rng.choice(JUSTIFICATIONS).format(n=n),
    }
    op = {"args": command.split()[1:], "env": {"CI": "1"}, "timeout_ms": 120000, "network": "none"}
    events = [Event(kind="request", at=at, peer_pid=1000 + i % 50, body={"operation": op}, **common)]
    source = rng.choice(SOURCES)
    verdict = "deny" if source == "timeout" or rng.random() < 0.15 else "allow"
    events.append(
        Event(
            kind="decision",
            at=at + 0.5,
            verdict=verdict,
            source=source,
            scope="once" if source == "operator" else "",
            reason=rng.choice(REASONS),
            note="looks fine" if source == "operator" and rng.random() < 0.2 else "",
            latency_ms=rng.random() * 5000,
            body={"denials": [], "capability_diff": {"escalations": [{"kind": "workspace_write"}]}},
            **common,
        )
    )
    if verdict == "allow" and rng.random() < 0.8:
        events.append(Event(kind="outcome", at=at + 1.5, request_id=rid, body={"kind": "success", "exit": 0}))
    if rng.random() < 0.15:
        path = f"/home/dev/projects/app-{n % 20}/src/file_{n}.py"
        events.append(
            Event(kind="file_event", at=at + 1.0, request_id=rid, command=path, body={"change": "modified"})
        )
    return events


def build(path: Path, rows: int) -> None:
    rng = random.Random(7)
    tmp = path.with_suffix(".building")
    for suffix in ("", "-wal", "-shm", ".head"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    t0 = time.perf_counter()
    with Store.open(tmp) as store:
        buffer: list[Event] = []
        written = 0
        i = 0
        while written < rows:
            buffer += generate(rng, i)
            i += 1
            if len(buffer) >= 1000 or written + len(buffer) >= rows:
                chunk = buffer[: rows - written]
                store.append(*chunk).result()
                written += len(chunk)
                buffer = []
                if written % 100_000 < 1000:
                    print(f"  built {written:,} rows ({time.perf_counter() - t0:.0f} s)", flush=True)
    for suffix in ("", ".head"):
        Path(str(tmp) + suffix).rename(str(path) + suffix)
    print(f"  built {rows:,} rows in {time.perf_counter() - t0:.0f} s ({path})")


# -- 1. durable decisions/s -------------------------------------------------------------------


def load(store: Store, clients: int, seconds: float) -> tuple[float, float, float, float]:
    """Decisions/s, p50/p99 latency (ms) and process CPU (us) per decision, ``clients`` tasks."""
    rng = random.Random(1)
    samples = [[e.to_dict() for e in generate(rng, i)[:2]] for i in range(64)]
    latencies: list[float] = []
    run_id = f"{time.time_ns():x}"  # request ids are unique per run: the store refuses a second decision

    async def client(c: int, stop: float) -> None:
        k = 0
        while time.perf_counter() < stop:
            request, decision = samples[k % len(samples)]
            rid = f"{run_id}-c{c}-{k}"
            t = time.perf_counter()
            await asyncio.wrap_future(
                store.append(
                    Event(**{**request, "request_id": rid}), Event(**{**decision, "request_id": rid})
                )
            )
            latencies.append(time.perf_counter() - t)
            k += 1

    async def run() -> float:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(c, t0 + seconds) for c in range(clients)))
        return time.perf_counter() - t0

    cpu = time.process_time()
    elapsed = asyncio.run(run())
    cpu = time.process_time() - cpu
    latencies.sort()
    p50 = latencies[len(latencies) // 2] * 1000
    p99 = latencies[int(len(latencies) * 0.99)] * 1000
    return len(latencies) / elapsed, p50, p99, cpu / len(latencies) * 1e6


def commit_floor(path: Path, seconds: float) -> tuple[float, float]:
    """Commits/s and p50 (ms) of bare sqlite3: one tiny row per WAL, synchronous=FULL commit."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE t (x INTEGER)")
    times = []
    stop = time.perf_counter() + seconds
    while time.perf_counter() < stop:
        t = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("COMMIT")
        times.append(time.perf_counter() - t)
    conn.close()
    times.sort()
    return len(times) / sum(times), times[len(times) // 2] * 1000


def durable(seconds: float, clients: int, rounds: int) -> None:
    print(
        f"\n1. durable decisions/s ({clients} asyncio clients awaiting their commit; "
        f"{rounds} interleaved rounds of {seconds:.0f} s, medians)"
    )
    base = Path(tempfile.mkdtemp(prefix="store-bench-", dir="/var/tmp"))
    configs = [
        ("group commit", 2000, clients),
        ("one commit per decision", 1, clients),
        ("group commit, 1 client", 2000, 1),
    ]
    floor: list[tuple[float, float]] = []
    runs: dict[str, list[tuple[float, ...]]] = {name: [] for name, _, _ in configs}
    try:
        for r in range(rounds):
            floor.append(commit_floor(base / f"floor-{r}.db", min(seconds, 2.0)))
            for name, max_batch, n in configs:
                with Store.open(base / f"{r}-{max_batch}-{n}.db", max_batch=max_batch) as store:
                    rate, p50, p99, cpu = load(store, n, seconds)
                    stats = store.stats()
                runs[name].append((rate, p50, p99, stats.events / max(stats.commits, 1), cpu))
    finally:
        shutil.rmtree(base, ignore_errors=True)

    def med(values: list[float]) -> float:
        return statistics.median(values)

    floor_rate, floor_p50 = med([f[0] for f in floor]), med([f[1] for f in floor])
    print(
        f"  {'reference: bare sqlite3 commit':<26} {floor_rate:8,.0f} commits/s     p50 {floor_p50:6.2f} ms"
        "   (one tiny row per fsync-ed commit: the disk's floor)"
    )
    rates = {}
    for name, results in runs.items():
        rate, p50, p99, per, cpu = (med([x[i] for x in results]) for i in range(5))
        rates[name] = rate
        spread = f"{min(x[0] for x in results):,.0f}-{max(x[0] for x in results):,.0f}"
        print(
            f"  {name:<26} {rate:8,.0f} decisions/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   "
            f"{per:5.1f} events/commit   {cpu:4.0f} us CPU/decision   (rounds {spread})"
        )
    print(
        f"  group commit / one commit per decision = "
        f"{rates['group commit'] / rates['one commit per decision']:.1f}x   (target >= 2,000 decisions/s)"
    )
    print(
        f"  group commit / bare commit rate = {rates['group commit'] / floor_rate:.1f}x "
        "(durable decisions per fsync the disk can do)"
    )


# -- 2. queries over a large history ----------------------------------------------------------


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t) * 1000)
    runs.sort()
    return statistics.median(runs), runs[int(len(runs) * 0.9)]


def queries(rows: int, rebuild: bool, repeat: int) -> None:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"history-{rows}-s{SCHEMA_VERSION}-g{GENERATOR}.db"
    if rebuild or not path.exists():
        print(f"\n   building a {rows:,}-row history (cached for later runs) ...")
        build(path, rows)
    print(f"\n2. history queries over {rows:,} events ({path.stat().st_size / 1e6:,.0f} MB), median / p90 ms")
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def reference() -> None:
        raw.execute("SELECT * FROM events ORDER BY seq DESC LIMIT 200").fetchall()

    ref, ref90 = timed(reference, repeat)
    print(f"  {'reference: SELECT * ... ORDER BY seq DESC LIMIT 200':<58} {ref:7.2f} / {ref90:7.2f}")
    mid = rows // 2
    with Store.open_readonly(path) as store:
        detail_id = store.history(HistoryQuery(kinds=("decision",), before_seq=mid, limit=1)).records[0]
        rid = detail_id.event.request_id
        until_mid = detail_id.event.at
        newest_at = store.history(HistoryQuery(limit=1)).records[0].event.at
        cases: list[tuple[str, Callable[[], object]]] = [
            ("newest 200, any kind", lambda: store.history(HistoryQuery())),
            ("decisions", lambda: store.history(HistoryQuery(kinds=("decision",)))),
            ("denied decisions", lambda: store.history(HistoryQuery(kinds=("decision",), verdict="deny"))),
            ("timeouts (source)", lambda: store.history(HistoryQuery(kinds=("decision",), source="timeout"))),
            ("tool = git", lambda: store.history(HistoryQuery(tool="git"))),
            ("one session", lambda: store.history(HistoryQuery(session_id="session-100"))),
            ("since the last hour", lambda: store.history(HistoryQuery(since=newest_at - 3600))),
            ("older page (before the middle)", lambda: store.history(HistoryQuery(before_seq=mid))),
            ("until the middle (time-bounded, old)", lambda: store.history(HistoryQuery(until=until_mid))),
            ("search 'git' (common)", lambda: store.history(HistoryQuery(search="git"))),
            ("search 'rm -rf' (plain text)", lambda: store.history(HistoryQuery(search="rm -rf"))),
            (
                "search 'hooks/pre-com' (rare path)",
                lambda: store.history(HistoryQuery(search="hooks/pre-com")),
            ),
            ("search 'needle-7f3a' (~50 matches)", lambda: store.history(HistoryQuery(search="needle-7f3a"))),
            ("search with no match", lambda: store.history(HistoryQuery(search="zzqx-nothing"))),
            (
                "search 'pytest' + denied decisions",
                lambda: store.history(HistoryQuery(search="pytest", kinds=("decision",), verdict="deny")),
            ),
            ("search 'rm' (2 chars: LIKE scan)", lambda: store.history(HistoryQuery(search="rm"))),
            ("count search 'git' (capped 10,000)", lambda: store.count(HistoryQuery(search="git"))),
            ("request detail", lambda: store.request_detail(rid)),
            (
                "previous decisions (tool, executable)",
                lambda: store.previous_decisions("git", "/usr/bin/git"),
            ),
        ]
        worst_search = 0.0
        for name, fn in cases:
            median, p90 = timed(fn, repeat)
            if name.startswith("search"):
                worst_search = max(worst_search, p90)
            print(f"  {name:<58} {median:7.2f} / {p90:7.2f}   {median / ref:6.1f}x reference")
        print(f"  worst search p90 {worst_search:.1f} ms (target <= 100 ms)")
        slow, _ = timed(lambda: store.history(HistoryQuery(search="é")), 1)
        print(f"  worst case, noted: a 1-char search matching nothing scans every row: {slow:.0f} ms")
        t = time.perf_counter()
        report = store.verify()
        print(f"  verify(): {report.checked:,} rows in {time.perf_counter() - t:.1f} s, ok={report.ok}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--skip-durable", action="store_true")
    ap.add_argument("--skip-queries", action="store_true")
    args = ap.parse_args()
    if not args.skip_durable:
        durable(args.seconds, args.clients, args.rounds)
    if not args.skip_queries:
        queries(args.rows, args.rebuild, args.repeat)


if __name__ == "__main__":
    main()
