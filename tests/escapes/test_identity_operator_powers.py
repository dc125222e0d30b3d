"""Operator-only powers from agent.sock: resuming a tripwire pause, the full status (findings 2, 3)."""

from __future__ import annotations

import json
import time

import psutil
import pytest
from support.daemon import operation, running_daemon, wait_for, workspace

from console.client import RPCError
from console.sessions.cgroups import pid_frozen

pytestmark = pytest.mark.needs_bwrap

FORBIDDEN = -32009


def stopped(pid: int) -> bool:
    """SIGSTOPped (process walk) or in a frozen cgroup (cgroup freeze)."""
    return psutil.Process(pid).status() == psutil.STATUS_STOPPED or pid_frozen(pid)


def test_agent_cannot_resume_or_kill_its_tripwire_pause():
    ws = workspace()
    (ws / ".env").write_text("TOKEN=old\n")
    policy = (
        'tripwire = "pause"\napproval_timeout_s = 20\n'
        f"watch = {json.dumps([str(ws)])}\nworkspaces = {json.dumps([str(ws)])}\n"
    )
    with running_daemon(policy) as d:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
        with d.agent() as agent:
            answer = agent.call(
                "operation.submit",
                {
                    "operation": operation(
                        ws,
                        kind="shell",
                        executable="bash",
                        args=["--norc", "--noprofile"],
                        mode="durable",
                        workspace_access="write",
                    )
                },
            )
            if answer["verdict"] != "allow":
                with d.operator() as op:
                    rid = wait_for(lambda: op.call("pending.list")["pending"])[0]["request_id"]
                    op.call("decide", {"target": rid, "action": "approve"})
            sid = answer["session"]["id"]
            agent.call(
                "sessions.input",
                {
                    "session": sid,
                    # Existing protected files are read-only in the sandbox; creating a
                    # protected name (.envrc) is what the tripwire is left to catch.
                    "text": "sleep 0.5; echo x > .envrc; while true; do date +%s%N > tick; sleep 0.1; done\n",
                },
            )
            with d.operator() as op:
                item = wait_for(lambda: op.call("tripwire.list")["items"], timeout_s=20)[0]
                pid = op.call("sessions.get", {"session": sid})["session"]["pid"]
            assert wait_for(lambda: stopped(pid))
            for signal in ("CONT", "SIGCONT", "KILL", "TERM", "INT"):
                with pytest.raises(RPCError) as info:
                    agent.call("sessions.signal", {"session": sid, "signal": signal})
                assert info.value.code == FORBIDDEN and "tripwire" in info.value.message
            with pytest.raises(RPCError) as info:
                agent.call("sessions.kill", {"session": sid, "grace_s": 0})
            assert info.value.code == FORBIDDEN
            with pytest.raises(RPCError) as info:
                agent.call("tripwire.resolve", {"id": item["id"], "action": "resume"})
            assert info.value.code == -32601
            time.sleep(0.3)
            assert stopped(pid)  # still stopped
            assert agent.call("sessions.get", {"session": sid})["session"]["status_text"].startswith(
                "paused by tripwire ("
            )
        with d.operator() as op:
            op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})


def test_agent_status_is_a_reduced_view():
    ws = workspace()
    policy = f'watch = {json.dumps([str(ws)])}\nprotected = ["secret-plans/**"]\n'
    with running_daemon(policy) as d:
        with d.agent() as agent:
            mine = agent.call("daemon.status")
        with d.operator() as op:
            full = op.call("daemon.status")
    text = json.dumps(mine)
    assert str(ws) not in text and "secret-plans" not in text
    assert str(d.state_dir) not in text
    for key in ("watch", "state_dir", "runtime_dir", "connections", "agents"):
        assert key not in mine
    assert set(mine["policy"]) == {"sandbox", "network", "approval", "approval_timeout_s"}
    assert mine["view"] == "agent" and mine["agent"]["id"].startswith("a-")
    # The operator still sees everything.
    assert str(ws) in json.dumps(full["watch"]) or str(ws) in json.dumps(full["policy"])
