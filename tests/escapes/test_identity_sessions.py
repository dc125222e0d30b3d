"""Agent A tries to reach agent B's PTY sessions by every id it can send (finding 1).

Before identities, a session belonged to ``agent:<session_id>`` or ``agent:conn-N`` and
``hello {"session_id": X}`` claimed it; A enumerated conn-1…conn-N and took B's
sessions, including one the operator approved with network access.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.abuse import in_thread, same_agent
from support.daemon import operation, running_daemon, wait_for, workspace

from console.client import RPCError

pytestmark = pytest.mark.needs_bwrap

NOT_FOUND = -32002
UNAUTHORIZED = -32001


@pytest.fixture(scope="module")
def ws():
    return workspace()


@pytest.fixture(scope="module")
def daemon(ws):
    with running_daemon(f"approval_timeout_s = 20\nworkspaces = {json.dumps([str(ws)])}\n") as d:
        yield d


def shell(ws, label, **kw):
    return operation(
        ws, kind="shell", executable="bash", args=["--norc", "--noprofile"], session_id=label, **kw
    )


def b_session_with_network(daemon, ws):
    """Agent B: a durable shell with network access, approved by the operator."""
    b = daemon.agent()
    identity = b.hello["agent"]
    answer = in_thread(
        lambda: b.call("operation.submit", {"operation": shell(ws, "b-label", mode="durable", network="any")})
    )
    with daemon.operator() as op:
        pending = wait_for(lambda: op.call("pending.list")["pending"])
        assert pending[0]["agent_id"] == identity["id"]
        op.call("decide", {"target": pending[0]["request_id"], "action": "approve"})
    sid = answer()["session"]["id"]
    return b, identity, sid


SESSION_CALLS = [
    ("sessions.get", {}),
    ("sessions.attach", {}),
    ("sessions.input", {"text": "echo pwned\n"}),
    ("sessions.resize", {"cols": 80, "rows": 20}),
    ("sessions.signal", {"signal": "TERM"}),
    ("sessions.kill", {"grace_s": 0}),
    ("sessions.read", {}),
    ("sessions.screen", {}),
    ("sessions.wait", {"timeout_s": 0}),
    ("sessions.detach", {}),
]


def assert_locked_out(client, sid):
    assert client.call("sessions.list")["sessions"] == []
    for method, params in SESSION_CALLS:
        with pytest.raises(RPCError) as info:
            client.call(method, {"session": sid, **params})
        assert info.value.code == NOT_FOUND, method


def test_enumerating_connection_ids_and_labels_claims_no_session(daemon, ws):
    b, identity, sid = b_session_with_network(daemon, ws)
    try:
        with daemon.agent() as a:
            # Every old bearer string: conn-1…conn-300, B's label, B's agent id as a label.
            for n in range(1, 301):
                a.call("hello", {"session_id": f"conn-{n}"})
            a.call("hello", {"session_id": "b-label"})
            a.call("hello", {"session_id": identity["id"]})
            assert_locked_out(a, sid)
            assert a.call("daemon.status")["sessions"] == {"running": 0, "total": 0}
        with daemon.operator() as op:
            assert op.call("sessions.get", {"session": sid})["session"]["status"] != "exited"
    finally:
        b.call("sessions.kill", {"session": sid, "grace_s": 0})
        b.close()


def test_naming_an_identity_without_its_secret_is_refused(daemon, ws):
    b, identity, sid = b_session_with_network(daemon, ws)
    try:
        for guess in (
            "",
            "x" * 43,
            identity["secret"][:-1] + ("A" if identity["secret"][-1] != "A" else "B"),
        ):
            with daemon.agent() as a:
                with pytest.raises(RPCError) as info:
                    a.call("hello", {"agent_id": identity["id"], "agent_secret": guess or "short"})
                assert info.value.code in (UNAUTHORIZED, -32602)
                assert_locked_out(a, sid)
        # The secret itself works: that is the agent reconnecting.
        with same_agent(daemon, identity) as again:
            assert [s["id"] for s in again.call("sessions.list")["sessions"]] == [sid]
    finally:
        b.call("sessions.kill", {"session": sid, "grace_s": 0})
        b.close()


def test_a_connection_that_acted_cannot_switch_identity(daemon, ws):
    b, identity, sid = b_session_with_network(daemon, ws)
    try:
        with daemon.agent() as a:
            a.call("sessions.list")
            with pytest.raises(RPCError) as info:
                a.call("hello", {"agent_id": identity["id"], "agent_secret": identity["secret"]})
            assert info.value.code == -32006
            assert_locked_out(a, sid)
    finally:
        b.call("sessions.kill", {"session": sid, "grace_s": 0})
        b.close()


CHILD = r"""
import json, os, subprocess, sys
from console.client import Client
state = sys.argv[1]
mode = sys.argv[2]
if mode == "root":
    # The agent process: its identity is its process tree.
    with Client.connect(state, role="agent") as c:
        me = c.call("hello", {"agent_pid": os.getpid()})["agent"]
    # A per-call helper it starts (like a hook) is the same agent, with no credentials.
    out = subprocess.run([sys.executable, "-c", sys.argv[3], state, "plain"], capture_output=True, text=True)
    print(json.dumps({"me": me, "child": json.loads(out.stdout)}))
