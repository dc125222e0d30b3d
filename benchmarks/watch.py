"""Write -> event delivered, for the workspace watcher beside watchfiles' bare ``awatch``.

    python benchmarks/watch.py [--writes 40] [--files 20000]
    python benchmarks/watch.py --only-flood [--flood-files 20000]
    python benchmarks/watch.py --tripwire [watch_tripwire.py's options]

Both watch the same directory in the same process and event loop at the same time, so
the figures are comparable on a busy machine. The reference is ``awatch(root,
watch_filter=None)`` with watchfiles' defaults (``DefaultFilter`` would drop ``.git``).

1. single protected writes (alternately ``.git/hooks/pre-commit`` and ``.env``):
   latency from the write to the subscriber, p50/p95 (target: ours p95 <= 250 ms);
2. a burst of 20,000 files written by another process, with protected files among
   them: how many protected changes each one delivered (target: zero missed), their
   latency, and the longest event-loop stall seen by a 5 ms ticker, for the burst
   watched by both, by ours alone, and by the bare ``awatch`` alone.

``--only-flood``: a real daemon (tripwire ``alert``) watching a workspace, and a probe
process calling ``pending.list`` every 5 ms: its p50/p99 while another process creates
20,000 files under ``.git/hooks/flood/``, beside the same with no flood (target p99
<= 50 ms), and how many events and history rows the flood became. Bounded (< 60 s); the
daemon is stopped and the files removed at the end.

``--tripwire``: the tripwire section, from the protected write to every process of the
session stopped, beside the same workload with the tripwire off (benchmarks/
watch_tripwire.py, which this runs with the remaining options).
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

import watchfiles

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from console.policy.config import PolicyConfig
from console.watch import Attributions, FileEvent, WorkspaceWatcher

BURST_WRITER = r"""
import json, os, sys, time
root, files = sys.argv[1], int(sys.argv[2])
run = sys.argv[3]
written = []
per_dir = 1000
for i in range(files):
    d = os.path.join(root, "burst", run, f"d{i // per_dir:03}")
    if i % per_dir == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i % per_dir:04}.txt"), "w") as f:
        f.write("x")
    if i % 500 == 250:
        rel = f"burst/{run}/d{i // per_dir:03}/key{i}.pem" if i % 1000 == 250 else f".git/hooks/{run}-{i}"
        with open(os.path.join(root, rel), "w") as f:
            f.write("-----BEGIN-----\n")
        written.append((rel, time.time()))
json.dump(written, sys.stdout)
"""


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def ms(x: float) -> str:
    return "   -" if x != x else f"{x * 1000:6.0f}"


class Ticker:
    """The longest time the loop could not run a 5 ms sleep on time."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t = loop.time()
            await asyncio.sleep(0.005)
            self.worst = max(self.worst, loop.time() - t - 0.005)

    def __enter__(self) -> Ticker:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


