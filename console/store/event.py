"""History events: the one append-only record of what was asked, decided and done.

Every event has a kind, a time, a few typed columns that history queries filter on,
and a JSON ``body`` with the rest. New kinds need no migration: a kind is any short
lower-case name, and what does not fit a column goes in the body.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgspec

from console.contract import strictjson
from console.contract.operation import Operation
from console.contract.strictjson import canonical
from console.policy.grants import Grant


class EventKind(StrEnum):
    REQUEST = "request"
    DECISION = "decision"
    OUTCOME = "outcome"
    FILE_EVENT = "file_event"
    GRANT = "grant"
    GRANT_REVOKED = "grant_revoked"
    GRANT_USED = "grant_used"
    WORKSPACE_TRUSTED = "workspace_trusted"
    WORKSPACE_UNTRUSTED = "workspace_untrusted"
    DAEMON = "daemon"
    CONNECTION = "connection"


# Typed text columns, in table order. Empty string means "not applicable".
TEXT_COLUMNS = (
    "request_id",
    "fingerprint",
    "tool",
    "executable",
    "command",
    "cwd",
    "workspace_root",
    "session_id",
    "verdict",
    "source",
    "scope",
    "reason",
    "note",
    "justification",
)
# Every column an event is written with, in table order (seq, prev_hash, hash come from the chain).
EVENT_COLUMNS = ("kind", "at", *TEXT_COLUMNS, "peer_pid", "latency_ms", "body")
# What the hash covers: the stored value of each of these columns.
HASHED_COLUMNS = ("seq", *EVENT_COLUMNS)
RECORD_COLUMNS = (*HASHED_COLUMNS, "prev_hash", "hash")
# What search covers (the columns of the events_fts index), as positions in EVENT_COLUMNS.
SEARCH_COLUMNS = ("command", "cwd", "justification", "reason", "note")
SEARCH_POSITIONS = tuple(EVENT_COLUMNS.index(c) for c in SEARCH_COLUMNS)
# Kinds left out of the search index: a request's text is repeated by its decision,
# which is what history shows and searches; indexing both doubled the cost of a decision.
UNSEARCHED_KINDS = frozenset({"request"})

MAX_TEXT_CHARS = 1 << 20
MAX_BODY_BYTES = 16 << 20
MAX_JSON_DEPTH = 64
_KIND_RE = re.compile(r"[a-z][a-z0-9_]{0,31}")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened. ``at`` is seconds since the epoch."""

    kind: str
    at: float
    request_id: str = ""
    fingerprint: str = ""
    tool: str = ""
    executable: str = ""
    command: str = ""
    cwd: str = ""
    workspace_root: str = ""
    session_id: str = ""
    verdict: str = ""
    source: str = ""
    scope: str = ""
    reason: str = ""
    note: str = ""
    justification: str = ""
    peer_pid: int | None = None
    latency_ms: float | None = None
    body: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: getattr(self, name) for name in EVENT_COLUMNS}
        out["body"] = dict(self.body)
        return out


