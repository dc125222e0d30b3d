"""The result of every daemon method, typed: one msgspec Struct per method.

Why: the params (console/protocol/requests.py) and the events (console/protocol/events.py)
were already checked at the socket, so a result was the one part of the wire that a
client indexed into on trust. A daemon of another version, or a daemon bug, then showed
up far from its cause, as a ``KeyError`` in a screen or a ``None`` printed by the CLI.
With one type per result, shared by both ends:

- the daemon's handlers (console/daemon/methods/) build these Structs, so what a method
  answers is written down in one place that mypy checks, not spread over dict literals;
- the clients (console/client/) check each answer against its Struct at the socket
  (:func:`console.protocol.table.decode_result`) and raise :class:`ResultError`, naming the method and the field,
  never the value, before any caller reads it; the connection goes on serving;
- docs/protocol.md gives each method a ``Result of`` line made by :func:`describe`, which
  tests/protocol/test_protocol_results.py checks, together with real answers of a real daemon.

A Struct is named after its method with ``Result`` (``grants.add`` → :class:`GrantsAddResult`);
:mod:`console.protocol.table` pairs it with its method's name and params.

Unknown fields are allowed on every result, unlike params and events: a newer daemon that
adds a key to an answer must not break an older client that never reads it (the event
Structs forbid them because a refused event is only skipped; a refused result fails the
call). The tests hold the daemon to its Structs the other way: a real answer decoded and
encoded again must give the same JSON, so a key the Structs do not know fails there.

A key the daemon sometimes leaves out is ``X | UnsetType = UNSET`` (``may be absent``): it
is then absent on the wire too, never ``null``. No result Struct uses ``omit_defaults``.

The daemon's status and its parts (``daemon.status``, ``subscribe``) and the attention
entry are typed in :mod:`console.protocol.status`; the watcher's status, its roots, file
events and accepted changes (``watch.*``) in :mod:`console.protocol.watch`.

Deliberately left as mappings (``dict[str, Any]``), as in events.py, because they are big
or open-ended, the console renders them field by field, and they have their own pages:
a history row's ``body`` (its shape is its kind's; :class:`~console.protocol.records.HistoryRow`
reads it), the policy's network policy and agents, and the parts a daemon of another
version may add. What clients branch on (verdicts, ids, counts, cursors, flags) is typed,
and so are the pending request item (``pending.list``, ``request.get``), which the operator
decides on (:class:`~console.protocol.pending.PendingItem`), the session object
(``sessions.list`` and the other session methods, :class:`~console.protocol.sessions.SessionObject`),
the tripwire item (``tripwire.list``, ``tripwire.resolve``,
:class:`~console.protocol.tripwire.TripwireNotice`), the grant (``grants.list``,
``grants.add``, ``decide``, :class:`~console.protocol.grants.GrantObject`), and the
history's rows, an execution's record and an answer's escalations, denials and
authorization (console/protocol/records.py).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType
from msgspec import inspect as mi

from console.protocol.grants import GrantObject
from console.protocol.jsonrpc import INTERNAL_ERROR, RPCError
from console.protocol.pending import AgentIdentity, DiffLine, PendingItem
from console.protocol.records import AuthorizationRecord, DenialRecord, ExecRecord, HistoryRow
from console.protocol.sessions import SessionObject
from console.protocol.status import (
    AttentionEntry,
    AttentionStatus,
    EgressStatus,
    IntegrityStatus,
    PolicyStatus,
    SandboxStatus,
    SessionsStatus,
    StatusHistory,
)
from console.protocol.tripwire import TripwireNotice
from console.protocol.watch import AcceptedChange, WatchEntry, WatchStatus


class MethodResult(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every method's result. Fields are sent in the order they are declared."""


# ---------------------------------------------------------------- core


class HelloAgent(AgentIdentity, frozen=True, kw_only=True):
    """The identity ``hello`` bound an agent.sock connection to, with its secret."""

    secret: str
    bound_by: str  # secret, sandbox, process, process_tree, new, anonymous or connection


class HelloResult(MethodResult, frozen=True, kw_only=True):
    protocol: int
    role: Literal["agent", "operator"]
    daemon_pid: int
    version: str
    peer_pid: int
    agent: HelloAgent | UnsetType = UNSET  # agent.sock only


class LinkTicketResult(MethodResult, frozen=True, kw_only=True):
    ticket: str
    socket: str  # the operator socket the ticket opens, as this daemon knows it
    expires_in_s: float


