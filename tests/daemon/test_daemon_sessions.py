"""Sessions through the daemon: agent-owned and operator sessions, attach, ownership."""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest
from support.daemon import operation, wait_for, workspace

from console.client import RPCError

pytestmark = pytest.mark.needs_bwrap

DAEMON_POLICY = "approval_timeout_s = 20\n"


def shell_op(ws, mode="interactive", session="agent-a", **kw):
    return operation(
        ws,
        kind="shell",
        executable="bash",
        args=["--norc", "--noprofile"],
        mode=mode,
        session_id=session,
        **kw,
    )


def screen(client, sid):
    return client.call("sessions.screen", {"session": sid})["text"]


def test_approved_interactive_operation_is_a_sandboxed_session(daemon):
    ws = workspace()
    with daemon.agent() as agent:
        me = agent.hello["agent"]["id"]
        answer = agent.call("operation.submit", {"operation": shell_op(ws), "cols": 100, "rows": 30})
        assert answer["verdict"] == "allow"
        sid = answer["session"]["id"]
        assert answer["session"]["sandboxed"] is True
        agent.call(
            "sessions.input",
            {"session": sid, "text": "echo $((6*7)); touch /etc/x 2>&1 | head -1; stty size\n"},
        )
        text = wait_for(lambda: "30 100" in (t := screen(agent, sid)) and t)
        assert "42" in text
        assert "Read-only file system" in text
        out = agent.call("sessions.read", {"session": sid, "offset": 0})
        assert b"42" in base64.b64decode(out["data_base64"])
        assert out["dropped_bytes"] == 0
        listed = agent.call("sessions.list")["sessions"]
        assert [s["id"] for s in listed] == [sid]
    # The agent went away: its interactive session ends.
    with daemon.operator() as op:
        info = wait_for(
            lambda: (s := op.call("sessions.get", {"session": sid})["session"])["status"] == "exited" and s
        )
        # Owned by the identity the daemon issued, not by the session id the agent named.
        assert info["owner"] == f"agent:{me}"


def test_durable_session_outlives_its_agent_and_is_reachable_again(daemon):
    ws = workspace()
    with daemon.agent() as agent:
        identity = agent.hello["agent"]
        sid = agent.call("operation.submit", {"operation": shell_op(ws, mode="durable", session="agent-d")})[
            "session"
        ]["id"]
    time.sleep(0.5)
    with daemon.operator() as op:
        assert op.call("sessions.get", {"session": sid})["session"]["status"] in ("running", "idle")
    with daemon.agent() as stranger, pytest.raises(RPCError):
        stranger.call("sessions.screen", {"session": sid})
    from console.client import Client

    with Client.connect(daemon.loc, role="agent") as claimer:
        # Naming the agent's session id claims nothing any more.
        claimer.call("hello", {"session_id": "agent-d"})
        with pytest.raises(RPCError):
            claimer.call("sessions.screen", {"session": sid})
    with Client.connect(daemon.loc, role="agent") as again:
        again.call("hello", {"agent_id": identity["id"], "agent_secret": identity["secret"]})
        again.call("sessions.input", {"session": sid, "text": "echo back\n"})
        assert wait_for(lambda: "back" in screen(again, sid))
        again.call("sessions.kill", {"session": sid, "grace_s": 1})


def test_agents_cannot_reach_operator_methods_for_sessions(daemon):
    with daemon.agent() as agent:
        for method in ("sessions.new", "sessions.remove", "sessions.adopt"):
            with pytest.raises(RPCError) as info:
                agent.call(method, {"session": "x"})
            assert info.value.code == -32601


def test_operator_attach_streams_snapshot_then_output(daemon):
    with daemon.operator() as op:
        sid = op.call(
            "sessions.new", {"unconfined": True, "argv": ["bash", "--norc"], "cwd": "/tmp", "title": "t"}
        )["session"]["id"]
        time.sleep(0.3)
        att = op.call("sessions.attach", {"session": sid})
        assert att["offset"] >= 0 and att["cols"] == 120
        seen = []

        def collect(method, params):
            seen.append((method, params))

        op.call(
            "sessions.input", {"session": sid, "text": "echo streamed-$((1+1))\n"}, on_notification=collect
        )
        deadline = time.time() + 10
        data = b""
        while b"streamed-2" not in data and time.time() < deadline:
            op.call("daemon.status", on_notification=collect)
            data = b"".join(base64.b64decode(n.data_base64) for m, n in seen if m == "session.output")
            time.sleep(0.05)
        assert b"streamed-2" in data
        offsets = [n.offset for m, n in seen if m == "session.output"]
        assert offsets[0] >= att["offset"]
        op.call("sessions.kill", {"session": sid, "grace_s": 1})
        op.call("sessions.remove", {"session": sid})
        with pytest.raises(RPCError):
            op.call("sessions.get", {"session": sid})


