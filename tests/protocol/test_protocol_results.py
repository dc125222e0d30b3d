"""The daemon's results, typed (console/protocol/results.py), against their documentation,
the handlers, a real daemon and a peer that answers wrongly.

- one Struct per method, named after it, and each handler says it returns that Struct;
- docs/protocol.md's ``Result of`` line of every method is :func:`results.describe` of it;
- every method a real daemon serves, called for real (both views where a method has two,
  both shapes where a key is sometimes absent): each answer decodes into its Struct and
  encodes back to the same JSON, so a key the Struct lacks, one it invents, a wrong type
  or a ``null`` for an absent key all fail here;
- a client given a malformed answer raises :class:`ResultError` naming the method and
  the field, never the value, counts it, and serves the calls after it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import typing
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from support import protocol_doc
from support.daemon import (
    DaemonProcess,
    operation,
    running_daemon,
    short_tmp,
    submit_in_thread,
    wait_for,
    workspace,
)
from support.fake_daemon import HELLO, client_of, fake_daemon

from console.client import Client, ResultError, RPCError
from console.daemon.methods import all_methods
from console.protocol import invalid, jsonrpc, results
from console.protocol.requests import struct_name
from console.protocol.results import MethodResult
from console.protocol.table import ROWS
from console.protocol.tickets import read_secret

DAEMON_POLICY = "approval_timeout_s = 60\n"  # the requests below wait for a decision
FP = "ab" * 32
PARAMS = {row.name: row.params for row in ROWS}
RESULTS = {row.name: row.result for row in ROWS}
# Methods only a daemon with a working sandbox can answer for real (they run commands in
# it, or need a session stopped by the tripwire): the needs_bwrap test calls them.
SANDBOXED = {
    "operation.exec",
    "operation.hold",
    "operation.run",
    "operation.held",
    "tripwire.resolve",
    "tripwire.revert",
}


# ------------------------------------------------------------ one Struct per method


def test_every_method_has_its_result_struct_and_every_struct_a_method():
    methods = all_methods()
    assert set(RESULTS) == set(PARAMS) == set(methods)
    for name, cls in RESULTS.items():
        assert cls.__name__ == struct_name(name) + "Result", name
        assert issubclass(cls, MethodResult), name
        config = cls.__struct_config__
        # Open to keys a newer daemon adds; an absent key is UNSET, never a default.
        assert config.frozen and not config.forbid_unknown_fields and not config.omit_defaults, name
        # The handler is written against its result Struct.
        handler = methods[name].handler
        while hasattr(handler, "__wrapped__"):
            handler = handler.__wrapped__
        hints = typing.get_type_hints(handler)
        assert hints.get("return") is cls, f"{name}: handler returns {hints.get('return')!r}"


def test_each_params_struct_names_its_methods_result_so_a_typed_call_returns_it():
    # MethodParams[R]: the R a typed call (client.request) is declared to return is the
    # row's result, the Struct the answer is checked against.
    for row in ROWS:
        (base,) = [b for b in row.params.__orig_bases__ if typing.get_origin(b) is not None]
        assert typing.get_args(base) == (row.result,), row.name


def test_a_key_the_daemon_may_leave_out_is_unset_never_a_default():
    """msgspec would fill a plain default in on decoding: the client could then not tell
    an absent key from a sent one, and the tests could not see the daemon send it."""
    for name, cls in RESULTS.items():
        for f in msgspec.structs.fields(cls):
            assert f.required or f.default is msgspec.UNSET, f"{name}.{f.name}"


# ------------------------------------------------------------ docs/protocol.md


def test_docs_give_each_methods_result_as_its_struct_has_it():
    documented = protocol_doc.documented("Result")
    assert set(documented) == set(RESULTS), "methods without a 'Result of' line: " + ", ".join(
        sorted(set(RESULTS) - set(documented))
    )
    for name, cls in RESULTS.items():
        assert documented[name] == results.describe(cls), (
            f"docs/protocol.md, {name}: write\nResult of `{name}`: {results.describe(cls)}"
        )


def test_each_result_line_follows_its_params_line():
    lines = [line for line in protocol_doc.DOC.read_text(encoding="utf-8").splitlines() if line.strip()]
    for i, line in enumerate(lines):
        m = re.match(r"Params of `([a-z_.]+)`: ", line)
        if m:
            assert lines[i + 1].startswith(f"Result of `{m[1]}`: "), m[1]


def test_describe_says_what_may_be_absent_or_null():
    said = results.describe(results.HistoryQueryResult)
    assert said == (
        "`rows` list of objects, each a history row; `older` integer or null; `newer` integer or null; "
        "`count` integer, may be absent."
    )
    assert results.describe(results.UnsubscribeResult) == "an empty object."


# ------------------------------------------------------------ a real daemon


def strictly(method: str, result: Any) -> MethodResult:
    """``result`` (as sent) decoded into its Struct, which must give back the same JSON."""
    typed = msgspec.convert(result, RESULTS[method])
    back = msgspec.to_builtins(typed)
    assert isinstance(result, dict), method
    unknown = sorted(set(result) - set(back))
    assert not unknown, f"{method}: the daemon sent keys its Struct does not have: {unknown}"
    assert back == result, f"{method}: decoded and encoded again, the result is not what was sent"
    return typed


class Checked:
    """Calls through a client; every answer is checked :func:`strictly` and counted."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __call__(self, client: Client, method: str, params: dict[str, Any] | None = None) -> Any:
        result = client.call(method, params)
        self.answer(method, result)
        return result

    def answer(self, method: str, result: Any) -> MethodResult:
        typed = strictly(method, result)
        self.seen[method] = self.seen.get(method, 0) + 1
        return typed


