"""The tripwire names a session by evidence, not by time or directory,
with a real daemon in pause mode, real sessions and real files:

- an idle session in the same workspace is neither named nor paused;
- the operator's own write (outside any session) names nobody; without the kernel's pid
  its writer is unknown, so the session live in the workspace is stopped as a suspect,
  and one whose cwd is above the workspace (and wrote elsewhere earlier) is not;
- a session started elsewhere that writes into the workspace by absolute path is named
  (and paused when it holds the file open for write);
- a workspace given as a symlink still matches the real cwd of the writer;
- a session that writes a hook and exits at once still raises an item, state "exited".
"""

from __future__ import annotations

import json
import time

import pytest
from support.daemon import running_daemon, short_tmp, stopped, wait_for, workspace

pytestmark = pytest.mark.needs_bwrap


@pytest.fixture(scope="module")
def env():
    ws = workspace()
    link = short_tmp("ln-") / "ws-link"
    link.symlink_to(ws)
    other = workspace()  # watched too: changes there are nobody's business here
    # The watched root is given as a symlink; sessions' cwds are real paths.
    policy = f'approval_timeout_s = 120\ntripwire = "pause"\nwatch = {json.dumps([str(link), str(other)])}\n'
    # The evidence path (no fanotify): tests/daemon/test_tripwire_fanotify.py covers the kernel's pid.
    with running_daemon(policy, env={"AGENT_CONSOLE_NO_FANOTIFY": "1"}) as d:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.status")["ok"] and len(op.call("watch.status")["roots"]) == 2)
        yield d, ws, link


def new(op, cwd, argv):
    return op.call("sessions.new", {"unconfined": True, "argv": argv, "cwd": str(cwd)})["session"]


def protected_event(op, name):
    def find():
        for e in op.call("watch.recent", {"protected_only": True})["events"]:
            if e["path"] == name:
                return e
        return None

    return wait_for(find)


def idle_from(op, sid, quiet_s=0.5):
    """Wait until the session's prompt is out and it has written nothing for ``quiet_s``:
    on a loaded machine a fixed pause can end before bash finished starting."""
    last, since = -1, time.monotonic()

    def settled():
        nonlocal last, since
        now = op.call("sessions.get", {"session": sid})["session"]["output_bytes"]
        if now != last:
            last, since = now, time.monotonic()
        return now > 0 and time.monotonic() - since >= quiet_s

    wait_for(settled, timeout_s=30)


def items_of(op, sid):
    return [i for i in op.call("tripwire.list", {"include_resolved": True})["items"] if i["session"] == sid]


def end(op, *sids):
    for item in op.call("tripwire.list", {"open": True})["items"]:
        if item["session"] in sids:
            op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})
    for sid in sids:
        if op.call("sessions.get", {"session": sid})["session"]["status"] not in ("exited", "lost"):
            op.call("sessions.kill", {"session": sid, "grace_s": 1})


def test_only_the_writer_is_paused_not_the_idle_session_beside_it(env):
    d, ws, _link = env
    with d.operator() as op:
        idle = new(op, ws, ["bash", "--norc", "--noprofile", "-i"])
        idle_from(op, idle["id"])
        writer = new(op, ws, ["bash", "--norc", "-c", "sleep 1; echo evil > .git/hooks/pre-push; sleep 30"])
        try:
            event = protected_event(op, ".git/hooks/pre-push")
            assert [a["id"] for a in event["attribution"]] == [writer["id"]]
            assert event["attribution"][0]["basis"] == "write I/O in window"
            assert event["attribution"][0]["in_workspace"] is True
            item = wait_for(lambda: items_of(op, writer["id"]))[0]
            assert item["state"] == "paused" and item["basis"] == "write I/O in window"
            assert wait_for(lambda: stopped(writer["pid"]))
            assert items_of(op, idle["id"]) == []
            assert not stopped(idle["pid"])
            row = wait_for(
                lambda: op.call("history.query", {"kinds": ["file_event"], "search": "pre-push"})["rows"]
            )[0]
            assert row["session_id"] == writer["id"]
            assert row["body"]["attribution"]["basis"] == "write I/O in window"
        finally:
            end(op, idle["id"], writer["id"])


def test_an_unknown_writer_stops_the_session_live_in_the_workspace_not_the_one_above(env):
    d, ws, _link = env
    with d.operator() as op:
        idle = new(op, ws, ["bash", "--norc", "--noprofile", "-i"])
        # cwd above the workspace; it wrote elsewhere, then went quiet
        elsewhere = short_tmp() / "elsewhere"
        above = new(op, ws.parent.parent, ["sh", "-c", f"echo x > {elsewhere}; sleep 30"])
        try:
            wait_for(lambda: op.call("sessions.get", {"session": idle["id"]})["session"]["output_bytes"] > 0)
            wait_for(elsewhere.exists)
            time.sleep(0.6)
            (ws / ".env").write_text("TOKEN=operator\n")
            event = protected_event(op, ".env")
            # No session has evidence, and without fanotify nobody can be certain: unknown.
            assert event["attribution_basis"] == "writer unknown; live in the workspace"
            assert [a["id"] for a in event["attribution"]] == [idle["id"]]
            item = wait_for(lambda: items_of(op, idle["id"]))[0]
            assert item["state"] == "paused" and item["suspect"] is True
            assert item["summary"] == (
                f".env changed by a writer that could not be named; session {idle['id']} stopped "
                "(it was live in the workspace)"
            )
            assert wait_for(lambda: stopped(idle["pid"]))
            assert items_of(op, above["id"]) == [] and not stopped(above["pid"])
        finally:
            end(op, idle["id"], above["id"])
        assert not (ws / ".env").exists()  # kill put the file back as it was: absent


