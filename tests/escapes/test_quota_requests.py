"""Agents that make the daemon hold or store too much through requests (finding 5).

Before: a subscriber that stopped reading with 1 MiB justifications queued took the
daemon from 68 to 633 MiB (its cap was in frames); 30 auto-allowed requests with 1 MiB
justifications added 105 MiB of history in 3 s, and one history page then weighed
189 MiB; ``request.get`` with ``request_id ""`` returned a 766 MB frame.
"""

from __future__ import annotations

import base64
import json

import pytest
from support.abuse import frame, hung_up, in_thread, raw, rss_kib
from support.daemon import operation, running_daemon, wait_for, workspace

from console.client import RPCError

MiB = 1024 * 1024
QUOTA = -32008


@pytest.fixture(scope="module")
def ws():
    return workspace()


@pytest.fixture(scope="module")
def daemon(ws):
    with running_daemon(f"approval_timeout_s = 30\nworkspaces = {json.dumps([str(ws)])}\n") as d:
        yield d


def quota(info):
    assert info.value.code == QUOTA, info.value.message
    return info.value.data["quota"]


def test_huge_justifications_and_operations_are_refused_and_not_stored(daemon, ws):
    with daemon.agent() as agent:
        for _ in range(30):
            with pytest.raises(RPCError) as info:
                agent.submit(operation(ws, justification="j" * MiB))
            assert quota(info) == "justification_chars"
        with pytest.raises(RPCError) as info:
            agent.submit(operation(ws, args=["a" * MiB, "b" * MiB]))
        assert quota(info) == "command_chars"
        with pytest.raises(RPCError) as info:
            agent.submit(
                operation(ws, args=["a" * 1000 * 1024], stdin=base64.b64encode(b"c" * (1000 * 1024)).decode())
            )
        assert quota(info) == "operation_bytes"
        # A reasonable request from the same agent still goes through.
        assert agent.submit(operation(ws, justification="why"))["verdict"] == "allow"
    with daemon.operator() as op:
        rows = op.call("history.query", {"kinds": ["request"], "search": "jjjjjjjj", "limit": 5})["rows"]
        assert rows == []


def test_history_bytes_per_minute_per_agent(daemon, ws):
    big = ["b" * (500 * 1024), "c" * (500 * 1024)]
    with daemon.agent() as agent:
        answers = []
        refusal = None
        for i in range(12):
            try:
                answers.append(agent.submit(operation(ws, args=[*big, str(i)]))["verdict"])
            except RPCError as exc:
                refusal = exc
                break
        assert refusal is not None, "12 requests of 2 MiB went through in under a minute"
        assert refusal.code == QUOTA and refusal.data["quota"] == "history_bytes_per_minute"
        assert answers and set(answers) == {"allow"}
    # Another agent is not held back by this one's quota.
    with daemon.agent() as other:
        assert other.submit(operation(ws, args=["small"]))["verdict"] == "allow"
    with daemon.operator() as op:
        notes = {r["note"] for r in op.call("history.query", {"kinds": ["daemon"], "limit": 50})["rows"]}
        assert "quota: history_bytes_per_minute" in notes
        # A row too big to send whole has its body elided, saying so.
        elided, cursor = [], None
        while len(elided) < len(answers):
            params = {"kinds": ["request"], "limit": 20, **({"before_seq": cursor} if cursor else {})}
            page = op.call("history.query", params)
            elided += [r for r in page["rows"] if r.get("elided")]
            cursor = page["older"]
            assert cursor is not None or len(elided) == len(answers)
        assert all(r["body"] == {} and r["elided_bytes"] > MiB for r in elided)
    with daemon.agent() as other:
        for i in range(15):
            assert other.submit(operation(ws, args=["m" * (90 * 1024), str(i)]))["verdict"] == "allow"
    with daemon.operator() as op:
        # Pages are bounded in bytes: fewer rows than asked, and a cursor to go on.
        seen, cursor, pages = [], None, 0
        while True:
            params = {"kinds": ["request"], "limit": 200, **({"before_seq": cursor} if cursor else {})}
            page = op.call("history.query", params)
            assert len(json.dumps(page)) < 4 * MiB
            seen += [r["seq"] for r in page["rows"]]
            pages += 1
            cursor = page["older"]
            if cursor is None:
                break
        assert pages > 1 and len(seen) == len(set(seen)) and seen == sorted(seen, reverse=True)