def pending_id(check: Checked, op: Client, skip: Callable[[str], bool] = lambda _r: False) -> str:
    """The request id of the one request now pending that ``skip`` does not know."""

    def one() -> str | None:
        page = check(op, "pending.list")
        fresh = [i["request_id"] for i in page["pending"] if not skip(i["request_id"])]
        return fresh[0] if fresh else None

    return wait_for(one)


def test_every_answer_of_a_real_daemon_is_its_struct(fresh_daemon: DaemonProcess):
    """Every method but those of :data:`SANDBOXED`, on the daemon's own sockets; the last
    call stops it (a daemon for this test alone)."""
    d = fresh_daemon
    ws, other, trusted = workspace(), workspace(), workspace()
    (ws / ".env").write_text("TOKEN=old\n")
    check = Checked()
    with d.operator() as op, d.agent() as agent:
        # hello, both sockets: the agent is told its identity, the operator is not.
        assert "agent" not in op.hello and check.answer("hello", op.hello)
        hello = check.answer("hello", agent.hello)
        assert isinstance(hello, results.HelloResult) and isinstance(hello.agent, results.HelloAgent)

        # daemon.status: the operator's view and the agent's, keys of one absent from the other.
        mine = check(op, "daemon.status")
        theirs = check(agent, "daemon.status")
        assert "history" in mine and "view" not in mine
        assert theirs["view"] == "agent" and "history" not in theirs and "watch" not in theirs

        # link.ticket: what an operator connection over SSH says hello with (docs/remote.md).
        ticket = check(op, "link.ticket")
        assert ticket["socket"] == str(d.loc.operator_socket)

        with d.operator() as listener:
            assert check(listener, "subscribe", {"topics": ["decided"]})["topics"] == ["decided"]
            assert check(listener, "unsubscribe") == {}

        # operation.submit allowed by the policy: no session keys.
        allowed = check(agent, "operation.submit", {"operation": operation(ws)})
        assert allowed["verdict"] == "allow" and "session" not in allowed and allowed["authorization"]

        # A request that waits: pending.list, request.get pending then decided, decide.
        waiting = submit_in_thread(d, operation(ws, args=["waits"], network="any"))
        rid = pending_id(check, op)
        got = check(op, "request.get", {"request_id": rid})
        assert got["pending"] is True and "request" in got and "detail" not in got
        decided = check(op, "decide", {"target": rid, "action": "approve", "scope": "always"})
        assert decided["decided"] == [rid] and decided["grant"] is not None
        check.answer("operation.submit", waiting())
        got = check(op, "request.get", {"request_id": rid})
        assert got["pending"] is False and "detail" in got and "request" not in got

        # A deny (null grant, denials) and a cancel.
        denied = submit_in_thread(d, operation(ws, args=["denied"], network="any"))
        rid2 = pending_id(check, op, skip=lambda r: r == rid)
        assert check(op, "decide", {"target": rid2, "action": "deny"})["grant"] is None
        answer = denied()
        check.answer("operation.submit", answer)
        assert answer["verdict"] == "deny" and answer["authorization"] is None and answer["denials"]
        cancelled = submit_in_thread(d, operation(ws, args=["cancelled"], network="any"))
        rid3 = pending_id(check, op, skip=lambda r: r in (rid, rid2))
        assert check(op, "operation.cancel", {"request_id": rid3}) == {"cancelled": rid3}
        assert check.answer("operation.submit", cancelled()).reason == "cancelled"  # type: ignore[attr-defined]

        # Grants.
        grant = check(op, "grants.add", {"fingerprint": FP, "note": "results"})["grant"]
        assert FP in [g["fingerprint"] for g in check(op, "grants.list")["grants"]]
        check(op, "grants.list", {"include_inactive": True})
        assert check(op, "grants.revoke", {"target": grant["id"]}) == {"revoked": [grant["id"]]}

        # History: a page with and without its count, a detail, previous decisions, verify, accept.
        page = check(op, "history.query", {"limit": 2})
        assert "count" not in page and len(page["rows"]) == 2 and page["older"] is not None
        counted = check(op, "history.query", {"kinds": ["decision"], "count": True})
        assert counted["count"] >= 4
        detail = check(op, "history.detail", {"request_id": rid})
        assert detail["decision"] is not None and "truncated" not in detail
        row = page["rows"][0]
        assert check(op, "history.previous", {"tool": row["tool"], "executable": row["executable"]})[
            "decisions"
        ]
        assert check(op, "history.verify")["ok"] is True
        assert check(op, "history.accept", {"through_seq": 1}) == {"accepted": [], "unaccepted": []}

        # Sessions: an operator's shell through every call there is.
        sid = check(
            op,
            "sessions.new",
            {"unconfined": True, "argv": ["sh", "-c", "echo ready; exec cat"], "cwd": str(ws)},
        )["session"]["id"]
        assert sid in [s["id"] for s in check(op, "sessions.list")["sessions"]]
        assert check(agent, "sessions.list") == {"sessions": []}  # an agent sees its own only
        check(op, "sessions.get", {"session": sid})
        attached = check(op, "sessions.attach", {"session": sid, "read_only": True})
        assert attached["session"] == sid
        assert check(op, "sessions.detach", {"session": sid}) == {"detached": sid}
        assert check(op, "sessions.input", {"session": sid, "text": "typed\n"}) == {"written": 6}
        assert check(op, "sessions.resize", {"session": sid, "cols": 90, "rows": 30}) == {
            "cols": 90,
            "rows": 30,
        }
        assert check(op, "sessions.signal", {"session": sid, "signal": "winch"}) == {"signalled": "SIGWINCH"}
        wait_for(lambda: "typed" in check(op, "sessions.screen", {"session": sid})["text"])
        assert check(op, "sessions.read", {"session": sid})["next_offset"] > 0
        assert (
            check(op, "sessions.wait", {"session": sid, "timeout_s": 0.05})["session"]["status"] != "exited"
        )
        check(op, "sessions.adopt", {"session": sid})
        check(op, "sessions.kill", {"session": sid, "grace_s": 1})
        assert check(op, "sessions.remove", {"session": sid}) == {"removed": sid}
        check(op, "sessions.prune", {"all": True})
        ended = check(op, "sessions.new", {"unconfined": True, "argv": ["true"], "cwd": str(ws)})["session"][
            "id"
        ]
        pruned = wait_for(lambda: check(op, "sessions.prune", {"all": True})["pruned"])
        assert [p["session"] for p in pruned] == [ended]

        # The watcher (the root's baselines are taken when it is first watched).
        check(op, "watch.add", {"workspace_root": str(ws)})
        wait_for(lambda: check(op, "watch.status")["ok"])
        assert str(other) in [
            r["root"] for r in check(op, "watch.add", {"workspace_root": str(other)})["roots"]
        ]
        assert str(other) not in [
            r["root"] for r in check(op, "watch.remove", {"workspace_root": str(other)})["roots"]
        ]
        (ws / ".env").write_text("TOKEN=new\n")
        wait_for(lambda: check(op, "watch.recent", {"protected_only": True})["events"])
        check(op, "watch.recent", {"limit": 5})
        check(op, "watch.recent", {"agent_session": "nobody"})
        diff = check(op, "watch.diff", {"workspace_root": str(ws), "path": ".env"})
        assert "+TOKEN=new" in diff["diff"] and diff["accepted"] is None
        check(op, "tripwire.list", {"include_resolved": True})

        # Trusted workspaces: added, added again (false), listed, removed.
        assert check(op, "workspaces.add", {"workspace_root": str(trusted)})["added"] is True
        assert check(op, "workspaces.add", {"workspace_root": str(trusted)})["added"] is False
        listed = check(op, "workspaces.list")["workspaces"]
        assert {"policy", "operator"} <= {w["source"] for w in listed}
        assert check(op, "workspaces.remove", {"workspace_root": str(trusted)})["removed"] is True

        # Attention: an agent's report, and the list on both sockets.
        assert check(agent, "agent.attention", {"state": "waiting", "session_id": "results"})["changed"]
        assert check(op, "agent.attention_list")["waiting"] == 1
        check(agent, "agent.attention_list")

        assert d.proc is not None
        assert check(op, "daemon.stop") == {"stopping": True, "pid": d.proc.pid}
    assert d.proc.wait(15) == 0
    assert set(check.seen) == set(RESULTS) - SANDBOXED


