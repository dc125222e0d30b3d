"""The params of every daemon method, typed: one msgspec Struct per method.

Shared by the daemon (which reads each call's params into its Struct at the socket,
before the method runs: console/daemon/connection.py), the clients (which may send a
Struct as a call's params: :func:`to_params`) and docs/protocol.md ("Methods"), whose
``Params of`` lines tests/protocol/test_protocol_requests.py checks against :func:`describe`.

A Struct is named after its method (``grants.add`` → :class:`GrantsAdd`,
``agent.attention_list`` → :class:`AgentAttentionList`); :mod:`console.protocol.table` pairs
it with its method's name and result. Constraints are ``msgspec.Meta`` annotations: ``max_length`` of a text,
``ge``/``le`` of a number, ``max_length`` of a list, and for an id the ``pattern`` of its
format (console/protocol/ids.py). Defaults are field defaults.

:func:`read_params` reads a call's params through :class:`~console.protocol.params.Params`
field by field, so every refusal is the one the daemon always gave ("cols: must be an
integer between 2 and 1000", "unknown params; accepted: a, b"): it names the parameter
and what it accepts, never the value. What is not a field's shape stays with its method:
a fingerprint prefix, cross-field rules ("give exactly one of text and data_base64"), a
``kind``'s characters, the topics and history kinds each element must be one of.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, Generic, TypeVar

import msgspec
from msgspec import Meta
from msgspec import inspect as mi

from console.policy import Effect, GrantScope
from console.protocol import results
from console.protocol.events import Topic
from console.protocol.history import KINDS
from console.protocol.ids import (
    AGENT_ID,
    FINGERPRINT,
    REQUEST_ID,
    SESSION_ID,
    TRIPWIRE_ID,
    AgentId,
    Fingerprint,
    RequestId,
    SessionId,
    TripwireId,
    id_format,
    read_id,
)
from console.protocol.params import Params

# Limits used by more than one method (or by the daemon besides).
MAX_EXPIRY_S = 10 * 365 * 86400.0  # a grant's expires_in_s
MAX_INPUT = 1 << 20  # sessions.input: bytes of text (twice that of base64)
MAX_SESSION_CHARS = 256  # the agent's own session id (a label)
MAX_MESSAGE_CHARS = 500  # agent.attention's message
MAX_KIND_CHARS = 64  # agent.attention's kind
MAX_PATH = 4096
MAX_HELD_COMMAND = 8192  # operation.held: a command the daemon issued is far shorter

Size = Annotated[int, Meta(ge=2, le=1000)]  # a terminal's cols or rows
Timeout = Annotated[float, Meta(ge=0.001, le=86_400)]  # an operation's timeout_s
Offset = Annotated[int, Meta(ge=0, le=2**53)]


class DecideAction(StrEnum):
    """``decide``'s action (the broker's ``Action``)."""

    APPROVE = "approve"
    DENY = "deny"


class AttentionState(StrEnum):
    """``agent.attention``'s state (console/daemon/attention.py ``State``)."""

    WAITING = "waiting"  # waits for the person: a permission dialog, or idle at the prompt
    WORKING = "working"  # a prompt was submitted or a tool call made since
    DONE = "done"  # the agent finished its turn (Stop)


class TripwireResolution(StrEnum):
    """``tripwire.resolve``'s action (the watcher's answer to an item)."""

    RESUME = "resume"
    KILL = "kill"
    KEEP_PAUSED = "keep_paused"


R = TypeVar("R", bound=results.MethodResult, covariant=True)