def test_session_awaiting_approval_status(daemon):
    """A session awaits approval when a request asked from it waits (its id, as
    $AGENT_CONSOLE_SESSION gives it), not when its agent waits on something else."""
    ws = workspace()
    with daemon.agent() as agent:
        sid = agent.call("operation.submit", {"operation": shell_op(ws, session="agent-w")})["session"]["id"]
        identity = agent.hello["agent"]

        def same_agent_asks(session_id: str) -> dict:
            box: dict = {}

            def run() -> None:
                with daemon.agent() as again:
                    again.call("hello", {"agent_id": identity["id"], "agent_secret": identity["secret"]})
                    box.update(
                        a=again.submit(operation(ws, network="any", session_id=session_id), timeout_s=10)
                    )

            t = threading.Thread(target=run)
            t.start()
            box["thread"] = t
            return box

        def status() -> str:
            with daemon.operator() as op:
                return op.call("sessions.get", {"session": sid})["session"]["status_text"]

        def deny_all() -> None:
            with daemon.operator() as op:
                for item in wait_for(lambda: op.call("pending.list")["pending"]):
                    op.call("decide", {"target": item["request_id"], "action": "deny"})

        elsewhere = same_agent_asks("agent-w")  # the agent's label, not this session
        with daemon.operator() as op:
            wait_for(lambda: op.call("pending.list")["pending"])
        time.sleep(0.2)
        assert status() != "awaiting approval"  # it runs; its agent waits elsewhere
        deny_all()
        elsewhere["thread"].join(10)
        here = same_agent_asks(sid)
        wait_for(lambda: status() == "awaiting approval")
        deny_all()
        here["thread"].join(10)
        assert status() != "awaiting approval"


def test_cli_sessions_new_send_capture_kill_replay(daemon):
    r = daemon.cli("sessions", "new", "--unconfined", "--title", "cli", "--", "bash", "--norc")
    assert r.returncode == 0, r.stderr
    sid = r.stdout.strip()
    assert daemon.cli("sessions", "send", sid, "printf 'a\\033[31mred\\n'", "--enter").returncode == 0
    text = wait_for(lambda: "ared" in (c := daemon.cli("sessions", "capture", sid).stdout) and c)
    assert "\x1b" not in text
    listing = json.loads(daemon.cli("sessions", "--json").stdout)
    assert any(s["id"] == sid and s["title"] == "cli" for s in listing)
    assert "exited" in daemon.cli("sessions", "kill", sid, "--grace", "1").stdout
    r = daemon.cli("sessions", "replay", sid, "--speed", "100")
    assert r.returncode == 0 and "red" in r.stdout


def test_after_a_daemon_crash_sessions_are_lost_but_their_recording_remains():
    from support.daemon import DaemonProcess, short_tmp

    base = short_tmp()
    d = DaemonProcess(base / "s").start()
    with d.operator() as op:
        sid = op.call("sessions.new", {"unconfined": True, "argv": ["bash", "--norc"], "cwd": "/tmp"})[
            "session"
        ]["id"]
        op.call("sessions.input", {"session": sid, "text": "echo before-crash\n"})
        wait_for(
            lambda: "before-crash" in op.call("sessions.screen", {"session": sid})["text"].split("\n", 1)[-1]
        )
    time.sleep(2.5)  # recordings are flushed about once a second: a crash loses at most that
    d.kill9()
    d2 = DaemonProcess(base / "s").start()
    try:
        with d2.operator() as op:
            info = op.call("sessions.get", {"session": sid})["session"]
        assert info["status"] == "lost"
        r = d2.cli("sessions", "replay", sid, "--speed", "1000")
        assert "before-crash" in r.stdout
    finally:
        d2.stop()