@pytest.mark.needs_bwrap
def test_every_answer_of_a_real_daemon_running_commands_is_its_struct():
    ws = workspace()
    (ws / ".env").write_text("TOKEN=old\n")
    check = Checked()
    with running_daemon(f'tripwire = "pause"\nwatch = ["{ws}"]\n') as d, d.operator() as op:
        wait_for(lambda: check(op, "watch.status")["ok"])
        with d.agent() as agent:
            ran = check(agent, "operation.exec", {"operation": operation(ws), "stream": False})
            assert ran["result"]["status"] == "exited" and "recorded" not in ran["result"]
            asked = operation(ws, args=["times out"], network="any")
            refused = check(agent, "operation.exec", {"operation": asked, "timeout_s": 0.05})
            assert refused["decision"]["verdict"] == "deny" and refused["result"] is None

            held = check(agent, "operation.hold", {"operation": operation(ws, args=["held"])})
            assert held["ticket"] and held["command"].endswith(
                f"--ticket {held['ticket']} --state-dir {d.state_dir}"
            )
            assert check(agent, "operation.hold", {"operation": asked, "timeout_s": 0.05})["ticket"] is None
            secret = read_secret(d.state_dir / "run", held["ticket"])
            assert check(agent, "operation.held", {"command": held["command"]})["held"] is True
            run = check(agent, "operation.run", {"ticket": f"{held['ticket']}:{secret}", "stream": False})
            assert run["decision"]["request_id"] == held["decision"]["request_id"]

            shell = operation(ws, kind="shell", executable="sh", mode="interactive", session_id="typed")
            answer = check(agent, "operation.submit", {"operation": shell})
            assert answer["verdict"] == "allow" and answer["session"]["sandboxed"] is True
            assert "session_error" not in answer
            check(agent, "sessions.kill", {"session": answer["session"]["id"], "grace_s": 1})

        writer = op.call(
            "sessions.new",
            {"unconfined": True, "argv": ["sh", "-c", "sleep 0.3; echo x >> .env; sleep 60"], "cwd": str(ws)},
        )["session"]["id"]
        item = wait_for(
            lambda: next((i for i in check(op, "tripwire.list")["items"] if i["session"] == writer), None)
        )
        resolved = check(op, "tripwire.resolve", {"id": item["id"], "action": "kill", "revert": False})
        assert resolved["item"]["state"] == "killed" and resolved["item"]["reverted"] == ""
        reverted = check(op, "tripwire.revert", {"id": item["id"]})
        assert reverted["item"]["reverted"] == "restored" and (ws / ".env").read_text() == "TOKEN=old\n"
    assert set(check.seen) >= SANDBOXED