class MethodParams(
    msgspec.Struct, Generic[R], frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """Base of every method's params. Fields are read in the order they are declared.

    Parametrised by the method's result Struct, so a typed call
    (:meth:`console.client.asyncclient.AsyncClient.request`) returns what its params
    name: ``await client.request(Decide(...))`` is a :class:`DecideResult`."""


# ---------------------------------------------------------------- core


class Hello(MethodParams[results.HelloResult], frozen=True, kw_only=True):
    token: Annotated[str, Meta(max_length=256)] = ""  # operator.sock: the operator token
    # operator.sock: a one-time ticket from link.ticket, instead of the token
    ticket: Annotated[str, Meta(max_length=128)] = ""
    client: Annotated[str, Meta(max_length=128)] = ""
    # agent.sock: the agent's label for its session
    session_id: Annotated[str, Meta(max_length=MAX_SESSION_CHARS)] = ""
    # agent.sock: reconnect under this identity (with agent_secret)
    agent_id: Annotated[str, Meta(max_length=64)] = ""
    agent_secret: Annotated[str, Meta(max_length=128)] = ""
    agent_pid: Annotated[int, Meta(ge=1, le=2**22)] | None = None
    # agent.sock: one call of an agent (a hook, `exec`); reaching no agent process, anonymous
    per_call: bool = False


class DaemonStatus(MethodParams[results.DaemonStatusResult], frozen=True, kw_only=True):
    pass


class LinkTicket(MethodParams[results.LinkTicketResult], frozen=True, kw_only=True):
    pass


class DaemonStop(MethodParams[results.DaemonStopResult], frozen=True, kw_only=True):
    pass


class Subscribe(MethodParams[results.SubscribeResult], frozen=True, kw_only=True):
    # Each must be a Topic (the method says so); absent: every topic.
    topics: Annotated[tuple[str, ...], Meta(max_length=16)] = tuple(t.value for t in Topic)


class Unsubscribe(MethodParams[results.UnsubscribeResult], frozen=True, kw_only=True):
    pass


# ---------------------------------------------------------------- approvals


class OperationSubmit(MethodParams[results.OperationSubmitResult], frozen=True, kw_only=True):
    operation: dict[str, Any]  # docs/operations.md; parsed by the contract
    timeout_s: Timeout | None = None
    cols: Size = 120  # of the session an allowed interactive or durable operation becomes
    rows: Size = 40


class OperationCancel(MethodParams[results.OperationCancelResult], frozen=True, kw_only=True):
    request_id: RequestId


class PendingList(MethodParams[results.PendingListResult], frozen=True, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=1000)] = 200
    after: Annotated[str, Meta(max_length=64)] = ""  # a request id from the previous page's next


class RequestGet(MethodParams[results.RequestGetResult], frozen=True, kw_only=True):
    request_id: RequestId


class Decide(MethodParams[results.DecideResult], frozen=True, kw_only=True):
    target: Annotated[str, Meta(max_length=64)]  # a request id, or a fingerprint or its unique prefix
    action: DecideAction
    scope: GrantScope = GrantScope.ONCE
    expires_in_s: Annotated[float, Meta(ge=1, le=MAX_EXPIRY_S)] | None = None
    note: Annotated[str, Meta(max_length=4096)] = ""
    reason: Annotated[str, Meta(max_length=1024)] = ""
    always: bool = False
    # With scope "rule": the words the command starts with ("npm test"), console/policy/rules.py.
    rule: Annotated[str, Meta(max_length=1024)] = ""


class GrantsList(MethodParams[results.GrantsListResult], frozen=True, kw_only=True):
    include_inactive: bool = False


class GrantsAdd(MethodParams[results.GrantsAddResult], frozen=True, kw_only=True):
    fingerprint: Annotated[str, Meta(max_length=64)]  # 64 lowercase hex (the method parses it)
    scope: GrantScope = GrantScope.ALWAYS
    effect: Effect = Effect.ALLOW
    session_id: AgentId = ""  # for scope session: the agent id; "" when absent
    expires_in_s: Annotated[float, Meta(ge=1, le=MAX_EXPIRY_S)] | None = None
    note: Annotated[str, Meta(max_length=4096)] = ""
    tool: Annotated[str, Meta(max_length=128)] = ""
    summary: Annotated[str, Meta(max_length=4096)] = ""


class GrantsRevoke(MethodParams[results.GrantsRevokeResult], frozen=True, kw_only=True):
    target: Annotated[str, Meta(max_length=64)]  # a grant id or a fingerprint


# ---------------------------------------------------------------- execute