elif mode == "plain":
    with Client.connect(state, role="agent") as c:
        print(json.dumps(c.hello["agent"]))
elif mode == "name":
    with Client.connect(state, role="agent") as c:
        try:
            print(json.dumps(c.call("hello", {"agent_pid": int(sys.argv[3])})["agent"]))
        except Exception as exc:
            print(json.dumps({"error": getattr(exc, "code", str(exc))}))
"""


def run_child(daemon, *args, **kw):
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(daemon.state_dir), *args],
        capture_output=True,
        text=True,
        timeout=60,
        **kw,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_processes_of_one_agent_share_its_identity_and_others_cannot_join(daemon):
    got = run_child(daemon, "root", CHILD)
    assert got["child"]["id"] == got["me"]["id"]
    assert got["child"]["bound_by"] == "process_tree"
    # An unrelated process gets an identity of its own...
    assert run_child(daemon, "plain")["id"] != got["me"]["id"]
    # ...and cannot name a process it does not descend from (here a live sibling).
    sibling = subprocess.Popen(["sleep", "30"])
    try:
        assert run_child(daemon, "name", str(sibling.pid)) == {"error": UNAUTHORIZED}
    finally:
        sibling.kill()
        sibling.wait()


def test_a_session_leader_cannot_be_named_as_agent(daemon):
    """A shell that leads a terminal session is an ancestor of every agent started from
    it; naming it would pull them all into one identity."""
    from ptyprocess import PtyProcessUnicode

    code = "import os,sys; os.execv(sys.executable, [sys.executable, '-c', sys.argv[1], sys.argv[2], 'name', str(os.getpid())])"
    # ptyprocess starts it as the leader of a new session with the pty as its terminal.
    proc = PtyProcessUnicode.spawn([sys.executable, "-c", code, CHILD, str(daemon.state_dir)])
    out = ""
    try:
        while "}" not in out:
            out += proc.read(4096)
    except EOFError:
        pass
    finally:
        proc.close(force=True)
    assert json.loads(out[out.index("{") : out.rindex("}") + 1]) == {"error": UNAUTHORIZED}


def test_an_agent_that_leads_a_session_of_its_own_without_a_terminal_is_one_identity(daemon):
    """`setsid claude -p`: a detached agent leads its own session; it may name itself, and
    the per-call clients it starts (in sessions of their own, as Claude Code's hooks are)
    are that agent."""
    code = (
        "import os,sys,subprocess,json; from console.client import Client\n"
        "with Client.connect(sys.argv[2], role='agent') as c:\n"
        "    me = c.call('hello', {'agent_pid': os.getpid()})['agent']\n"
        "child = subprocess.run(['setsid', sys.executable, '-c', sys.argv[3], sys.argv[2]],"
        " capture_output=True, text=True)\n"
        "print(json.dumps({'me': me, 'child': json.loads(child.stdout)}))"
    )
    per_call = (
        "import sys,json; from console.client import Client; from console.protocol.procs import agent_process_pid\n"
        "with Client.connect(sys.argv[1], role='agent', agent_pid=agent_process_pid(), per_call=True) as c:\n"
        "    print(json.dumps(c.hello['agent']))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(daemon.state_dir), str(daemon.state_dir), per_call],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    got = json.loads(out.stdout)
    assert got["me"]["bound_by"] == "process"
    assert got["child"]["id"] == got["me"]["id"] and got["child"]["anonymous"] is False