@pytest.mark.needs_bwrap
def test_an_allowed_session_that_cannot_start_answers_null_with_its_error():
    """The rare shape of ``operation.submit``: allowed, but its session could not start
    (here its working directory went while the request waited): ``session`` is null and
    ``session_error`` says why, as its Struct has it."""
    ws = workspace()
    gone = ws / "gone"
    gone.mkdir()
    check = Checked()
    shell = operation(ws, kind="shell", executable="sh", mode="interactive", cwd="gone", network="any")
    with running_daemon() as d, d.operator() as op:
        answer = submit_in_thread(d, shell, timeout_s=30)
        rid = pending_id(check, op)
        gone.rmdir()
        check(op, "decide", {"target": rid, "action": "approve"})
        got = answer()
    check.answer("operation.submit", got)
    assert got["verdict"] == "allow" and got["session"] is None
    assert "could not" in got["session_error"]


# ------------------------------------------------------------ a peer that answers wrongly

GOOD_PAGE = {"pending": [], "count": 0, "next": None}
WRONG = [
    # (method, result, what the error must say, the value it must not)
    (
        "pending.list",
        {**GOOD_PAGE, "count": "many-SECRET"},
        "Expected `int`, got `str` - at `$.count`",
        "SECRET",
    ),
    (
        "decide",
        {"decided": ["r-1-2"], "verdict": "SECRET-verdict", "grant": None},
        "Invalid enum value - at `$.verdict`",
        "SECRET",
    ),
    ("pending.list", {"pending": [], "next": None}, "Object missing required field `count`", None),
    (
        "sessions.prune",
        {
            "pruned": [{"session": "ab", "bytes": "SECRET"}],
            "freed_bytes": 0,
            "total_bytes": 0,
            "quota_bytes": 0,
        },
        "Expected `int`, got `str` - at `$.pruned[0].bytes`",
        "SECRET",
    ),
    ("grants.list", ["SECRET"], "Expected `object`, got `array`", "SECRET"),
]


