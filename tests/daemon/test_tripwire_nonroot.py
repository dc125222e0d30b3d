"""Without root, where it differs: a real daemon running as an ordinary user (nobody) has
no pid from fanotify (the kernel hides it), no open gate and, here, no cgroups. Writers
are named by /proc evidence only, and a writer that cannot be named stops the sessions
live in the workspace: 0 silent changes, 20 runs of the short-lived writer. The driver
runs as that user end to end (the daemon only answers its own uid).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

pytestmark = [pytest.mark.needs_root, pytest.mark.needs_bwrap]

RUNS = 20

DRIVER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from support.daemon import running_daemon, wait_for, workspace

runs = int(sys.argv[2])
ws = workspace()
out = {"raised": 0, "silent": [], "named": 0, "suspect": 0}
with running_daemon(f'tripwire = "pause"\nwatch = {json.dumps([str(ws)])}\n') as d, d.operator() as op:
    wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
    watch = op.call("watch.status")
    out["lane"], out["gate"] = watch["fast_lane"], watch["open_gate"]
    out["pause"] = op.call("daemon.status")["sessions"]["pause_mode"]
    for run in range(runs):
        name = f"post-merge-{run}"
        script = f"sleep 0.3; sh -c 'echo evil > .git/hooks/{name}'; sleep 30"
        sid = op.call("sessions.new", {"argv": ["bash", "--norc", "-c", script], "cwd": str(ws), "unconfined": True})["session"]["id"]
        try:
            item = wait_for(
                lambda: [i for i in op.call("tripwire.list", {"open": True})["items"] if i["session"] == sid],
                timeout_s=15,
            )[0]
            out["raised"] += item["display_path"] == f".git/hooks/{name}"
            out["suspect" if item["suspect"] else "named"] += 1
            op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})
        except AssertionError:
            out["silent"].append(name)
        finally:
            if op.call("sessions.get", {"session": sid})["session"]["status"] == "running":
                op.call("sessions.kill", {"session": sid, "grace_s": 0.5})
        wait_for(lambda: not (ws / ".git" / "hooks" / name).exists())
print(json.dumps(out))
"""


def test_a_daemon_without_root_raises_every_short_lived_write():
    # The user may not reach this interpreter's own home (/root): the system's, with this
    # environment's packages.
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip("no system python for an unprivileged user")
    packages = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    env = {**os.environ, "PYTHONPATH": f"{REPO}:{packages}", "HOME": "/tmp"}
    env.pop("XDG_RUNTIME_DIR", None)
    r = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            python,
            "-c",
            DRIVER,
            str(REPO / "tests"),
            str(RUNS),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd="/tmp",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # What differs: no pid from fanotify, no gate, SIGSTOP by process walk.
    assert out["lane"] == "inotify" and out["gate"] is False and out["pause"] == "process walk"
    # What does not: every write raised, its session stopped (by evidence, or as a suspect).
    assert out["silent"] == [] and out["raised"] == RUNS, out