def test_a_session_started_elsewhere_writing_by_absolute_path_is_named(env):
    d, ws, _link = env
    away = short_tmp("away-")
    with d.operator() as op:
        once = new(op, away, ["sh", "-c", f"sleep 1; echo T=1 >> {ws}/.env.prod; sleep 30"])
        try:
            event = protected_event(op, ".env.prod")
            assert [a["id"] for a in event["attribution"]] == [once["id"]]
            # Either evidence names it: the sampler may catch the append's descriptor
            # still open (more often on a loaded machine), or only the bytes it wrote
            # (which is the usual case).
            basis = event["attribution"][0]["basis"]
            assert basis in ("write I/O in window", "open for write")
            if basis == "write I/O in window":
                assert event["attribution"][0]["in_workspace"] is False
                time.sleep(0.3)
                assert items_of(op, once["id"]) == []  # weak evidence: an alert, not a pause
            else:  # the open file is in the workspace: firm evidence, the session is paused
                assert event["attribution"][0]["in_workspace"] is True
                assert wait_for(lambda: items_of(op, once["id"]))
        finally:
            end(op, once["id"])
        held = new(
            op,
            away,
            ["bash", "--norc", "-c", f"exec 3>>{ws}/deploy.pem; sleep 1; echo k >&3; sleep 30"],
        )
        try:
            event = protected_event(op, "deploy.pem")
            assert [a["id"] for a in event["attribution"]] == [held["id"]]
            assert event["attribution"][0]["basis"] == "open for write"
            item = wait_for(lambda: items_of(op, held["id"]))[0]
            assert item["state"] == "paused" and item["basis"] == "open for write"
            assert wait_for(lambda: stopped(held["pid"]))
        finally:
            end(op, held["id"])


def test_a_writer_that_exits_at_once_still_raises_an_item(env):
    d, ws, _link = env
    with d.operator() as op:
        op.subscribe(["watch"])
        # Not in one of the fast lane's directories (.git/hooks is: a writer there is
        # frozen before it can exit, tests/daemon/test_tripwire_fanotify.py).
        quick = new(op, ws, ["sh", "-c", "sleep 0.8; echo 'TOKEN=evil' > src/.env"])
        while (event := op.next_event()).get("change") != "alert":
            continue
        assert event["session"] == quick["id"] and event["exited"] is True
        item = wait_for(lambda: items_of(op, quick["id"]))[0]
        assert item["state"] == "exited"
        assert item["summary"] == f"session {quick['id']} (exited) modified src/.env"
        assert item in op.call("tripwire.list", {"open": True})["items"]
        rows = wait_for(
            lambda: [
                r
                for r in op.call("history.query", {"kinds": ["tripwire"]})["rows"]
                if r["session_id"] == quick["id"]
            ]
        )
        assert rows[0]["verdict"] == "exited"
        resolved = op.call("tripwire.resolve", {"id": item["id"], "action": "keep_paused"})["item"]
        assert resolved["state"] == "dismissed"


@pytest.mark.needs_root
def test_a_writer_left_behind_by_an_exited_shell_is_frozen(env):
    d, ws, _link = env
    out = short_tmp("left-") / "out"
    child = f"sleep 1.5; echo evil > .git/hooks/post-checkout; while :; do echo y >> {out}; sleep 0.01; done"
    with d.operator() as op:
        # (the shell lingers a moment: a child that has not called setsid yet when the
        # terminal's controlling process exits would get its SIGHUP)
        sid = new(op, ws, ["sh", "-c", f"setsid -f sh -c '{child}' </dev/null >/dev/null 2>&1; sleep 0.3"])[
            "id"
        ]
        wait_for(lambda: op.call("sessions.get", {"session": sid})["session"]["status"] == "exited")
        event = protected_event(op, ".git/hooks/post-checkout")
        assert [a["id"] for a in event["attribution"]] == [sid], event["attribution"]
        item = wait_for(lambda: items_of(op, sid))[0]
        assert item["state"] == "paused" and item["stop_mode"] == "cgroup freeze"
        assert wait_for(lambda: op.call("tripwire.list")["items"][0]["stopped"] is True)
        before = out.stat().st_size if out.exists() else 0
        time.sleep(0.5)
        assert (out.stat().st_size if out.exists() else 0) == before
        op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})
        time.sleep(0.3)
        after = out.stat().st_size if out.exists() else 0
        time.sleep(0.3)
        assert (out.stat().st_size if out.exists() else 0) == after  # gone, not resumed