def test_ids_are_validated_never_matched_as_prefixes(daemon):
    with daemon.operator() as op:
        for method, params in [
            ("request.get", {"request_id": ""}),
            ("request.get", {"request_id": "r-"}),
            ("request.get", {"request_id": "%"}),
            ("history.detail", {"request_id": ""}),
            ("history.query", {"request_id": ""}),
            ("history.query", {"fingerprint": ""}),
            ("history.query", {"fingerprint": "abc"}),
            ("sessions.get", {"session": ""}),
            ("sessions.get", {"session": "../x"}),
            ("grants.revoke", {"target": ""}),
            ("decide", {"target": "", "action": "deny"}),
        ]:
            with pytest.raises(RPCError) as info:
                op.call(method, params)
            assert info.value.code == -32602, (method, params, info.value.message)
        with pytest.raises(RPCError) as info:
            op.call("request.get", {"request_id": "r-zzz-1"})
        assert info.value.code == -32002
    with daemon.agent() as agent:
        with pytest.raises(RPCError) as info:
            agent.call("operation.cancel", {"request_id": ""})
        assert info.value.code == -32602


def test_a_subscriber_that_stops_reading_is_dropped_by_bytes(ws):
    with running_daemon(f"approval_timeout_s = 60\nworkspaces = {json.dumps([str(ws)])}\n") as d:
        before = rss_kib(d.proc.pid)
        stuck = raw(d.loc.operator_socket)
        token = d.loc.token.read_text().strip()
        stuck.sendall(frame(1, "hello", {"token": token}) + frame(2, "subscribe", {"topics": ["pending"]}))
        # ...and never reads again. Ten agents each queue three 0.8 MiB requests in turn
        # (each waits briefly, then times out): 30 pending events of about 1.6 MiB.

        def asks(agent, n):
            answers = []
            for k in range(3):
                args = ["p" * (400 * 1024), "q" * (400 * 1024), f"{n}-{k}"]
                answers.append(agent.submit(operation(ws, args=args, network="any"), timeout_s=0.3))
            return answers

        agents = [d.agent() for _ in range(10)]
        results = [in_thread(lambda a=a, n=n: asks(a, n)) for n, a in enumerate(agents)]
        for r in results:
            assert [x["reason"] for x in r(120)] == ["approval_timeout"] * 3
        for a in agents:
            a.close()
        peak = rss_kib(d.proc.pid)
        with d.operator() as op:
            assert wait_for(
                lambda: (
                    "quota: queued_bytes"
                    in {
                        r["note"]
                        for r in op.call("history.query", {"kinds": ["daemon"], "limit": 50})["rows"]
                    }
                )
            )
            # The daemon serves on; the stuck subscriber is gone.
            assert op.call("pending.list")["count"] == 0
        stuck.settimeout(30)
        assert hung_up(stuck)
        stuck.close()
        assert peak - before < 200 * 1024, (before, peak)


def test_watch_remove_frees_a_root(ws, tmp_path):
    root = tmp_path / "big"
    for i in range(20):
        (root / f"d{i}").mkdir(parents=True)
    with running_daemon() as d:
        with d.operator() as op:
            op.call("watch.add", {"workspace_root": str(root)})
            assert str(root) in json.dumps(op.call("watch.status"))
            op.call("watch.remove", {"workspace_root": str(root)})
            assert str(root) not in json.dumps(op.call("watch.status")["roots"])
            with pytest.raises(RPCError) as info:
                op.call("watch.remove", {"workspace_root": str(root)})
            assert info.value.code == -32002
            op.call("watch.add", {"workspace_root": str(root)})
        r = d.cli("watch", "remove", str(root))
        assert r.returncode == 0, r.stderr
        assert "no longer watching" in r.stdout
        r = d.cli("watch", "remove", str(root))
        assert r.returncode == 2 and "not watched" in r.stderr
        with d.agent() as agent, pytest.raises(RPCError) as info:
            agent.call("watch.remove", {"workspace_root": str(root)})
        assert info.value.code == -32601


def test_bounded_pages_walk_the_history_both_ways_like_before(daemon, ws):
    """Size-bounded paging keeps the cursor contract: older pages, then newer ones back."""
    with daemon.agent() as agent:
        for i in range(30):
            agent.submit(operation(ws, args=[f"walk-{i}"]))
    with daemon.operator() as op:
        q = {"kinds": ["decision"], "search": "walk-"}
        everything = [r["seq"] for r in op.call("history.query", {**q, "limit": 100})["rows"]]
        assert len(everything) == 30
        older, seen = None, []
        while True:
            page = op.call("history.query", {**q, "limit": 7, **({"before_seq": older} if older else {})})
            seen += [r["seq"] for r in page["rows"]]
            older = page["older"]
            if older is None:
                break
        assert seen == everything
        newer, back = everything[-1] - 1, []
        while newer is not None:
            page = op.call("history.query", {**q, "limit": 7, "after_seq": newer})
            back = [r["seq"] for r in page["rows"]] + back
            newer = page["newer"]
        assert back == everything