class Seen:
    """First delivery time per relative path, for ours and for the bare awatch."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.ours: dict[str, float] = {}
        self.bare: dict[str, float] = {}
        self.ours_count = 0
        self.bare_count = 0
        self.ours_last = 0.0
        self.bare_last = 0.0

    def on_event(self, ev: FileEvent) -> None:
        now = time.time()
        self.ours_count += 1
        self.ours_last = now
        self.ours.setdefault(ev.path, now)

    def on_bare(self, changes: set[tuple[watchfiles.Change, str]]) -> None:
        now = time.time()
        self.bare_count += len(changes)
        self.bare_last = now
        for _change, path in changes:
            self.bare.setdefault(os.path.relpath(path, self.root), now)

    def reset(self) -> None:
        self.ours.clear()
        self.bare.clear()
        self.ours_count = self.bare_count = 0


async def bare_loop(root: str, seen: Seen, stop: asyncio.Event, ready: asyncio.Event) -> None:
    ready.set()
    async for changes in watchfiles.awatch(root, watch_filter=None, stop_event=stop):
        seen.on_bare(changes)


async def wait_until(pred, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        await asyncio.sleep(0.005)
    return pred()


async def single_writes(root: Path, seen: Seen, n: int, use_ours: bool, use_bare: bool) -> tuple[list, list]:
    ours, bare = [], []
    targets = [".git/hooks/pre-commit", ".env"]
    for i in range(n):
        rel = targets[i % 2]
        seen.ours.pop(rel, None)
        seen.bare.pop(rel, None)
        t0 = time.time()
        with open(root / rel, "w") as f:
            f.write(f"write {i}\n")
        await wait_until(
            lambda rel=rel: (not use_ours or rel in seen.ours) and (not use_bare or rel in seen.bare), 5
        )
        if use_ours and rel in seen.ours:
            ours.append(seen.ours[rel] - t0)
        if use_bare and rel in seen.bare:
            bare.append(seen.bare[rel] - t0)
        await asyncio.sleep(0.25)  # let both settle: each write is its own batch
    return ours, bare


async def burst(
    root: Path, seen: Seen, files: int, run: str, watcher: WorkspaceWatcher | None, bare_on: bool
):
    seen.reset()
    with Ticker() as ticker:
        t0 = time.time()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", BURST_WRITER, str(root), str(files), run, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
        t_written = time.time()
        written = [(rel, t) for rel, t in json.loads(out)]
        names = [rel for rel, _ in written]
        await wait_until(
            lambda: (
                (watcher is None or all(r in seen.ours for r in names))
                and (not bare_on or all(r in seen.bare for r in names))
            ),
            30,
        )
        if watcher is not None:
            await watcher.flush()
        await asyncio.sleep(2.5)  # let a late bare batch arrive (its debounce is 1.6 s)
    res = {"written": written, "write_s": t_written - t0, "stall": ticker.worst}
    for side, got, count, last in (
        ("ours", seen.ours, seen.ours_count, seen.ours_last),
        ("bare", seen.bare, seen.bare_count, seen.bare_last),
    ):
        lat = [got[rel] - t for rel, t in written if rel in got]
        res[side] = {
            "missed": sum(1 for rel in names if rel not in got),
            "lat": lat,
            "events": count,
            "drain_s": max(0.0, last - t_written),
        }
    return res


async def starting(root: Path) -> dict[str, float]:
    """Start watching the tree the bursts left, then add a top-level directory to it."""
    res: dict[str, float] = {"files": sum(len(f) for _, _, f in os.walk(root))}
    watcher = WorkspaceWatcher(
        protected_for=lambda _r: PolicyConfig().protected_paths,
        attributions=Attributions(),
        on_event=lambda _e: None,
        on_status=lambda _s: None,
    )
    with Ticker() as ticker:
        t0 = time.perf_counter()
        await watcher.add_root(str(root))
        res["ours_add_s"] = time.perf_counter() - t0
        await asyncio.sleep(0.3)
    res["ours_add_stall"] = ticker.worst
    with Ticker() as ticker:
        (root / "newtop" / "sub").mkdir(parents=True)
        (root / "newtop" / "sub" / "f.txt").write_text("x")
        await asyncio.sleep(1.0)
        await watcher.flush()
    res["ours_newdir_stall"] = ticker.worst
    await watcher.close()
    stop, ready = asyncio.Event(), asyncio.Event()
    seen = Seen(str(root))
    with Ticker() as ticker:
        t0 = time.perf_counter()
        task = asyncio.create_task(bare_loop(str(root), seen, stop, ready))
        await ready.wait()
        await asyncio.sleep(0.3)  # the generator builds its watcher on the loop
        (root / "probe.txt").write_text("x")
        await wait_until(lambda: "probe.txt" in seen.bare, 10)
        res["bare_add_s"] = time.perf_counter() - t0
    res["bare_add_stall"] = ticker.worst
    stop.set()
    await task
    return res


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writes", type=int, default=40)
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--dir", default=None, help="where to make the workspace (default: the temp dir)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp) / "ws"
        (root / ".git" / "hooks").mkdir(parents=True)
        (root / ".git" / "objects").mkdir()
        (root / "src").mkdir()
        (root / ".git" / "config").write_text("[core]\n")
        (root / ".env").write_text("A=1\n")
        (root / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
        seen = Seen(str(root))
        watcher = WorkspaceWatcher(
            protected_for=lambda _r: PolicyConfig().protected_paths,
            attributions=Attributions(),
            on_event=seen.on_event,
            on_status=lambda _s: None,
        )
        await watcher.add_root(str(root))
        stop, ready = asyncio.Event(), asyncio.Event()
        bare_task = asyncio.create_task(bare_loop(str(root), seen, stop, ready))
        await ready.wait()
        await asyncio.sleep(0.5)

        ours, bare = await single_writes(root, seen, args.writes, True, True)
        both = await burst(root, seen, args.files, "both", watcher, True)

        stop.set()
        await bare_task
        alone = await burst(root, seen, args.files, "ours", watcher, False)
        status = watcher.status()
        await watcher.close()

        stop2, ready2 = asyncio.Event(), asyncio.Event()
        seen_bare = Seen(str(root))
        bare_task = asyncio.create_task(bare_loop(str(root), seen_bare, stop2, ready2))
        await ready2.wait()
        await asyncio.sleep(0.5)
        bare_alone = await burst(root, seen_bare, args.files, "bare", None, True)
        stop2.set()
        await bare_task
        start = await starting(root)

    fs = subprocess.run(
        ["stat", "-f", "-c", "%T", args.dir or tempfile.gettempdir()], capture_output=True, text=True
    )
    print(
        f"machine: {os.cpu_count()} cores, watchfiles {watchfiles.__version__}, python {sys.version.split()[0]}, "
        f"workspace on {fs.stdout.strip() or '?'}"
    )
    print()
    print(f"1. single protected write -> subscriber, {args.writes} writes (.git/hooks/pre-commit and .env)")
    print(f"   {'':28} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'seen':>6}")
    for name, xs in (("ours (WorkspaceWatcher)", ours), ("bare awatch (defaults)", bare)):
        print(
            f"   {name:28} {ms(pct(xs, 50)):>7} {ms(pct(xs, 95)):>7} {ms(max(xs, default=float('nan'))):>7} "
            f"{len(xs):>3}/{args.writes}"
        )
    p95 = pct(ours, 95)
    ratio = pct(ours, 50) / pct(bare, 50) if bare else float("nan")
    print(
        f"   ours / bare, p50: {ratio:.2f}x; target p95 <= 250 ms: {ms(p95).strip()} ms "
        f"({'met' if p95 <= 0.25 else 'missed'})"
    )
    print()
    n_prot = len(both["written"])
    print(f"2. burst of {args.files:,} files written by another process, {n_prot} protected among them")
    print(f"   (writer took {both['write_s']:.1f} s)")
    print(
        f"   {'':28} {'missed':>7} {'p50 ms':>7} {'p95 ms':>7} {'events':>8} {'drain s':>8} {'stall ms':>9}"
    )
    rows = [
        ("ours, both watching", both["ours"], both["stall"]),
        ("bare, both watching", both["bare"], both["stall"]),
        ("ours alone", alone["ours"], alone["stall"]),
        ("bare awatch alone", bare_alone["bare"], bare_alone["stall"]),
    ]
    for name, r, stall in rows:
        print(
            f"   {name:28} {r['missed']:>4}/{n_prot:<2} {ms(pct(r['lat'], 50)):>7} {ms(pct(r['lat'], 95)):>7} "
            f"{r['events']:>8} {r['drain_s']:>8.1f} {stall * 1000:>9.0f}"
        )
    missed = both["ours"]["missed"] + alone["ours"]["missed"]
    print(
        f"   target zero protected changes missed (ours): {missed} missed ({'met' if missed == 0 else 'missed'})"
    )
    print(
        f"   longest loop stall, ours alone / bare alone: {alone['stall'] * 1000:.0f} ms / "
        f"{bare_alone['stall'] * 1000:.0f} ms"
    )
    print()
    print(f"3. starting to watch the tree the bursts left ({start['files']:,.0f} files)")
    print(
        f"   ours: add_root {start['ours_add_s'] * 1000:.0f} ms (walk + baselines + watches), longest loop stall "
        f"{start['ours_add_stall'] * 1000:.0f} ms; a new top-level directory later: stall "
        f"{start['ours_newdir_stall'] * 1000:.0f} ms"
    )
    print(
        f"   bare awatch: first event after {start['bare_add_s'] * 1000:.0f} ms, longest loop stall "
        f"{start['bare_add_stall'] * 1000:.0f} ms"
    )
    for r in status.roots:
        print(
            f"   our status after the bursts: {r.state}, {r.mode}, reasons {[x.code for x in r.reasons]}, "
            f"{r.rescans} rescans, {r.missed_by_events} changes found only by a rescan, {r.restarts} restarts"
        )


FLOOD_WRITER = r"""
import os, sys, time
d = os.path.join(sys.argv[1], ".git", "hooks", "flood")
os.mkdir(d)
t0 = time.monotonic()
for i in range(int(sys.argv[2])):
    with open(os.path.join(d, f"f{i:05d}"), "w") as f:
        f.write("x")