@dataclass(frozen=True, slots=True)
class Record:
    """An event as stored: its place in the chain and the hashes that seal it."""

    seq: int
    event: Event
    prev_hash: str
    hash: str

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON form (the export line): every column, ``body`` as an object."""
        return {"seq": self.seq, **self.event.to_dict(), "prev_hash": self.prev_hash, "hash": self.hash}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Record:
        fields = {name: d[name] for name in EVENT_COLUMNS}
        return cls(seq=int(d["seq"]), event=Event(**fields), prev_hash=d["prev_hash"], hash=d["hash"])


_body_decoder = msgspec.json.Decoder()


def record_from_row(row: tuple[Any, ...]) -> Record:
    """A Record from a ``SELECT`` of :data:`RECORD_COLUMNS` in that order."""
    values = dict(zip(RECORD_COLUMNS, row, strict=True))
    values["body"] = _body_decoder.decode(values["body"])
    seq, prev_hash, hash_ = values.pop("seq"), values.pop("prev_hash"), values.pop("hash")
    return Record(seq=seq, event=Event(**values), prev_hash=prev_hash, hash=hash_)


# ---------------------------------------------------------------------------------------
# Validation: done on the caller's thread so a bad event fails its own call, not a batch.


def _check_text(name: str, value: Any) -> str:
    if value == "":
        return ""
    if not isinstance(value, str):
        raise TypeError(f"event field {name} must be a str")
    if "\x00" in value:
        raise ValueError(f"event field {name} must not contain NUL")
    if len(value) > MAX_TEXT_CHARS:
        raise ValueError(f"event field {name} is longer than {MAX_TEXT_CHARS} characters")
    if not value.isascii() and _SURROGATE.search(value):
        raise ValueError(f"event field {name} contains a lone UTF-16 surrogate")
    return value


def _check_json(value: Any, depth: int = 0) -> None:
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"event body nests deeper than {MAX_JSON_DEPTH} levels")
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("event body holds a non-finite number")
    elif isinstance(value, str):
        if not value.isascii() and _SURROGATE.search(value):
            raise ValueError("event body holds a lone UTF-16 surrogate")
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError("event body keys must be strings")
            _check_json(key, depth + 1)
            _check_json(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_json(item, depth + 1)
    else:
        raise TypeError(f"event body holds a {type(value).__name__}, which is not JSON")


class _Canonical(dict):  # type: ignore[type-arg]  # holds any JSON, like json.loads
    """A body built here together with its canonical text (see :func:`request_event`)."""

    __slots__ = ("text",)

    text: str


def _encode_body(value: Any) -> str:
    """The body's canonical JSON text, refusing what JSON cannot say exactly.

    Fast path in C: encode, decode, compare. Only when that round trip changes the value
    (NaN, non-string keys, tuples, odd types) is the body walked, to accept tuples and
    name what is wrong.
    """
    if type(value) is _Canonical:
        return value.text  # made with the body, the same bytes as the walk below gives
    if not isinstance(value, Mapping):
        raise TypeError("event body must be a mapping")
    body = dict(value)
    try:
        data = canonical(body)
        exact = _body_decoder.decode(data) == body
    except (TypeError, ValueError, OverflowError, UnicodeError, msgspec.MsgspecError):
        data, exact = b"", False
    if not exact:
        _check_json(body)
        try:
            data = canonical(body)
        except (TypeError, ValueError, OverflowError, UnicodeError) as exc:
            raise ValueError(f"event body cannot be written as JSON: {exc}") from None
    if len(data) > MAX_BODY_BYTES:
        raise ValueError(f"event body is larger than {MAX_BODY_BYTES} bytes")
    return data.decode("utf-8")


def _optional_number(name: str, value: Any, kind: type) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"event field {name} must be a number or None")
    if kind is int:
        if not isinstance(value, int):
            raise TypeError(f"event field {name} must be an integer")
        return value
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"event field {name} must be finite")
    return value


def encode(event: Event) -> tuple[Any, ...]:
    """The column values of :data:`EVENT_COLUMNS` for an event, validated."""
    if not isinstance(event, Event):
        raise TypeError("append() takes Event objects")
    if not isinstance(event.kind, str) or not _KIND_RE.fullmatch(event.kind):
        raise ValueError("event kind must be 1-32 characters of a-z, 0-9 and _, starting with a letter")
    at = _optional_number("at", event.at, float)
    if at is None:
        raise TypeError("event field at must be a number")
    texts = []
    for name in TEXT_COLUMNS:
        value = getattr(event, name)
        # The common column (empty, or short ASCII without NUL) needs no closer look.
        if (
            value.__class__ is not str
            or (value and ("\x00" in value or not value.isascii()))
            or len(value) > MAX_TEXT_CHARS
        ):
            value = _check_text(name, value)
        texts.append(value)
    body = _encode_body(event.body)
    return (
        event.kind,
        at,
        *texts,
        _optional_number("peer_pid", event.peer_pid, int),
        _optional_number("latency_ms", event.latency_ms, float),
        body,
    )


# ---------------------------------------------------------------------------------------
# Building events from contract objects, so every writer fills the columns the same way.


def command_line(op: Operation) -> str:
    """The operation's argv as one shell-quoted line: what history shows and search matches."""
    return op.command_line


# The columns that describe a request's operation; decisions repeat them.
OPERATION_COLUMNS = (
    "fingerprint",
    "tool",
    "executable",
    "command",
    "cwd",
    "workspace_root",
    "session_id",
    "justification",
)


