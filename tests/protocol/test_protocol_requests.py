"""Typed method params: one msgspec Struct per method in
console/protocol/requests.py, read at the socket with the messages the daemon always gave,
and docs/protocol.md's ``Params of`` lines checked against them."""

from __future__ import annotations

import asyncio
import re
import typing

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import inspect as mi
from support import protocol_doc

from console.daemon.methods import all_methods
from console.protocol import requests
from console.protocol.ids import id_format
from console.protocol.jsonrpc import INVALID_PARAMS, RPCError
from console.protocol.params import Params
from console.protocol.requests import MethodParams, read_params
from console.protocol.table import ROWS

FP = "ab" * 32
PARAMS = {row.name: row.params for row in ROWS}


# ------------------------------------------------------------ (a) one Struct per method


def test_every_method_has_its_params_struct_and_every_struct_a_method():
    methods = all_methods()
    assert set(methods) == set(PARAMS)
    for name, method in methods.items():
        cls = PARAMS[name]
        assert method.params is cls, name
        assert cls.__name__ == requests.struct_name(name), name
        config = cls.__struct_config__
        assert config.frozen and config.forbid_unknown_fields and config.omit_defaults, name
        # The handler is written against its Struct.
        handler = method.handler
        while hasattr(handler, "__wrapped__"):
            handler = handler.__wrapped__
        hints = typing.get_type_hints(handler)
        assert hints.get("args") is cls, f"{name}: handler takes {hints.get('args')!r}"


def test_every_field_has_a_reader_with_explicit_bounds():
    for cls in PARAMS.values():
        requests._plan(cls)  # raises TypeError for a field it cannot read the Params way


# ------------------------------------------------------------ (b) docs/protocol.md


def test_docs_list_each_methods_params_as_its_struct_has_them():
    documented = protocol_doc.documented("Params")
    assert set(documented) == set(PARAMS), "methods without a 'Params of' line: " + ", ".join(
        sorted(set(PARAMS) - set(documented))
    )
    for name, cls in PARAMS.items():
        names = re.findall(r"(?:^|; )`([a-z0-9_]+)`", documented[name])
        assert names == list(cls.__struct_fields__), name
        assert documented[name] == requests.describe(cls), (
            f"docs/protocol.md, {name}: write\nParams of `{name}`: {requests.describe(cls)}"
        )


# ------------------------------------------------------------ (c) at the socket

OPERATOR_CASES = [
    # wrong types
    ("pending.list", {"limit": "x"}, "limit: must be an integer between 1 and 1000", {"param": "limit"}),
    ("history.query", {"verdict": 5}, "verdict: must be a string", {"param": "verdict"}),
    (
        "decide",
        {"target": "x", "action": "maybe"},
        "action: must be one of: approve, deny",
        {"param": "action"},
    ),
    ("grants.list", {"include_inactive": "yes"}, "include_inactive: must be true or false", None),
    ("operation.submit", {"operation": []}, "operation: must be an object", None),
    ("subscribe", {"topics": "pending"}, "topics: must be a list of at most 16 strings", None),
    ("pending.list", {"limit": True}, "limit: must be an integer between 1 and 1000", None),
    ("pending.list", {"limit": 2.5}, "limit: must be an integer between 1 and 1000", None),
    # out of range
    ("history.query", {"limit": 5001}, "limit: must be an integer between 1 and 5000", None),
    (
        "decide",
        {"target": "x", "action": "approve", "expires_in_s": 0},
        "expires_in_s: must be a number between 1 and 3.1536e+08",
        None,
    ),
    (
        "history.accept",
        {"through_seq": 0},
        "through_seq: must be an integer between 1 and 4611686018427387904",
        None,
    ),
    (
        "workspaces.add",
        {"workspace_root": "x" * 4097},
        "workspace_root: must be at most 4096 characters without NUL",
        None,
    ),
    (
        "watch.diff",
        {"workspace_root": "/a\x00", "path": "b"},
        "workspace_root: must be at most 4096 characters without NUL",
        None,
    ),
    # ids not matching their format
    (
        "request.get",
        {"request_id": "r-"},
        "request_id: must be a request id such as r-<base36>-<base36>",
        None,
    ),
    ("request.get", {"request_id": ""}, "request_id: must be a request id such as r-<base36>-<base36>", None),
    ("sessions.get", {"session": "DEADBEEF"}, "session: must be a session id: 8 lowercase hex digits", None),
    ("sessions.get", {"session": 12345678}, "session: must be a session id: 8 lowercase hex digits", None),
    (
        "history.query",
        {"fingerprint": "ab"},
        "fingerprint: must be a fingerprint: 64 lowercase hex digits",
        None,
    ),
    (
        "history.query",
        {"request_id": "r-1-2\n"},
        "request_id: must be a request id such as r-<base36>-<base36>",
        None,
    ),
    (
        "grants.add",
        {"fingerprint": FP, "session_id": "a-1"},
        "session_id: must be an agent id: a- and 16 lowercase hex digits",
        None,
    ),
    # missing and unknown
    ("grants.revoke", {}, "target: is required", {"param": "target"}),
    (
        "grants.revoke",
        {"target": "g-1", "bogus": 1},
        "unknown params; accepted: target",
        {"accepted": ["target"]},
    ),
    (
        "decide",
        {"target": "x", "action": "deny", "why": "?"},
        "unknown params; accepted: action, always, expires_in_s, note, reason, rule, scope, target",
        None,
    ),
    ("daemon.status", {"x": 1}, "unknown params; accepted: ", {"accepted": []}),
    # the first bad field in reading order wins, before unknown names
    (
        "pending.list",
        {"after": 1, "limit": 0, "zzz": 1},
        "limit: must be an integer between 1 and 1000",
        None,
    ),
    # checks that are not shape stay with the method, worded as before
    ("grants.add", {"fingerprint": "xyz"}, "fingerprint: must be 64 lowercase hexadecimal digits", None),
    ("history.query", {"kinds": ["nope"]}, "kinds: each must be one of " + ", ".join(requests.KINDS), None),
    (
        "decide",
        {"target": "x", "action": "deny", "scope": "always"},
        "scope: applies to approvals; to deny every time use always=true",
        None,
    ),
    (
        "grants.add",
        {"fingerprint": FP, "scope": "session"},
        "session_id: a session grant needs the agent's identity (agent_id in pending.list)",
        None,
    ),
]