class OperationExec(MethodParams[results.OperationExecResult], frozen=True, kw_only=True):
    operation: dict[str, Any]
    timeout_s: Timeout | None = None
    stream: bool = True


class OperationHold(MethodParams[results.OperationHoldResult], frozen=True, kw_only=True):
    operation: dict[str, Any]
    timeout_s: Timeout | None = None


class OperationRun(MethodParams[results.OperationRunResult], frozen=True, kw_only=True):
    ticket: Annotated[str, Meta(max_length=256)]
    stream: bool = True


class OperationHeld(MethodParams[results.OperationHeldResult], frozen=True, kw_only=True):
    command: Annotated[str, Meta(max_length=MAX_HELD_COMMAND)]


# ---------------------------------------------------------------- history


class HistoryQuery(MethodParams[results.HistoryQueryResult], frozen=True, kw_only=True):
    # each one of console.protocol.history.KINDS (the method checks)
    kinds: Annotated[tuple[str, ...], Meta(max_length=len(KINDS))] = ("decision",)
    verdict: Annotated[str, Meta(max_length=16)] | None = None
    source: Annotated[str, Meta(max_length=32)] | None = None
    tool: Annotated[str, Meta(max_length=128)] | None = None
    # the agent kind (claude-code, codex, copilot, gemini, opencode, acp): tools ``<agent>:…``
    agent: Annotated[str, Meta(max_length=64)] | None = None
    session_id: Annotated[str, Meta(max_length=MAX_SESSION_CHARS)] | None = None
    fingerprint: Fingerprint | None = None
    request_id: RequestId | None = None
    since: Annotated[float, Meta(ge=0, le=1e11)] | None = None
    until: Annotated[float, Meta(ge=0, le=1e11)] | None = None
    search: Annotated[str, Meta(max_length=1024)] | None = None
    before_seq: Offset | None = None
    after_seq: Offset | None = None
    limit: Annotated[int, Meta(ge=1, le=5000)] = 200
    count: bool = False


class HistoryDetail(MethodParams[results.HistoryDetailResult], frozen=True, kw_only=True):
    request_id: RequestId


class HistoryPrevious(MethodParams[results.HistoryPreviousResult], frozen=True, kw_only=True):
    tool: Annotated[str, Meta(max_length=128)]
    executable: Annotated[str, Meta(max_length=MAX_PATH)]
    limit: Annotated[int, Meta(ge=1, le=200)] = 20


class HistoryVerify(MethodParams[results.HistoryVerifyResult], frozen=True, kw_only=True):
    pass


class HistoryAccept(MethodParams[results.HistoryAcceptResult], frozen=True, kw_only=True):
    through_seq: Annotated[int, Meta(ge=1, le=2**62)]
    note: Annotated[str, Meta(max_length=1024)] = ""


# ---------------------------------------------------------------- sessions


class SessionsList(MethodParams[results.SessionsListResult], frozen=True, kw_only=True):
    pass


class SessionsGet(MethodParams[results.SessionsGetResult], frozen=True, kw_only=True):
    session: SessionId


class SessionsNew(MethodParams[results.SessionsNewResult], frozen=True, kw_only=True):
    argv: Annotated[tuple[str, ...], Meta(max_length=10_000)]
    # The workspace of a confined session (its working directory); "" (or absent) for an
    # unconfined one: the operator's home directory, which the daemon resolves
    cwd: Annotated[str, Meta(max_length=MAX_PATH)] = ""
    title: Annotated[str, Meta(max_length=200)] = ""
    env: dict[str, Any] | None = None  # strings only (the method checks)
    cols: Size = 120
    rows: Size = 40
    # Outside any sandbox, with every power of the operator's account (recorded).
    unconfined: bool = False
    # A confined session's agent profile (console/policy/agents.py); "": by argv[0]
    agent: Annotated[str, Meta(max_length=32)] = ""


class SessionsAttach(MethodParams[results.SessionsAttachResult], frozen=True, kw_only=True):
    session: SessionId
    read_only: bool = False