def _op_columns(op: Operation) -> dict[str, Any]:
    return dict(
        zip(
            OPERATION_COLUMNS,
            (
                op.fingerprint,
                op.tool,
                op.executable,
                command_line(op),
                op.cwd_path,
                op.workspace_root,
                op.session_id,
                op.justification,
            ),
            strict=True,
        )
    )


def decision_for_request(
    request: Mapping[str, Any], *, at: float, verdict: str, source: str, reason: str, body: Mapping[str, Any]
) -> Event:
    """A decision for a stored request record (one whose operation object is gone, e.g.
    left pending by a daemon that died), repeating its columns like :func:`decision_event`."""
    return Event(
        kind=EventKind.DECISION,
        at=at,
        request_id=request["request_id"],
        verdict=verdict,
        source=source,
        reason=reason,
        peer_pid=request.get("peer_pid"),
        latency_ms=round((at - request["at"]) * 1000, 3),
        body=dict(body),
        **{c: request[c] for c in OPERATION_COLUMNS},
    )


_SAFE_INTEGER = 2**53 - 1


def _request_body(op: Operation, at: float) -> dict[str, Any]:
    """The request's body, with its canonical text made in one pass where that is exact.

    The operation's wire form is plain JSON (strings, lists, objects with ASCII member
    names, small integers) once its env names are ASCII and its integers are safe; for
    such a value :func:`strictjson.canonical_plain` writes the bytes that
    :func:`strictjson.canonical` does, without its walk and without the round-trip
    check, which were a third of the cost of a request row. Anything else (a non-ASCII
    env name, a lone surrogate, a huge integer) takes the general path.
    """
    wire = op.to_wire()
    body = {"operation": wire, "fingerprint": op.fingerprint, "submitted_at": at}
    output = wire["output"]
    if (
        type(at) is not float
        or not math.isfinite(at)
        or not all(
            type(n) is int and 0 <= n <= _SAFE_INTEGER
            for n in (wire["timeout_ms"], output["capture_bytes"], output["max_bytes"])
        )
        or not all(name.isascii() for name in wire["env"])
        or type(body["fingerprint"]) is not str
    ):
        return body
    try:
        text = b"".join(
            (
                b'{"fingerprint":',
                strictjson.canonical_plain(body["fingerprint"]),
                b',"operation":',
                strictjson.canonical_plain(wire),
                b',"submitted_at":',
                strictjson.number(at).encode("ascii"),
                b"}",
            )
        )
    except (strictjson.StrictJSONError, TypeError, ValueError):
        return body
    if len(text) > MAX_BODY_BYTES:
        return body  # the general path names the limit
    out = _Canonical(body)
    out.text = text.decode("utf-8")
    return out


def request_event(op: Operation, *, request_id: str, at: float, peer_pid: int | None = None) -> Event:
    """An agent asked: the full canonical operation, who asked and when."""
    body = _request_body(op, at)
    return Event(
        kind=EventKind.REQUEST, at=at, request_id=request_id, peer_pid=peer_pid, body=body, **_op_columns(op)
    )


def decision_event(
    op: Operation,
    *,
    request_id: str,
    at: float,
    verdict: str,
    source: str,
    scope: str = "",
    reason: str = "",
    note: str = "",
    latency_ms: float | None = None,
    peer_pid: int | None = None,
    capability_diff: Mapping[str, Any] | None = None,
    denials: Iterable[Mapping[str, Any]] = (),
    grant_id: str = "",
) -> Event:
    """A request was settled. Request columns are repeated so history is one query.

    ``denials`` are dicts of capability, source, reason, recoverable, next_action (the
    contract's ``Denial.to_dict()``).
    """
    if verdict not in ("allow", "deny"):
        raise ValueError("a decision's verdict is allow or deny")
    body: dict[str, Any] = {"denials": [dict(d) for d in denials]}
    if capability_diff is not None:
        body["capability_diff"] = dict(capability_diff)
    if grant_id:
        body["grant_id"] = grant_id
    return Event(
        kind=EventKind.DECISION,
        at=at,
        request_id=request_id,
        verdict=verdict,
        source=source,
        scope=scope,
        reason=reason,
        note=note,
        latency_ms=latency_ms,
        peer_pid=peer_pid,
        body=body,
        **_op_columns(op),
    )