@pytest.mark.parametrize(("method", "params", "message", "data"), OPERATOR_CASES)
def test_bad_params_on_operator_sock_are_refused_as_before_and_the_connection_serves_on(
    daemon, method, params, message, data
):
    with daemon.operator() as op:
        with pytest.raises(RPCError) as refused:
            op.call(method, params)
        assert (refused.value.code, refused.value.message) == (INVALID_PARAMS, message)
        if data is not None:
            assert refused.value.data == data
        assert op.call("daemon.status")["pid"] == daemon.proc.pid


AGENT_CASES = [
    ("hello", {"agent_pid": 0}, "agent_pid: must be an integer between 1 and 4194304"),
    ("hello", {"session_id": "x" * 257}, "session_id: must be at most 256 characters without NUL"),
    (
        "operation.cancel",
        {"request_id": "r-*"},
        "request_id: must be a request id such as r-<base36>-<base36>",
    ),
    ("agent.attention", {"state": "asleep"}, "state: must be one of: waiting, working, done"),
    (
        "agent.attention",
        {"state": "done", "kind": "Stop!"},
        "kind: lowercase letters, digits and _-.: only (e.g. idle_prompt)",
    ),
    ("operation.run", {"ticket": "t", "stream": 1}, "stream: must be true or false"),
    ("agent.attention_list", {"all": True}, "unknown params; accepted: "),
]


@pytest.mark.parametrize(("method", "params", "message"), AGENT_CASES)
def test_bad_params_on_agent_sock_are_refused_as_before_and_the_connection_serves_on(
    daemon, method, params, message
):
    with daemon.agent() as agent:
        with pytest.raises(RPCError) as refused:
            agent.call(method, params)
        assert (refused.value.code, refused.value.message) == (INVALID_PARAMS, message)
        assert agent.call("daemon.status")["pid"] == daemon.proc.pid


# Before, a session method looked its session up before reading its other params (a
# wrong cols of an unknown session was "no session …"); now the whole shape is checked
# at the socket first, with the same words, and nothing is looked up for a bad call.
SHAPE_FIRST = [
    (
        "operator",
        "sessions.kill",
        {"session": "deadbeef", "grace_s": "1"},
        "grace_s: must be a number between 0 and 60",
    ),
    (
        "operator",
        "sessions.kill",
        {"session": "deadbeef", "grace_s": 61},
        "grace_s: must be a number between 0 and 60",
    ),
    (
        "operator",
        "sessions.resize",
        {"session": "deadbeef", "cols": 1},
        "cols: must be an integer between 2 and 1000",
    ),
    (
        "agent",
        "sessions.read",
        {"session": "deadbeef", "offset": -1},
        "offset: must be an integer between 0 and 9007199254740992",
    ),
    ("agent", "sessions.input", {"session": "0123abcd", "text": 1}, "text: must be a string"),
]


@pytest.mark.parametrize(("sock", "method", "params", "message"), SHAPE_FIRST)
def test_a_session_methods_shape_is_refused_before_its_session_is_looked_up(
    daemon, sock, method, params, message
):
    with daemon.operator() if sock == "operator" else daemon.agent() as client:
        with pytest.raises(RPCError) as refused:
            client.call(method, params)
        assert (refused.value.code, refused.value.message) == (INVALID_PARAMS, message)
        with pytest.raises(RPCError) as unknown:
            client.call(method, {"session": params["session"]})
        assert unknown.value.message.startswith(f"no session {params['session']}")