def test_a_validation_problem_keeps_the_words_and_the_place_never_the_value():
    """Events and results say what was wrong the same way (console/protocol/invalid.py)."""

    class Shape(msgspec.Struct):
        kind: typing.Literal["a", "b"]
        sizes: dict[str, int] = {}

    cases = [
        ({"kind": "SECRET"}, "Invalid enum value - at `$.kind`", "$.kind"),
        (
            {"kind": "a", "sizes": {"n": "SECRET"}},
            "Expected `int`, got `str` - at `$.sizes[...]`",
            "$.sizes[...]",
        ),
        ({"kind": "a", "sizes": {1: 2}}, "Expected `str`, got `int` - at a key of `$.sizes`", "$.sizes"),
        ({}, "Object missing required field `kind`", "$"),
    ]
    for value, said, where in cases:
        with pytest.raises(msgspec.ValidationError) as raised:
            msgspec.convert(value, Shape)
        assert invalid.problem(raised.value) == (said, where)


def _frames(answers: list[tuple[int, Any]]) -> bytes:
    return b"".join(jsonrpc.encode(jsonrpc.response(i, result)) for i, result in answers)


def _assert_refused(exc: ResultError, method: str, said: str, hidden: str | None) -> None:
    assert isinstance(exc, RPCError) and exc.code == jsonrpc.INTERNAL_ERROR
    assert exc.message.startswith(f"malformed result of {method} from the daemon")
    assert said in exc.message
    assert exc.data["method"] == method
    if hidden is not None:
        assert hidden not in exc.message and hidden not in str(exc.data)