class SessionsDetach(MethodParams[results.SessionsDetachResult], frozen=True, kw_only=True):
    session: SessionId


class SessionsInput(MethodParams[results.SessionsInputResult], frozen=True, kw_only=True):
    session: SessionId
    text: Annotated[str, Meta(max_length=MAX_INPUT)] | None = None  # exactly one of text and data_base64
    data_base64: Annotated[str, Meta(max_length=MAX_INPUT * 2)] | None = None


class SessionsResize(MethodParams[results.SessionsResizeResult], frozen=True, kw_only=True):
    session: SessionId
    cols: Size = 120
    rows: Size = 40


class SessionsSignal(MethodParams[results.SessionsSignalResult], frozen=True, kw_only=True):
    session: SessionId
    signal: Annotated[
        str, Meta(max_length=16)
    ]  # INT TERM HUP KILL QUIT STOP CONT USR1 USR2 WINCH, SIG prefix optional


class SessionsKill(MethodParams[results.SessionsKillResult], frozen=True, kw_only=True):
    session: SessionId
    grace_s: Annotated[float, Meta(ge=0, le=60)] = 3.0


class SessionsWait(MethodParams[results.SessionsWaitResult], frozen=True, kw_only=True):
    session: SessionId
    timeout_s: Annotated[float, Meta(ge=0, le=86_400)] | None = None


class SessionsRead(MethodParams[results.SessionsReadResult], frozen=True, kw_only=True):
    session: SessionId
    offset: Offset = 0
    max_bytes: Annotated[int, Meta(ge=1, le=1 << 20)] = 65536


class SessionsScreen(MethodParams[results.SessionsScreenResult], frozen=True, kw_only=True):
    session: SessionId
    scrollback: bool = False


class SessionsRemove(MethodParams[results.SessionsRemoveResult], frozen=True, kw_only=True):
    session: SessionId


class SessionsAdopt(MethodParams[results.SessionsAdoptResult], frozen=True, kw_only=True):
    session: SessionId


class SessionsPrune(MethodParams[results.SessionsPruneResult], frozen=True, kw_only=True):
    all: bool = False  # every finished recording, not only those beyond the quota


# ---------------------------------------------------------------- watch


class WatchStatus(MethodParams[results.WatchStatusResult], frozen=True, kw_only=True):
    pass


class WatchRecent(MethodParams[results.WatchRecentResult], frozen=True, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=10_000)] = 200
    protected_only: bool = False
    session: Annotated[str, Meta(max_length=64)] = ""
    agent_session: Annotated[str, Meta(max_length=MAX_SESSION_CHARS)] = ""


class WatchDiff(MethodParams[results.WatchDiffResult], frozen=True, kw_only=True):
    workspace_root: Annotated[str, Meta(max_length=MAX_PATH)]
    path: Annotated[str, Meta(max_length=MAX_PATH)]  # relative to the root


class WatchAdd(MethodParams[results.WatchAddResult], frozen=True, kw_only=True):
    workspace_root: Annotated[str, Meta(max_length=MAX_PATH)]


class WatchRemove(MethodParams[results.WatchRemoveResult], frozen=True, kw_only=True):
    workspace_root: Annotated[str, Meta(max_length=MAX_PATH)]


class TripwireList(MethodParams[results.TripwireListResult], frozen=True, kw_only=True):
    include_resolved: bool = False
    open: bool = False  # paused, kept paused, and exited writers' items


class TripwireResolve(MethodParams[results.TripwireResolveResult], frozen=True, kw_only=True):
    """``revert``: put the protected file back as its baseline (default: on kill, not on
    keep_paused; never with resume). ``accept``: resume makes the new content the
    baseline, and must say so (true) to be done."""

    id: TripwireId
    action: TripwireResolution
    revert: bool | None = None
    accept: bool = False


class TripwireRevert(MethodParams[results.TripwireRevertResult], frozen=True, kw_only=True):
    id: TripwireId


# ---------------------------------------------------------------- workspaces


class WorkspacesList(MethodParams[results.WorkspacesListResult], frozen=True, kw_only=True):
    pass