class DaemonStatusResult(MethodResult, frozen=True, kw_only=True):
    """Two views: operator.sock's (everything) and agent.sock's (``view: "agent"``, the
    agent's own standing); a field of one view only is absent from the other."""

    pid: int
    version: str
    protocol: int | UnsetType = UNSET  # agent view
    started_at: float
    uptime_s: float
    view: Literal["agent"] | UnsetType = UNSET  # agent view
    agent: AgentIdentity | UnsetType = UNSET  # agent view
    state_dir: str | UnsetType = UNSET  # operator view
    runtime_dir: str | UnsetType = UNSET  # operator view
    policy: PolicyStatus  # operator: the whole policy; agent: the facts it acts on
    approval_timeout_s: float | UnsetType = UNSET  # agent view
    pending: int  # operator: every pending request; agent: its own
    held: int | UnsetType = UNSET  # operator view
    connections: int | UnsetType = UNSET  # operator view
    agents: int | UnsetType = UNSET  # operator view
    sandbox: SandboxStatus
    sessions: SessionsStatus
    egress: EgressStatus | UnsetType = UNSET  # operator view: the egress broker's counts
    watch: WatchStatus | UnsetType = UNSET  # operator view
    workspaces: list[TrustedWorkspace] | UnsetType = UNSET  # operator view
    attention: AttentionStatus | UnsetType = UNSET  # operator view
    history: StatusHistory | UnsetType = UNSET  # operator view
    integrity: IntegrityStatus | UnsetType = UNSET  # operator view


class DaemonStopResult(MethodResult, frozen=True, kw_only=True):
    stopping: bool
    pid: int


class SubscribeResult(MethodResult, frozen=True, kw_only=True):
    topics: list[str]
    status: DaemonStatusResult  # as daemon.status on operator.sock


class UnsubscribeResult(MethodResult, frozen=True, kw_only=True):
    pass


# ---------------------------------------------------------------- approvals


class OperationDecision(MethodResult, frozen=True, kw_only=True):
    """The answer to an operation: ``operation.submit``'s, and the ``decision`` of
    ``operation.exec``, ``operation.hold`` and ``operation.run``."""

    request_id: str
    verdict: Literal["allow", "deny"]
    reason: str
    source: str
    scope: str  # "" when no grant scope applies
    fingerprint: str
    note: str
    escalations: list[DiffLine]
    authorization: AuthorizationRecord | None  # allow only
    decided_at: float
    latency_ms: float
    denials: list[DenialRecord]


class OperationSubmitResult(OperationDecision, frozen=True, kw_only=True):
    """An allowed interactive or durable operation is a session: ``session`` (null, with
    ``session_error``, when it could not start). Both absent otherwise."""

    session: SessionObject | UnsetType | None = UNSET
    session_error: str | UnsetType = UNSET


class OperationCancelResult(MethodResult, frozen=True, kw_only=True):
    cancelled: str


class PendingListResult(MethodResult, frozen=True, kw_only=True):
    pending: list[PendingItem]
    count: int
    next: str | None


class HistoryDetailResult(MethodResult, frozen=True, kw_only=True):
    request_id: str
    request: HistoryRow | None
    decision: HistoryRow | None
    outcome: HistoryRow | None
    file_events: list[HistoryRow]
    events: list[HistoryRow]
    truncated: bool | UnsetType = UNSET  # true when the 2 MiB bound cut the events


class RequestGetResult(MethodResult, frozen=True, kw_only=True):
    """Pending: ``request`` (an item as ``pending.list``); else ``detail`` (as ``history.detail``)."""

    pending: bool
    request: PendingItem | UnsetType = UNSET
    detail: HistoryDetailResult | UnsetType = UNSET


class DecideResult(MethodResult, frozen=True, kw_only=True):
    decided: list[str]
    verdict: Literal["allow", "deny"]
    grant: GrantObject | None


class GrantsListResult(MethodResult, frozen=True, kw_only=True):
    grants: list[GrantObject]


class GrantsAddResult(MethodResult, frozen=True, kw_only=True):
    grant: GrantObject


class GrantsRevokeResult(MethodResult, frozen=True, kw_only=True):
    revoked: list[str]


# ---------------------------------------------------------------- execute


class OperationExecResult(MethodResult, frozen=True, kw_only=True):
    decision: OperationDecision
    result: ExecRecord | None  # null when denied


class OperationHoldResult(MethodResult, frozen=True, kw_only=True):
    decision: OperationDecision
    ticket: str | None  # the ticket's id (its request id); null when denied
    command: str | None  # the exact command that redeems it; null when denied


class OperationHeldResult(MethodResult, frozen=True, kw_only=True):
    held: bool
    ticket: str | None  # the ticket's id when held


class OperationRunResult(MethodResult, frozen=True, kw_only=True):
    decision: OperationDecision
    result: ExecRecord