async def test_a_malformed_result_fails_its_call_and_the_connection_goes_on(caplog):
    """Each wrong answer fails only its own call, with the method and the field; the
    right answers around it arrive, and a key the client does not know is no error (a
    newer daemon may add one)."""
    calls: list[str] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            (msg,), _ = jsonrpc.decode_message(line)
            assert isinstance(msg, jsonrpc.Request)
            calls.append(msg.method)
            n = len(calls)
            if n <= len(WRONG):
                result = WRONG[n - 1][1]
            elif msg.method == "pending.list":
                result = {**GOOD_PAGE, "newer_key": {"from": "a newer daemon"}}
            else:
                result = {"anything": 1}  # a method this protocol does not know: not checked
            writer.write(_frames([(msg.id, result)]))
            await writer.drain()
        writer.close()

    async with client_of(serve) as client:
        with caplog.at_level(logging.WARNING, logger="agent-console.client"):
            for method, _result, said, hidden in WRONG:
                with pytest.raises(ResultError) as refused:
                    await client.call(method)
                _assert_refused(refused.value, method, said, hidden)
            assert await client.call("pending.list") == {**GOOD_PAGE, "newer_key": {"from": "a newer daemon"}}
            assert await client.call("x.unknown") == {"anything": 1}
        assert client.refused_results == len(WRONG)
        # Told to the caller, who reports it (a CLI would otherwise print it twice).
        assert not [r for r in caplog.records if r.name == "agent-console.client"]


def test_the_blocking_client_refuses_a_malformed_result_too(caplog):
    """`agent-console` commands and hooks use the blocking client: the same refusal, and
    the next call on the socket still gets its own answer."""
    ours, theirs = socket.socketpair()
    answers = [(i + 1, result) for i, (_m, result, _s, _h) in enumerate(WRONG)]
    answers.append((len(WRONG) + 1, GOOD_PAGE))
    theirs.sendall(_frames(answers))  # the client numbers its calls 1, 2, …
    client = Client(ours, "operator")
    try:
        with caplog.at_level(logging.WARNING, logger="agent-console.client"):
            for method, _result, said, hidden in WRONG:
                with pytest.raises(ResultError) as refused:
                    client.call(method)
                _assert_refused(refused.value, method, said, hidden)
            assert client.call("pending.list") == GOOD_PAGE
        assert client.refused_results == len(WRONG)
        assert not [r for r in caplog.records if r.name == "agent-console.client"]
    finally:
        ours.close()
        theirs.close()


def test_connect_refuses_a_hello_that_is_no_hello():
    """The first answer of every connection is checked like any other: a client that
    cannot read the daemon's hello does not connect."""
    state = short_tmp() / "s"
    refused = pytest.raises(ResultError, match=r"malformed result of hello .*`\$\.protocol`")
    with fake_daemon(state, {"hello": {**HELLO, "protocol": "two"}}), refused:
        Client.connect(state, role="agent")


@pytest.mark.parametrize("part", sorted(results.NAMED, key=lambda t: t.__name__))
def test_docs_describe_each_named_part_once_as_its_struct_has_it(part):
    """Results and events name a pending item and a session object rather than repeat
    them; the fields of each are on a line of their own, generated from its Struct."""
    said = results.NAMED[part]
    start = said[0].upper() + said[1:] + ": "
    lines = [
        line.removeprefix(start)
        for line in protocol_doc.DOC.read_text(encoding="utf-8").splitlines()
        if line.startswith(start)
    ]
    assert lines == [results.describe(part)], f"docs/protocol.md: write\n{start}{results.describe(part)}"


# ------------------------------------------------------------ typed calls


def test_a_typed_call_returns_its_methods_struct_checked_at_the_socket(daemon: DaemonProcess):
    """``client.request(Params(...))`` answers with the Struct the method table pairs
    with those params, so a caller reads attributes, never keys of a dict."""
    from console.protocol.requests import DaemonStatus, GrantsList, PendingList

    with daemon.operator() as op, daemon.agent() as agent:
        pending = op.request(PendingList())
        assert isinstance(pending, results.PendingListResult) and pending.pending == [] and pending.count == 0
        grants = op.request(GrantsList())
        assert isinstance(grants, results.GrantsListResult) and isinstance(grants.grants, list)
        status = agent.request(DaemonStatus())
        assert isinstance(status, results.DaemonStatusResult) and status.view == "agent"


async def test_the_async_client_makes_the_same_typed_calls(daemon: DaemonProcess):
    from console.client import AsyncClient
    from console.protocol.requests import DaemonStatus, PendingList

    async with await AsyncClient.connect(daemon.loc, role="operator") as op:
        status = await op.request(DaemonStatus())
        assert isinstance(status, results.DaemonStatusResult) and status.state_dir == str(daemon.state_dir)
        pending = await op.request(PendingList(limit=5))
        assert isinstance(pending, results.PendingListResult) and pending.pending == [] and pending.count == 0