class WorkspacesAdd(MethodParams[results.WorkspacesAddResult], frozen=True, kw_only=True):
    workspace_root: Annotated[str, Meta(max_length=MAX_PATH)]
    note: Annotated[str, Meta(max_length=1024)] = ""


class WorkspacesRemove(MethodParams[results.WorkspacesRemoveResult], frozen=True, kw_only=True):
    workspace_root: Annotated[str, Meta(max_length=MAX_PATH)]


# ---------------------------------------------------------------- attention


class AgentAttention(MethodParams[results.AgentAttentionResult], frozen=True, kw_only=True):
    state: AttentionState
    session_id: Annotated[str, Meta(max_length=MAX_SESSION_CHARS)] = ""
    message: Annotated[str, Meta(max_length=MAX_MESSAGE_CHARS)] = ""
    # lowercase letters, digits and _-.: (the method checks)
    kind: Annotated[str, Meta(max_length=MAX_KIND_CHARS)] = ""


class AgentAttentionList(MethodParams[results.AgentAttentionListResult], frozen=True, kw_only=True):
    pass


def struct_name(method: str) -> str:
    """``grants.add`` → ``GrantsAdd``: the Struct of a method's params is named so."""
    return "".join(part.capitalize() for part in re.split(r"[._]", method))


# ---------------------------------------------------------------- reading

S = TypeVar("S", bound=MethodParams[Any])
_MISSING: Any = object()
Reader = Callable[[Params], Any]


def read_params(params: dict[str, Any] | Params, cls: type[S]) -> S:
    """``params`` as a ``cls``, checked field by field with the :class:`Params` messages;
    a name that is no field is refused (``unknown params; accepted: …``).

    A mapping that is valid takes the short way: ``msgspec.convert`` accepts exactly what
    the field-by-field reading accepts, except a NUL in a text, which is checked after it
    (tests/protocol/test_protocol_requests.py holds the two to that). Anything it refuses is read
    field by field, which raises the refusal the daemon always gave.
    """
    if not isinstance(params, Params):
        try:
            args: S = msgspec.convert(params, cls)
        except msgspec.ValidationError:
            pass
        else:
            if not any("\x00" in (getattr(args, name) or "") for name in _texts(cls)):
                return args
        params = Params(params)
    values = {name: read(params) for name, read in _plan(cls)}
    params.done()
    return cls(**values)


@functools.cache
def _texts(cls: type[MethodParams[Any]]) -> tuple[str, ...]:
    """The fields read with ``Params.text`` (which refuses a NUL; msgspec does not)."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    out = []
    for f in info.fields:
        kind = f.type
        if isinstance(kind, mi.UnionType):
            kind = next(t for t in kind.types if not isinstance(t, mi.NoneType))
        if isinstance(kind, mi.StrType) and kind.pattern is None:
            out.append(f.name)
    return tuple(out)


@functools.cache
def _plan(cls: type[MethodParams[Any]]) -> tuple[tuple[str, Reader], ...]:
    """How to read each field of ``cls``, worked out once per Struct."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return tuple((f.name, _reader(cls, f)) for f in info.fields)


