"""The approval broker through the real daemon: submit, decide, grants, timeouts, races."""

from __future__ import annotations

import threading
import time

import pytest
from support.daemon import (
    operation,
    running_daemon,
    submit_in_thread,
    trusting_test_workspaces,
    wait_for,
    workspace,
)

from console.client import RPCError

NET = {"network": "any"}


@pytest.fixture
def ws():
    return workspace()


def pending_ids(d):
    with d.operator() as op:
        return [p["request_id"] for p in op.call("pending.list")["pending"]]


def wait_pending(d, count=1):
    return wait_for(lambda: (ids := pending_ids(d)) and len(ids) >= count and ids)


def test_within_ceiling_is_allowed_at_once(daemon, ws):
    with daemon.agent() as agent:
        answer = agent.submit(operation(ws, args=["x"]))
    assert answer["verdict"] == "allow"
    assert answer["source"] == "policy"
    assert answer["reason"] == "within_ceiling"
    assert answer["authorization"]["fingerprint"] == answer["fingerprint"]


def test_escalation_waits_then_operator_approves(daemon, ws):
    result = submit_in_thread(
        daemon, operation(ws, args=["approve-me"], **NET, justification="needs the network")
    )
    [rid] = wait_pending(daemon)
    with daemon.operator() as op:
        item = op.call("pending.list")["pending"][0]
        assert item["operation"]["justification"] == "needs the network"
        assert [e["kind"] for e in item["evaluation"]["escalations"]] == ["external_network"]
        decided = op.call("decide", {"target": rid, "action": "approve", "note": "ok once"})
    assert decided["decided"] == [rid]
    answer = result()
    assert (answer["verdict"], answer["source"], answer["reason"], answer["note"]) == (
        "allow",
        "operator",
        "operator_approved",
        "ok once",
    )
    # The decision is in the history.
    with daemon.operator() as op:
        rows = op.call("history.query", {"request_id": rid})["rows"]
    assert rows[0]["verdict"] == "allow" and rows[0]["source"] == "operator"


def test_operator_deny_with_reason_reaches_the_agent(daemon, ws):
    result = submit_in_thread(daemon, operation(ws, args=["deny-me"], **NET))
    [rid] = wait_pending(daemon)
    with daemon.operator() as op:
        op.call("decide", {"target": rid, "action": "deny", "reason": "use the mirror instead"})
    answer = result()
    assert answer["verdict"] == "deny"
    assert answer["reason"] == "use the mirror instead"
    assert answer["denials"][0]["capability"]["kind"] == "external_network"
    assert answer["denials"][0]["source"] == "approval"


