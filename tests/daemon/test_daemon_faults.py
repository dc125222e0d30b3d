"""Faults: kill -9 under load, and a store that cannot write."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
from support.daemon import DaemonProcess, operation, short_tmp, wait_for, workspace
from support.store import immutable_base

from console.client import DaemonUnreachable


def test_kill9_under_load_loses_nothing_an_agent_was_told():
    base = short_tmp()
    state = base / "s"
    ws = workspace()
    d = DaemonProcess(state, "approval_timeout_s = 60\n").start()
    received: list[dict] = []
    lock = threading.Lock()
    stop = threading.Event()

    def agent(n):
        i = 0
        while not stop.is_set():
            i += 1
            op = operation(
                ws, args=[f"a{n}-{i}"], network="any" if i % 3 == 0 else "none", session_id=f"s{n}"
            )
            try:
                with d.agent(timeout_s=10) as a:
                    answer = a.submit(op, timeout_s=5)
            except (DaemonUnreachable, OSError):
                return
            with lock:
                received.append(answer)

    approved_grants: list[str] = []

    def operator():
        while not stop.is_set():
            try:
                with d.operator(timeout_s=10) as op:
                    for item in op.call("pending.list", {"limit": 10})["pending"]:
                        scope = "always" if len(approved_grants) < 5 else "once"
                        try:
                            r = op.call(
                                "decide", {"target": item["request_id"], "action": "approve", "scope": scope}
                            )
                        except Exception:
                            continue
                        if r.get("grant"):
                            approved_grants.append(r["grant"]["id"])
            except (DaemonUnreachable, OSError):
                return
            time.sleep(0.01)

    threads = [threading.Thread(target=agent, args=(n,), daemon=True) for n in range(50)]
    threads.append(threading.Thread(target=operator, daemon=True))
    for t in threads:
        t.start()
    wait_for(lambda: len(received) >= 300 and len(approved_grants) >= 3, timeout_s=60)
    d.kill9()
    stop.set()
    for t in threads:
        t.join(15)
    with lock:
        told = {a["request_id"]: a for a in received}

    d2 = DaemonProcess(state).start()
    try:
        r = d2.cli("history", "export")
        assert r.returncode == 0, r.stderr
        decisions = {}
        for line in r.stdout.splitlines():
            event = json.loads(line)
            if event["kind"] == "decision":
                decisions[event["request_id"]] = event
        missing = [rid for rid in told if rid not in decisions]
        assert missing == []
        for rid, answer in told.items():
            assert decisions[rid]["verdict"] == answer["verdict"]
        with d2.operator() as op:
            grants = {g["id"] for g in op.call("grants.list", {"include_inactive": True})["grants"]}
        assert set(approved_grants) <= grants
        v = d2.cli("history", "verify")
        assert v.returncode == 0, v.stdout + v.stderr
        assert v.stdout.startswith("OK")
    finally:
        d2.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def small_fs():
    """A real filesystem that fills up: a 2 MiB tmpfs."""
    mnt = short_tmp("fs-")
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if r.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs here (root is needed): {r.stderr}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)
    shutil.rmtree(mnt, ignore_errors=True)


@pytest.mark.needs_root
def test_disk_full_denies_with_store_unavailable(small_fs):
    ws = workspace()
    d = DaemonProcess(small_fs / "s").start()
    try:
        with d.agent() as a:
            assert a.submit(operation(ws))["verdict"] == "allow"
        # Fill the filesystem to the last byte.
        with open(small_fs / "filler", "wb") as f, contextlib.suppress(OSError):  # ENOSPC ends it
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        answers = []
        with d.agent() as a:
            for i in range(20):
                answers.append(a.submit(operation(ws, args=["x" * 2000, str(i)], justification="y" * 5000)))
        assert any(x["reason"] == "store_unavailable" for x in answers)
        assert all(x["verdict"] == "deny" for x in answers if x["reason"] == "store_unavailable")
        assert not any(x["verdict"] == "allow" and x["source"] == "store" for x in answers)
        # Space comes back: the daemon records again.
        (small_fs / "filler").unlink()
        with d.agent() as a:
            assert wait_for(lambda: a.submit(operation(ws, args=["after"]))["verdict"] == "allow")
    finally:
        d.stop()


@pytest.mark.needs_root
def test_unwritable_database_denies_with_store_unavailable():
    """The kernel refuses every write to the database and its WAL (the immutable flag),
    as a read-only disk would: a filesystem holding an open database cannot be remounted
    read-only (EBUSY), so this is the live version of that fault."""
    base = Path(tempfile.mkdtemp(prefix="ac-", dir=immutable_base()))
    ws = workspace()
    d = DaemonProcess(base / "s").start()
    files = [str(d.loc.database), str(d.loc.database) + "-wal"]
    try:
        with d.agent() as a:
            assert a.submit(operation(ws))["verdict"] == "allow"
        r = subprocess.run(["chattr", "+i", *files], capture_output=True, text=True)
        assert r.returncode == 0, f"chattr is needed for this test: {r.stderr}"
        try:
            with d.agent() as a:
                answers = [a.submit(operation(ws, args=["ro", str(i)])) for i in range(3)]
            assert all((x["verdict"], x["reason"]) == ("deny", "store_unavailable") for x in answers)
        finally:
            subprocess.run(["chattr", "-i", *files], check=True)
        with d.agent() as a:
            assert wait_for(lambda: a.submit(operation(ws, args=["after"]))["verdict"] == "allow")
    finally:
        d.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_requests_pending_at_a_crash_are_recorded_as_denied_after_restart():
    base = short_tmp()
    ws = workspace()
    d = DaemonProcess(base / "s").start()
    box = {}

    def agent():
        try:
            with d.agent() as a:
                box["answer"] = a.submit(operation(ws, network="any"))
        except DaemonUnreachable as exc:
            box["error"] = exc

    t = threading.Thread(target=agent)
    t.start()
    with d.operator() as op:
        rid = wait_for(lambda: op.call("pending.list")["pending"])[0]["request_id"]
    d.kill9()
    t.join(10)
    assert "error" in box  # the agent heard "unreachable", never an allow
    d2 = DaemonProcess(base / "s").start()
    try:
        with d2.operator() as op:
            row = op.call("history.query", {"request_id": rid})["rows"][0]
        assert (row["verdict"], row["source"], row["reason"]) == ("deny", "shutdown", "daemon_restarted")
        assert d2.cli("history", "verify").returncode == 0
    finally:
        d2.stop()
        shutil.rmtree(base, ignore_errors=True)