def _reader(cls: type[MethodParams[Any]], f: mi.Field) -> Reader:
    name = f.name
    if f.default_factory is not msgspec.NODEFAULT:
        raise TypeError(f"{cls.__name__}.{name}: give a plain default (a tuple, not a list)")
    default = _MISSING if f.required else f.default
    kind = f.type
    if isinstance(kind, mi.UnionType):
        others = [t for t in kind.types if not isinstance(t, mi.NoneType)]
        if len(others) != 1 or len(kind.types) != 2 or default is not None:
            raise TypeError(f"{cls.__name__}.{name}: only `X | None = None` unions are read")
        kind = others[0]
    args = (name,) if default is _MISSING else (name, default)
    if isinstance(kind, mi.StrType):
        if kind.pattern is not None:
            fmt = id_format(kind.pattern)
            if fmt is None:
                raise TypeError(
                    f"{cls.__name__}.{name}: a pattern must be an id format of console.protocol.ids"
                )
            id_fmt: re.Pattern[str] = fmt
            return lambda p: read_id(p, name, id_fmt, *args[1:])
        max_len = _bound(cls, name, kind.max_length)
        return lambda p: p.text(*args, max_len=max_len)
    if isinstance(kind, mi.IntType):
        low, high = _bound(cls, name, kind.ge), _bound(cls, name, kind.le)
        return lambda p: p.integer(*args, low=low, high=high)
    if isinstance(kind, mi.FloatType):
        flow, fhigh = _bound(cls, name, kind.ge), _bound(cls, name, kind.le)
        return lambda p: p.number(*args, low=flow, high=fhigh)
    if isinstance(kind, mi.BoolType):
        return lambda p: p.flag(*args)
    if isinstance(kind, mi.EnumType) and issubclass(kind.cls, StrEnum):
        enum = kind.cls
        return lambda p: p.choice(name, enum, *args[1:])
    if isinstance(kind, mi.DictType) and isinstance(kind.key_type, mi.StrType):
        return lambda p: p.obj(*args)
    if isinstance(kind, mi.VarTupleType) and isinstance(kind.item_type, mi.StrType):
        max_items = _bound(cls, name, kind.max_length)

        def read_texts(p: Params) -> Any:
            value = p.texts(*args, max_items=max_items)
            return tuple(value) if isinstance(value, list) else value

        return read_texts
    raise TypeError(f"{cls.__name__}.{name}: no Params reader for {kind!r}")


def _bound(cls: type[MethodParams[Any]], name: str, value: Any) -> Any:
    """Every length and range is explicit: Params' own defaults must never apply unseen."""
    if value is None:
        raise TypeError(f"{cls.__name__}.{name}: give its bound (max_length, or ge and le)")
    return value


# ---------------------------------------------------------------- clients and docs


def to_params(args: MethodParams[Any] | dict[str, Any] | None) -> dict[str, Any] | None:
    """A call's params as sent: a Struct's fields without those at their default."""
    if isinstance(args, MethodParams):
        out: dict[str, Any] = msgspec.to_builtins(args)
        return out
    return args


def describe(cls: type[MethodParams[Any]]) -> str:
    """The params of ``cls`` as docs/protocol.md writes them: ``Params of `m`: …``."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    items = [_describe_field(f) for f in info.fields]
    return "; ".join(items) + "." if items else "none."


def _describe_field(f: mi.Field) -> str:
    kind, optional = f.type, False
    if isinstance(kind, mi.UnionType):
        kind, optional = next(t for t in kind.types if not isinstance(t, mi.NoneType)), True
    what = _describe_type(kind)
    if f.required:
        tail = "required"
    elif optional:
        tail = "optional"
    else:
        default = msgspec.to_builtins(f.default)
        tail = "default " + msgspec.json.encode(default).decode()
    return f"`{f.name}` {what}, {tail}"


def _describe_type(kind: Any) -> str:
    if isinstance(kind, mi.StrType):
        if kind.pattern is not None:
            return _ID_WORDS.get(kind.pattern, "id")
        return f"string ≤ {kind.max_length}"
    if isinstance(kind, mi.IntType):
        return f"integer {kind.ge}–{kind.le}"
    if isinstance(kind, mi.FloatType):
        return f"number {kind.ge:g}–{kind.le:g}"
    if isinstance(kind, mi.BoolType):
        return "boolean"
    if isinstance(kind, mi.EnumType):
        return " | ".join(m.value for m in kind.cls)
    if isinstance(kind, mi.DictType):
        return "object"
    if isinstance(kind, mi.VarTupleType):
        return f"list of ≤ {kind.max_length} strings"
    return "value"


_ID_WORDS = {
    REQUEST_ID.pattern: "request id",
    SESSION_ID.pattern: "session id",
    TRIPWIRE_ID.pattern: "tripwire item id",
    AGENT_ID.pattern: "agent id",
    FINGERPRINT.pattern: "fingerprint",
}