def test_two_operators_exactly_one_wins(daemon, ws):
    result = submit_in_thread(daemon, operation(ws, args=["race"], **NET))
    [rid] = wait_pending(daemon)
    outcomes = []
    barrier = threading.Barrier(2)

    def decide(action):
        with daemon.operator() as op:
            barrier.wait()
            try:
                outcomes.append(("ok", op.call("decide", {"target": rid, "action": action})["verdict"]))
            except RPCError as exc:
                outcomes.append(("err", exc.code))

    threads = [threading.Thread(target=decide, args=(a,)) for a in ("approve", "deny")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    oks = [o for o in outcomes if o[0] == "ok"]
    errs = [o for o in outcomes if o[0] == "err"]
    assert len(oks) == 1 and errs == [("err", -32003)]
    assert result()["verdict"] == oks[0][1]


def test_standing_grant_settles_identical_waiting_requests_and_future_ones(daemon, ws):
    op_ = operation(ws, args=["same"], **NET, session_id="s1")
    first, second = submit_in_thread(daemon, op_), submit_in_thread(daemon, op_)
    ids = wait_pending(daemon, 2)
    with daemon.operator() as op:
        decided = op.call(
            "decide", {"target": ids[0], "action": "approve", "scope": "always", "expires_in_s": 3600}
        )
    assert sorted(decided["decided"]) == sorted(ids)
    assert first()["scope"] == "always" and second()["verdict"] == "allow"
    with daemon.agent() as agent:
        again = agent.submit(op_)
    assert (again["verdict"], again["source"], again["reason"]) == ("allow", "grant", "grant_always")
    with daemon.operator() as op:
        grants = op.call("grants.list")["grants"]
        mine = [g for g in grants if g["fingerprint"] == again["fingerprint"]]
        assert mine and mine[0]["expires_at"] is not None
        op.call("grants.revoke", {"target": mine[0]["id"]})
    result = submit_in_thread(daemon, op_)
    wait_pending(daemon)
    with daemon.operator() as op:
        op.call("decide", {"target": op.call("pending.list")["pending"][0]["request_id"], "action": "deny"})
    assert result()["verdict"] == "deny"


def test_session_grant_only_for_that_session(daemon, ws):
    """A session grant belongs to the agent identity that asked, whatever label it sends."""
    mine = operation(ws, args=["sess"], **NET, session_id="alpha")
    with daemon.agent() as first:
        identity = first.hello["agent"]
    box: dict = {}

    def ask():
        with daemon.agent() as agent:
            agent.call("hello", {"agent_id": identity["id"], "agent_secret": identity["secret"]})
            box["answer"] = agent.submit(mine)

    t = threading.Thread(target=ask, daemon=True)
    t.start()
    [rid] = wait_pending(daemon)
    with daemon.operator() as op:
        op.call("decide", {"target": rid, "action": "approve", "scope": "session"})
    t.join(20)
    assert box["answer"]["verdict"] == "allow"
    with daemon.agent() as agent:
        agent.call("hello", {"agent_id": identity["id"], "agent_secret": identity["secret"]})
        assert agent.submit(mine)["reason"] == "grant_session"
        # Another label from the same agent is still the same agent.
        assert agent.submit(dict(mine, session_id="beta"))["reason"] == "grant_session"
    with daemon.agent() as other:
        # Another agent naming the same label gets nothing.
        denied = other.submit(mine, timeout_s=0.3)
    assert (denied["verdict"], denied["reason"]) == ("deny", "approval_timeout")


def test_once_grant_is_consumed_by_exactly_one_of_many(daemon, ws):
    op_ = operation(ws, args=["once"], **NET)
    with daemon.agent() as agent:
        # Learn the fingerprint from a first request that times out quickly.
        fp = agent.submit(op_, timeout_s=0.2)["fingerprint"]
    with daemon.operator() as op:
        op.call("grants.add", {"fingerprint": fp, "scope": "once"})
    answers = [submit_in_thread(daemon, op_, timeout_s=2) for _ in range(8)]
    results = [r() for r in answers]
    allowed = [r for r in results if r["verdict"] == "allow"]
    assert len(allowed) == 1
    assert allowed[0]["reason"] == "grant_once"
    assert all(r["reason"] == "approval_timeout" for r in results if r["verdict"] == "deny")


def test_deny_always_becomes_a_deny_rule(daemon, ws):
    op_ = operation(ws, args=["never-again"])  # within the ceiling: policy alone would allow
    with daemon.agent() as agent:
        assert agent.submit(op_)["verdict"] == "allow"
        fp = agent.submit(op_)["fingerprint"]
    with daemon.operator() as op:
        op.call("grants.add", {"fingerprint": fp, "effect": "deny", "scope": "always", "note": "no"})
    with daemon.agent() as agent:
        answer = agent.submit(op_)
    assert (answer["verdict"], answer["reason"], answer["source"]) == ("deny", "deny_rule", "grant")
    assert answer["denials"][0]["source"] == "configured_policy"


def test_timeout_is_a_deny_recorded_as_timeout(daemon, ws):
    with daemon.agent() as agent:
        answer = agent.submit(operation(ws, args=["slow"], **NET), timeout_s=0.3)
    assert (answer["verdict"], answer["reason"], answer["source"]) == ("deny", "approval_timeout", "timeout")
    with daemon.operator() as op:
        row = op.call("history.query", {"request_id": answer["request_id"]})["rows"][0]
    assert row["source"] == "timeout"


def test_agent_disconnect_cancels_and_records(daemon, ws):
    agent = daemon.agent()
    agent._sock.sendall(
        b'{"jsonrpc":"2.0","id":9,"method":"operation.submit","params":{"operation":'
        + __import__("json").dumps(operation(ws, args=["gone"], **NET)).encode()
        + b"}}\n"
    )
    [rid] = wait_pending(daemon)
    agent.close()
    wait_for(lambda: rid not in pending_ids(daemon))
    with daemon.operator() as op:
        row = wait_for(lambda: op.call("history.query", {"request_id": rid})["rows"])[0]
        assert (row["verdict"], row["source"], row["reason"]) == ("deny", "cancel", "agent_disconnected")
        with pytest.raises(RPCError) as info:
            op.call("decide", {"target": rid, "action": "approve"})
        assert info.value.code == -32003


def test_agent_can_cancel_its_own_request_only(daemon, ws):
    with daemon.agent() as a, daemon.agent() as b:
        a._sock.sendall(
            b'{"jsonrpc":"2.0","id":5,"method":"operation.submit","params":{"operation":'
            + __import__("json").dumps(operation(ws, args=["cancel"], **NET)).encode()
            + b"}}\n"
        )
        [rid] = wait_pending(daemon)
        with pytest.raises(RPCError):
            b.call("operation.cancel", {"request_id": rid})
        assert a.call("operation.cancel", {"request_id": rid}) == {"cancelled": rid}


def test_agent_socket_cannot_decide(daemon):
    with daemon.agent() as agent:
        for method in ("decide", "pending.list", "grants.list", "history.query", "subscribe"):
            with pytest.raises(RPCError) as info:
                agent.call(method, {})
            assert info.value.code == -32601


def test_operator_needs_the_token(daemon):
    import socket

    s = socket.socket(socket.AF_UNIX)
    s.connect(str(daemon.loc.operator_socket))
    s.sendall(
        b'{"jsonrpc":"2.0","id":1,"method":"pending.list"}\n{"jsonrpc":"2.0","id":2,"method":"hello","params":{"token":"nope"}}\n'
    )
    data = b""
    while data.count(b"\n") < 2:
        data += s.recv(4096)
    s.close()
    assert data.count(b"-32001") == 2


def test_invalid_operation_is_a_problem_without_the_value(daemon, ws):
    with daemon.agent() as agent, pytest.raises(RPCError) as info:
        agent.submit(operation(ws, executable="SECRET-NOT-A-COMMAND"))
    assert info.value.code == -32602
    assert info.value.data["problem"]["reason"] == "executable_not_found"
    assert "SECRET" not in info.value.message


def test_events_reach_subscribers(daemon, ws):
    with daemon.operator() as op:
        op.subscribe(["pending", "decided"])
        result = submit_in_thread(daemon, operation(ws, args=["evt"], **NET))
        event = op.next_event()
        assert event["topic"] == "pending"
        rid = event["request"]["request_id"]
        op.call("decide", {"target": rid, "action": "deny"})
        while (event := op.next_event())["topic"] != "decided":
            continue  # other events may come first
        assert event["request_id"] == rid
    assert result()["verdict"] == "deny"


def test_policy_reload_and_broken_policy_keeps_last_good(tmp_path):
    with running_daemon('approval = "never"\n') as d:
        ws = workspace()
        with d.agent() as agent:
            assert agent.submit(operation(ws, **NET))["reason"] == "escalation_denied_by_policy"
        d.loc.policy.write_text(trusting_test_workspaces('network = "any"\n'))
        time.sleep(1.5)
        with d.agent() as agent:
            assert agent.submit(operation(ws, **NET))["reason"] == "within_ceiling"
        d.loc.policy.write_text('network = "sometimes"\n')

        def error():
            with d.operator() as op:
                return op.call("daemon.status")["policy"]["error"]

        msg = wait_for(error)
        assert "network" in msg and "keeping the last good policy" in msg
        with d.agent() as agent:
            assert agent.submit(operation(ws, **NET))["reason"] == "within_ceiling"


def test_pending_list_pages_oldest_first(daemon, ws):
    results = [
        submit_in_thread(daemon, operation(ws, args=[f"page{i}"], **NET), timeout_s=20) for i in range(5)
    ]
    wait_pending(daemon, 5)
    with daemon.operator() as op:
        seen, params = [], {"limit": 2}
        while True:
            page = op.call("pending.list", params)
            assert page["count"] == 5 and len(page["pending"]) <= 2
            seen.extend(p["operation"]["args"][0] for p in page["pending"])
            if not page["next"]:
                break
            params["after"] = page["next"]
        assert sorted(seen) == [f"page{i}" for i in range(5)]
        submitted = [p["submitted_at"] for p in op.call("pending.list")["pending"]]
        assert submitted == sorted(submitted)
        with pytest.raises(RPCError) as info:
            op.call("pending.list", {"after": "r-gone"})
        assert info.value.code == -32002
        for p in op.call("pending.list")["pending"]:
            op.call("decide", {"target": p["request_id"], "action": "deny"})
    assert all(r()["verdict"] == "deny" for r in results)