print(time.monotonic() - t0)
"""

PENDING_PROBE = r"""
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
token = open(sys.argv[2]).read().strip()
def call(i, method, params):
    s.sendall(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode() + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        data += s.recv(1 << 20)
    return data
call(0, "hello", {"token": token})
lat, i, stop = [], 1, time.monotonic() + float(sys.argv[3])
while time.monotonic() < stop:
    t0 = time.perf_counter()
    call(i, "pending.list", {})
    lat.append(time.perf_counter() - t0)
    i += 1
    time.sleep(0.005)
print(json.dumps(lat))
"""


def flood_main(files: int) -> None:
    import shutil
    import signal

    from console.client import Client
    from console.client.spawn import running_pid
    from console.locations import locate

    base = Path(tempfile.mkdtemp(prefix="acf-", dir="/tmp"))
    ws = base / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    loc = locate(base / "s")
    loc.state_dir.mkdir(mode=0o700)
    loc.policy.write_text(f'tripwire = "alert"\nwatch = [{json.dumps(str(ws))}]\n')
    argv = [sys.executable, "-m", "console", "daemon", "run", "--state-dir", str(loc.state_dir)]
    argv += ["--log-level", "warning"]
    t_start = time.monotonic()
    with open(base / "daemon.log", "wb") as log:
        daemon = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
    try:
        while running_pid(loc) != daemon.pid or not loc.operator_socket.exists():
            if daemon.poll() is not None or time.monotonic() - t_start > 20:
                raise SystemExit(f"the daemon did not start; see {base / 'daemon.log'}")
            time.sleep(0.05)
        with Client.connect(loc, role="operator") as op:
            while not op.call("watch.status")["roots"] or not op.call("watch.status")["ok"]:
                time.sleep(0.05)

        def probe(seconds: float) -> subprocess.Popen[str]:
            args = [
                sys.executable,
                "-c",
                PENDING_PROBE,
                str(loc.operator_socket),
                str(loc.token),
                str(seconds),
            ]
            return subprocess.Popen(args, stdout=subprocess.PIPE, text=True)

        quiet = probe(3.0)
        quiet_lat = json.loads(quiet.communicate(timeout=20)[0])
        loud = probe(12.0)
        time.sleep(0.3)
        writer = subprocess.run(
            [sys.executable, "-c", FLOOD_WRITER, str(ws), str(files)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        loud_lat = json.loads(loud.communicate(timeout=30)[0])
        with Client.connect(loc, role="operator") as op:
            events = [
                e
                for e in op.call("watch.recent", {"protected_only": True})["events"]
                if e["display_path"].startswith(".git/hooks/flood")
            ]
            rows = op.call("history.query", {"kinds": ["file_event"], "limit": 5000})["rows"]
        flood_rows = [r for r in rows if str(r.get("command", "")).startswith(".git/hooks/flood")]
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        shutil.rmtree(base, ignore_errors=True)
    p99q, p99l = pct(quiet_lat, 99), pct(loud_lat, 99)
    print(
        f"protected flood: {files:,} files under .git/hooks/flood/ (writer took {float(writer.stdout):.1f} s)"
    )
    print(f"   {'pending.list':28} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'calls':>6}")
    for name, xs in (("no flood (reference)", quiet_lat), ("during the flood", loud_lat)):
        print(f"   {name:28} {ms(pct(xs, 50)):>7} {ms(pct(xs, 99)):>7} {ms(max(xs)):>7} {len(xs):>6}")
    print(
        f"   target p99 <= 50 ms during the flood: {ms(p99l).strip()} ms ({'met' if p99l <= 0.05 else 'missed'})"
    )
    print(f"   (reference p99 {ms(p99q).strip()} ms)")
    counted = sum(e["count"] for e in events)
    print(
        f"   the flood became {len(events)} events counting {counted:,} changes, "
        f"{len(flood_rows)} history rows; whole run {time.monotonic() - t_start:.1f} s"
    )


if __name__ == "__main__":
    if "--tripwire" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--tripwire"]
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "watch_tripwire.py")
        sys.exit(subprocess.call([sys.executable, here, *rest]))
    if "--only-flood" in sys.argv:
        fp = argparse.ArgumentParser()
        fp.add_argument("--only-flood", action="store_true")
        fp.add_argument("--flood-files", type=int, default=20_000)
        flood_main(fp.parse_args().flood_files)
    else:
        asyncio.run(main())