# ---------------------------------------------------------------- history


class HistoryQueryResult(MethodResult, frozen=True, kw_only=True):
    rows: list[HistoryRow]
    older: int | None
    newer: int | None
    count: int | UnsetType = UNSET  # when asked for (count: true)


class HistoryPreviousResult(MethodResult, frozen=True, kw_only=True):
    decisions: list[HistoryRow]


class HistoryVerifyResult(MethodResult, frozen=True, kw_only=True):
    ok: bool
    checked: int
    first_bad_seq: int | None
    what: str
    message: str
    grants_checked: int
    tail_seq: int
    tail_hash: str
    unaccepted: list[tuple[int, int]]


class HistoryAcceptResult(MethodResult, frozen=True, kw_only=True):
    accepted: list[tuple[int, int]]
    unaccepted: list[tuple[int, int]]


# ---------------------------------------------------------------- sessions


class SessionsListResult(MethodResult, frozen=True, kw_only=True):
    sessions: list[SessionObject]


class OneSession(MethodResult, frozen=True, kw_only=True):
    """The answers that are one session object (get, new, kill, wait, adopt)."""

    session: SessionObject


class SessionsGetResult(OneSession, frozen=True, kw_only=True):
    pass


class SessionsNewResult(OneSession, frozen=True, kw_only=True):
    pass


class SessionsAttachResult(MethodResult, frozen=True, kw_only=True):
    session: str  # the session's id
    offset: int
    cols: int
    rows: int
    snapshot_base64: str


class SessionsDetachResult(MethodResult, frozen=True, kw_only=True):
    detached: str


class SessionsInputResult(MethodResult, frozen=True, kw_only=True):
    written: int


class SessionsResizeResult(MethodResult, frozen=True, kw_only=True):
    cols: int
    rows: int


class SessionsSignalResult(MethodResult, frozen=True, kw_only=True):
    signalled: str  # the signal's name, SIG prefixed


class SessionsKillResult(OneSession, frozen=True, kw_only=True):
    pass


class SessionsWaitResult(OneSession, frozen=True, kw_only=True):
    pass


class SessionsReadResult(MethodResult, frozen=True, kw_only=True):
    data_base64: str
    next_offset: int
    dropped_bytes: int


class SessionsScreenResult(MethodResult, frozen=True, kw_only=True):
    text: str


class SessionsRemoveResult(MethodResult, frozen=True, kw_only=True):
    removed: str


class SessionsAdoptResult(OneSession, frozen=True, kw_only=True):
    pass


class PrunedRecording(msgspec.Struct, frozen=True, kw_only=True):
    session: str
    bytes: int


class SessionsPruneResult(MethodResult, frozen=True, kw_only=True):
    pruned: list[PrunedRecording]
    freed_bytes: int
    total_bytes: int
    quota_bytes: int


# ---------------------------------------------------------------- watch


class WatchStatusResult(MethodResult, WatchStatus, frozen=True, kw_only=True):
    """The watcher's status (``daemon.status`` carries the same object as ``watch``)."""


class WatchRecentResult(MethodResult, frozen=True, kw_only=True):
    events: list[WatchEntry]


class WatchDiffResult(MethodResult, frozen=True, kw_only=True):
    diff: str
    accepted: AcceptedChange | None  # the tripwire answer that made the change the baseline


class WatchAddResult(WatchStatusResult, frozen=True, kw_only=True):
    pass


class WatchRemoveResult(WatchStatusResult, frozen=True, kw_only=True):
    pass


class TripwireListResult(MethodResult, frozen=True, kw_only=True):
    items: list[TripwireNotice]


class TripwireResolveResult(MethodResult, frozen=True, kw_only=True):
    item: TripwireNotice


class TripwireRevertResult(MethodResult, frozen=True, kw_only=True):
    item: TripwireNotice


# ---------------------------------------------------------------- workspaces


class TrustedWorkspace(msgspec.Struct, frozen=True, kw_only=True):
    workspace_root: str
    source: str  # policy, operator or approval
    at: float | None  # null for the policy's
    request_id: str


class WorkspacesListResult(MethodResult, frozen=True, kw_only=True):
    workspaces: list[TrustedWorkspace]


class WorkspacesAddResult(MethodResult, frozen=True, kw_only=True):
    added: bool  # false: it was trusted already (then as it was trusted)
    workspace_root: str
    at: float
    source: str
    request_id: str


class WorkspacesRemoveResult(MethodResult, frozen=True, kw_only=True):
    workspace_root: str
    removed: bool


# ---------------------------------------------------------------- attention


