"""Agent A tries to use agent B's session grant and to see or cancel B's requests (finding 1)."""

from __future__ import annotations

import json

import pytest
from support.abuse import in_thread, same_agent
from support.daemon import operation, running_daemon, wait_for, workspace

from console.client import RPCError

NET = {"network": "any"}


@pytest.fixture(scope="module")
def ws():
    return workspace()


@pytest.fixture(scope="module")
def daemon(ws):
    with running_daemon(f"approval_timeout_s = 20\nworkspaces = {json.dumps([str(ws)])}\n") as d:
        yield d


def test_session_grant_does_not_leak_to_another_agent_by_label(daemon, ws):
    op_ = operation(ws, args=["granted"], session_id="shared-label", **NET)
    b = daemon.agent()
    identity = b.hello["agent"]
    answer = in_thread(lambda: b.submit(op_))
    with daemon.operator() as op:
        [item] = wait_for(lambda: op.call("pending.list")["pending"])
        op.call("decide", {"target": item["request_id"], "action": "approve", "scope": "session"})
        grant = next(g for g in op.call("grants.list")["grants"] if g["fingerprint"] == item["fingerprint"])
    assert answer()["verdict"] == "allow"
    # The grant names the identity the daemon issued, not the label.
    assert grant["session_id"] == identity["id"]
    assert b.submit(op_)["reason"] == "grant_session"
    b.close()
    with same_agent(daemon, identity) as again:
        assert again.submit(op_)["reason"] == "grant_session"
    for label in ("shared-label", identity["id"], "conn-1"):
        with daemon.agent() as a:
            a.call("hello", {"session_id": label})
            other = a.submit(dict(op_, session_id=label), timeout_s=0.3)
        assert (other["verdict"], other["reason"]) == ("deny", "approval_timeout")


def test_agent_cannot_see_or_cancel_another_agents_request(daemon, ws):
    b = daemon.agent()
    answer = in_thread(lambda: b.submit(operation(ws, args=["b-waits"], **NET), timeout_s=20))
    with daemon.operator() as op:
        [item] = wait_for(lambda: op.call("pending.list")["pending"])
    rid = item["request_id"]
    with daemon.agent() as a:
        for method in ("pending.list", "request.get", "history.query", "history.detail", "grants.list"):
            with pytest.raises(RPCError) as info:
                a.call(method, {"request_id": rid} if method in ("request.get", "history.detail") else {})
            assert info.value.code == -32601, method
        with pytest.raises(RPCError) as info:
            a.call("operation.cancel", {"request_id": rid})
        assert info.value.code == -32002
        assert a.call("daemon.status")["pending"] == 0
    with daemon.operator() as op:
        assert [p["request_id"] for p in op.call("pending.list")["pending"]] == [rid]
    # B itself may cancel it, from any of its connections.
    with same_agent(daemon, b.hello["agent"]) as b2:
        assert b2.call("operation.cancel", {"request_id": rid}) == {"cancelled": rid}
    assert answer()["reason"] == "cancelled"
    b.close()


def test_grants_add_for_a_session_needs_an_issued_identity(daemon):
    with daemon.operator() as op:
        with pytest.raises(RPCError) as info:
            op.call("grants.add", {"fingerprint": "a" * 64, "scope": "session", "session_id": "conn-1"})
        assert info.value.code == -32602 and "agent id" in info.value.message