def test_a_struct_sent_as_params_is_what_the_daemon_reads(daemon):
    with daemon.operator() as op:
        assert op.call("pending.list", requests.PendingList(limit=5))["pending"] == []
        assert requests.to_params(requests.PendingList()) == {}
        assert requests.to_params(requests.Decide(target="x", action=requests.DecideAction.DENY)) == {
            "target": "x",
            "action": "deny",
        }
        with pytest.raises(RPCError, match="no pending request"):
            op.call("decide", requests.Decide(target="r-0-0", action=requests.DecideAction.DENY))


# ------------------------------------------------------------ (d) the reader agrees with the Struct


def value_of(kind: mi.Type) -> st.SearchStrategy[object]:
    if isinstance(kind, mi.UnionType):
        return st.one_of(*(value_of(t) for t in kind.types))
    if isinstance(kind, mi.NoneType):
        return st.none()
    if isinstance(kind, mi.StrType):
        if kind.pattern is not None:
            fmt = id_format(kind.pattern)
            assert fmt is not None
            return st.from_regex(fmt, fullmatch=True)
        return st.text(
            st.characters(exclude_characters="\x00", exclude_categories=["Cs"]),
            max_size=min(kind.max_length, 40),
        )
    if isinstance(kind, mi.IntType):
        return st.integers(kind.ge, kind.le)
    if isinstance(kind, mi.FloatType):
        return st.floats(kind.ge, kind.le, allow_nan=False) | st.integers(int(kind.ge) + 1, int(kind.le))
    if isinstance(kind, mi.BoolType):
        return st.booleans()
    if isinstance(kind, mi.EnumType):
        return st.sampled_from([m.value for m in kind.cls])
    if isinstance(kind, mi.DictType):
        return st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3)
    if isinstance(kind, mi.VarTupleType):
        return st.lists(
            st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=8),
            max_size=min(kind.max_length, 5),
        )
    raise AssertionError(kind)


@st.composite
def wire_params(draw: st.DrawFn, cls: type[MethodParams]) -> dict[str, object]:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    out: dict[str, object] = {}
    for f in info.fields:
        if f.required or draw(st.booleans()):
            out[f.name] = draw(value_of(f.type))
    return out


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(PARAMS)).flatmap(lambda m: st.tuples(st.just(PARAMS[m]), wire_params(PARAMS[m])))
)
def test_the_reader_agrees_with_msgspec_on_valid_params(case):
    cls, wire = case
    read = read_params(dict(wire), cls)
    assert read == msgspec.convert(wire, cls)
    # and back: what a client sends for it reads as the same Struct
    sent = requests.to_params(read)
    assert read_params(msgspec.json.decode(msgspec.json.encode(sent)), cls) == read


@settings(max_examples=200)
@given(
    st.sampled_from(sorted(PARAMS)).flatmap(lambda m: st.tuples(st.just(PARAMS[m]), wire_params(PARAMS[m]))),
    st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12),
)
def test_both_refuse_an_unknown_name(case, extra):
    cls, wire = case
    if extra in cls.__struct_fields__:
        return
    wire = {**wire, extra: 1}
    with pytest.raises(RPCError) as refused:
        read_params(wire, cls)
    assert refused.value.code == INVALID_PARAMS
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(wire, cls)


def test_a_unit_test_may_still_hand_a_handler_params_as_a_mapping():
    handler = all_methods()["grants.list"].handler
    with pytest.raises(RPCError, match="include_inactive: must be true or false"):
        asyncio.run(handler(None, {"include_inactive": 1}))


def junk_of(kind: mi.Type) -> st.SearchStrategy[object]:
    """Anything JSON can carry, and near misses of the field's own type."""
    scalar = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**64), 2**64),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(st.characters(exclude_categories=["Cs"]), max_size=6),
        st.just("\x00"),
        st.just("a\x00b"),
    )
    return st.one_of(
        value_of(kind),
        scalar,
        st.lists(scalar, max_size=3),
        st.dictionaries(st.text(max_size=3), scalar, max_size=2),
    )


@st.composite
def junk_params(draw: st.DrawFn, cls: type[MethodParams]) -> dict[str, object]:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    out: dict[str, object] = {}
    for f in info.fields:
        if draw(st.booleans()):
            out[f.name] = draw(junk_of(f.type) if draw(st.booleans()) else value_of(f.type))
    return out


def outcome(read):
    try:
        return ("read", read())
    except RPCError as exc:
        return ("refused", exc.code, exc.message, exc.data)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(PARAMS)).flatmap(lambda m: st.tuples(st.just(PARAMS[m]), junk_params(PARAMS[m])))
)
def test_the_short_way_accepts_exactly_what_the_field_by_field_reading_accepts(case):
    """read_params takes msgspec.convert's short way for a mapping; the field-by-field
    reading of the same params (a Params) must give the very same answer."""
    cls, wire = case
    assert outcome(lambda: read_params(dict(wire), cls)) == outcome(
        lambda: read_params(Params(dict(wire)), cls)
    )