def outcome_event(
    *, request_id: str, at: float, outcome: Mapping[str, Any], op: Operation | None = None
) -> Event:
    """How an executed request ended (the contract's ``Outcome.to_dict()``)."""
    columns: dict[str, Any] = {}
    if op is not None:
        columns = {
            "fingerprint": op.fingerprint,
            "tool": op.tool,
            "executable": op.executable,
            "session_id": op.session_id,
        }
    return Event(kind=EventKind.OUTCOME, at=at, request_id=request_id, body=dict(outcome), **columns)


def file_event(
    *,
    at: float,
    path: str,
    change: str,
    protected_pattern: str = "",
    workspace_root: str = "",
    request_id: str = "",
    session_id: str = "",
    attribution: Mapping[str, Any] | None = None,
) -> Event:
    """A watched file changed. The path goes in ``command`` so search finds it."""
    body: dict[str, Any] = {"path": path, "change": change, "protected_pattern": protected_pattern}
    if attribution is not None:
        body["attribution"] = dict(attribution)
    return Event(
        kind=EventKind.FILE_EVENT,
        at=at,
        command=path,
        workspace_root=workspace_root,
        request_id=request_id,
        session_id=session_id,
        reason=protected_pattern,
        body=body,
    )


def connection_event(
    *,
    at: float,
    host: str,
    port: int,
    address: str,
    protocol: str,
    verdict: str,
    source: str,
    reason: str,
    workspace_root: str,
    session_id: str = "",
    request_id: str = "",
    agent: str = "",
    label: str = "",
) -> Event:
    """One decision of the egress broker on one connection out of a sandbox
    (console/daemon/egress/): where to, the address it went to (when allowed), why."""
    return Event(
        kind=EventKind.CONNECTION,
        at=at,
        request_id=request_id,
        tool="network",
        executable="connect",
        command=f"connect {host}:{port}",
        workspace_root=workspace_root,
        session_id=session_id,
        verdict=verdict,
        source=source,
        reason=reason,
        justification=label,
        body=_connection_body(host, port, address, protocol, agent),
    )


def _connection_body(host: str, port: int, address: str, protocol: str, agent: str) -> dict[str, Any]:
    """A connection's body, with its canonical text made at once when it is plain (ASCII
    member names, strings and a small integer: :func:`strictjson.canonical_plain`), as
    :func:`_request_body` does; otherwise the general path writes it."""
    body = {"host": host, "port": port, "address": address, "protocol": protocol, "agent_id": agent}
    if type(port) is not int or not 0 <= port <= _SAFE_INTEGER:
        return body
    if not all(type(v) is str and len(v) <= MAX_TEXT_CHARS for v in (host, address, protocol, agent)):
        return body
    try:
        text = strictjson.canonical_plain(body)
    except strictjson.StrictJSONError:
        return body  # a lone surrogate: the general path names it
    out = _Canonical(body)
    out.text = text.decode("utf-8")
    return out


def daemon_event(*, at: float, note: str, body: Mapping[str, Any] | None = None) -> Event:
    """The daemon started, stopped, or noticed something about itself."""
    return Event(kind=EventKind.DAEMON, at=at, note=note, body=dict(body or {}))


def grant_event(grant: Grant, *, tool: str, summary: str) -> Event:
    return Event(
        kind=EventKind.GRANT,
        at=grant.created_at,
        fingerprint=grant.fingerprint,
        tool=tool,
        command=summary,
        session_id=grant.session_id,
        verdict=grant.effect.value,
        scope=grant.scope.value,
        note=grant.note,
        body={"grant": grant.to_dict(), "tool": tool, "summary": summary},
    )


def workspace_event(
    *, trusted: bool, root: str, at: float, source: str, request_id: str = "", note: str = ""
) -> Event:
    """The operator trusted (or stopped trusting) a workspace root. ``source`` says how:
    ``operator`` (agent-console workspaces add/remove) or ``approval`` (an "always"
    approval of a request in a new workspace, named by ``request_id``). Replaying these
    events in order gives the runtime trusted set, as tamper-evident as the chain."""
    return Event(
        kind=EventKind.WORKSPACE_TRUSTED if trusted else EventKind.WORKSPACE_UNTRUSTED,
        at=at,
        workspace_root=root,
        command=root,
        request_id=request_id,
        source=source,
        note=note,
        body={"workspace_root": root, "trusted": trusted},
    )