class AgentAttentionResult(MethodResult, frozen=True, kw_only=True):
    entry: AttentionEntry
    changed: bool


class AgentAttentionListResult(MethodResult, frozen=True, kw_only=True):
    agents: list[AttentionEntry]
    waiting: int


# ---------------------------------------------------------------- clients


class ResultError(RPCError):
    """A method's result that is not what the protocol says. Raised by the clients, at
    the socket, instead of the result; never sent. An :class:`RPCError` (code
    ``INTERNAL_ERROR``), so every caller that handles a refused call handles this one;
    ``data`` names the method and where in the result (``$.grants[0].uses``)."""

    def __init__(self, method: str, problem: str, path: str) -> None:
        super().__init__(
            INTERNAL_ERROR,
            f"malformed result of {method} from the daemon (daemon of another version?): {problem}",
            {"method": method, "path": path},
        )
        self.method = method


# ---------------------------------------------------------------- docs


def describe(cls: type[msgspec.Struct]) -> str:
    """The result of ``cls`` as docs/protocol.md writes it: ``Result of `m`: …``; or the
    fields of a part it names instead of repeating (``A pending item: …``)."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return _fields_of(info, "; ") + "." if info.fields else "an empty object."


def _fields_of(info: mi.StructType, sep: str) -> str:
    # msgspec.inspect drops UnsetType from a field's type and UNSET from its default.
    absent = {f.encode_name for f in msgspec.structs.fields(info.cls) if f.default is UNSET}
    return sep.join(
        f"`{f.encode_name}` {_describe_type(f.type)}" + (", may be absent" if f.encode_name in absent else "")
        for f in info.fields
    )


def _describe_type(kind: Any) -> str:
    if isinstance(kind, mi.UnionType):
        others = [t for t in kind.types if not isinstance(t, mi.NoneType)]
        nullable = len(others) < len(kind.types)
        return " or ".join(_describe_type(t) for t in others) + (" or null" if nullable else "")
    if isinstance(kind, mi.StrType):
        return "string"
    if isinstance(kind, mi.BoolType):
        return "boolean"
    if isinstance(kind, mi.IntType):
        return "integer"
    if isinstance(kind, mi.FloatType):
        return "number"
    if isinstance(kind, mi.LiteralType):
        return " | ".join(str(v) for v in kind.values)
    if isinstance(kind, mi.DictType):
        return "object"
    if isinstance(kind, mi.ListType):
        return "list of " + _plural(kind.item_type)
    if isinstance(kind, mi.TupleType):
        return "[" + ", ".join(_describe_type(t) for t in kind.item_types) + "]"
    if isinstance(kind, mi.StructType):
        if kind.cls in NAMED:
            return f"object, {NAMED[kind.cls]}"
        named = _LIKE.get(kind.cls)
        if named is not None:
            # A method's result (or a part every field of which is one) is named, not repeated.
            like, whole = named
            assert issubclass(whole, kind.cls), (kind.cls, like)
            extra = [
                f"`{name}`" for name in whole.__struct_fields__ if name not in kind.cls.__struct_fields__
            ]
            without = ", ".join(extra[:-1]) + " and " + extra[-1] if len(extra) > 1 else "".join(extra)
            return f"object as `{like}` answers" + (f", without {without}" if without else "")
        return "object {" + _fields_of(kind, ", ") + "}"
    raise TypeError(f"no words for {kind!r}: say how docs/protocol.md names it")


_LIKE: dict[type, tuple[str, type[MethodResult]]] = {
    OperationDecision: ("operation.submit", OperationSubmitResult),
    HistoryDetailResult: ("history.detail", HistoryDetailResult),
    DaemonStatusResult: ("daemon.status", DaemonStatusResult),
    WatchStatus: ("watch.status", WatchStatusResult),
}
# Parts docs/protocol.md describes once, each on a line of its own (``A pending item: …``).
NAMED: dict[type, str] = {
    GrantObject: "a grant",
    PendingItem: "a pending item",
    SessionObject: "a session object",
    TripwireNotice: "a tripwire item",
    HistoryRow: "a history row",
    ExecRecord: "an execution record",
    DenialRecord: "a denial",
    WatchEntry: "a watch entry",
    AttentionEntry: "an attention entry",
    PolicyStatus: "a policy status",
}


def _plural(kind: Any) -> str:
    if isinstance(kind, mi.DictType):
        return "objects"
    if isinstance(kind, mi.StructType):
        if kind.cls in NAMED:
            return f"objects, each {NAMED[kind.cls]}"
        return "objects {" + _fields_of(kind, ", ") + "}"
    if isinstance(kind, mi.StrType):
        return "strings"
    return _describe_type(kind)
