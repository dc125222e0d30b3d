"""Every daemon method in one table: its name, params Struct, result Struct and who may
call it.

Why one table: the daemon (console/daemon/methods/), the clients (console/client/) and
docs/protocol.md each need the same four facts about a method. Declared once here, the
daemon's dispatcher reads the access rule from the row (the handlers only say what a
method does), a typed call finds its method from its params
(``await client.request(Decide(...))`` is a :class:`~console.protocol.results.DecideResult`),
and a client checks an answer against the row's result Struct at the socket. The models
are tmux's ``cmd_entry`` and codex's ``client_request_definitions!``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

import msgspec

from console.protocol import requests as rq
from console.protocol import results as rs
from console.protocol.invalid import problem
from console.protocol.results import MethodResult, ResultError


class Access(Enum):
    """Who may call a method, and when."""

    AGENT = "agent"  # either socket; on agent.sock it acts for the caller's identity
    OPERATOR = "operator"  # operator.sock only
    INERT = "inert"  # either socket, and it does not fix an agent's identity (a second hello may follow)
    BEFORE_AUTH = "before_auth"  # the one call an unauthenticated connection may make


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    params: type[rq.MethodParams[Any]]
    result: type[MethodResult]
    access: Access


ROWS: tuple[Row, ...] = (
    Row("hello", rq.Hello, rs.HelloResult, Access.BEFORE_AUTH),
    Row("link.ticket", rq.LinkTicket, rs.LinkTicketResult, Access.OPERATOR),
    Row("daemon.status", rq.DaemonStatus, rs.DaemonStatusResult, Access.INERT),
    Row("daemon.stop", rq.DaemonStop, rs.DaemonStopResult, Access.OPERATOR),
    Row("subscribe", rq.Subscribe, rs.SubscribeResult, Access.OPERATOR),
    Row("unsubscribe", rq.Unsubscribe, rs.UnsubscribeResult, Access.OPERATOR),
    Row("operation.submit", rq.OperationSubmit, rs.OperationSubmitResult, Access.AGENT),
    Row("operation.cancel", rq.OperationCancel, rs.OperationCancelResult, Access.AGENT),
    Row("pending.list", rq.PendingList, rs.PendingListResult, Access.OPERATOR),
    Row("request.get", rq.RequestGet, rs.RequestGetResult, Access.OPERATOR),
    Row("decide", rq.Decide, rs.DecideResult, Access.OPERATOR),
    Row("grants.list", rq.GrantsList, rs.GrantsListResult, Access.OPERATOR),
    Row("grants.add", rq.GrantsAdd, rs.GrantsAddResult, Access.OPERATOR),
    Row("grants.revoke", rq.GrantsRevoke, rs.GrantsRevokeResult, Access.OPERATOR),
    Row("operation.exec", rq.OperationExec, rs.OperationExecResult, Access.AGENT),
    Row("operation.hold", rq.OperationHold, rs.OperationHoldResult, Access.AGENT),
    Row("operation.run", rq.OperationRun, rs.OperationRunResult, Access.AGENT),
    Row("operation.held", rq.OperationHeld, rs.OperationHeldResult, Access.INERT),
    Row("history.query", rq.HistoryQuery, rs.HistoryQueryResult, Access.OPERATOR),
    Row("history.detail", rq.HistoryDetail, rs.HistoryDetailResult, Access.OPERATOR),
    Row("history.previous", rq.HistoryPrevious, rs.HistoryPreviousResult, Access.OPERATOR),
    Row("history.verify", rq.HistoryVerify, rs.HistoryVerifyResult, Access.OPERATOR),
    Row("history.accept", rq.HistoryAccept, rs.HistoryAcceptResult, Access.OPERATOR),
    Row("sessions.list", rq.SessionsList, rs.SessionsListResult, Access.AGENT),
    Row("sessions.get", rq.SessionsGet, rs.SessionsGetResult, Access.AGENT),
    Row("sessions.new", rq.SessionsNew, rs.SessionsNewResult, Access.OPERATOR),
    Row("sessions.attach", rq.SessionsAttach, rs.SessionsAttachResult, Access.AGENT),
    Row("sessions.detach", rq.SessionsDetach, rs.SessionsDetachResult, Access.AGENT),
    Row("sessions.input", rq.SessionsInput, rs.SessionsInputResult, Access.AGENT),
    Row("sessions.resize", rq.SessionsResize, rs.SessionsResizeResult, Access.AGENT),
    Row("sessions.signal", rq.SessionsSignal, rs.SessionsSignalResult, Access.AGENT),
    Row("sessions.kill", rq.SessionsKill, rs.SessionsKillResult, Access.AGENT),
    Row("sessions.wait", rq.SessionsWait, rs.SessionsWaitResult, Access.AGENT),
    Row("sessions.read", rq.SessionsRead, rs.SessionsReadResult, Access.AGENT),
    Row("sessions.screen", rq.SessionsScreen, rs.SessionsScreenResult, Access.AGENT),
    Row("sessions.remove", rq.SessionsRemove, rs.SessionsRemoveResult, Access.OPERATOR),
    Row("sessions.adopt", rq.SessionsAdopt, rs.SessionsAdoptResult, Access.OPERATOR),
    Row("sessions.prune", rq.SessionsPrune, rs.SessionsPruneResult, Access.OPERATOR),
    Row("watch.status", rq.WatchStatus, rs.WatchStatusResult, Access.OPERATOR),
    Row("watch.recent", rq.WatchRecent, rs.WatchRecentResult, Access.OPERATOR),
    Row("watch.diff", rq.WatchDiff, rs.WatchDiffResult, Access.OPERATOR),
    Row("watch.add", rq.WatchAdd, rs.WatchAddResult, Access.OPERATOR),
    Row("watch.remove", rq.WatchRemove, rs.WatchRemoveResult, Access.OPERATOR),
    Row("tripwire.list", rq.TripwireList, rs.TripwireListResult, Access.OPERATOR),
    Row("tripwire.resolve", rq.TripwireResolve, rs.TripwireResolveResult, Access.OPERATOR),
    Row("tripwire.revert", rq.TripwireRevert, rs.TripwireRevertResult, Access.OPERATOR),
    Row("workspaces.list", rq.WorkspacesList, rs.WorkspacesListResult, Access.OPERATOR),
    Row("workspaces.add", rq.WorkspacesAdd, rs.WorkspacesAddResult, Access.OPERATOR),
    Row("workspaces.remove", rq.WorkspacesRemove, rs.WorkspacesRemoveResult, Access.OPERATOR),
    Row("agent.attention", rq.AgentAttention, rs.AgentAttentionResult, Access.AGENT),
    Row("agent.attention_list", rq.AgentAttentionList, rs.AgentAttentionListResult, Access.INERT),
)

BY_NAME: dict[str, Row] = {row.name: row for row in ROWS}
BY_PARAMS: dict[type[rq.MethodParams[Any]], Row] = {row.params: row for row in ROWS}
_BY_RESULT: dict[type[MethodResult], Row] = {row.result: row for row in ROWS}


def decode_result(method: str, result: Any) -> MethodResult | None:
    """``result`` (decoded JSON) checked against ``method``'s Struct and converted to it;
    None for a method this protocol does not know (nothing to check it against). Raises
    :class:`ResultError` naming the method and the field."""
    row = BY_NAME.get(method)
    if row is None:
        return None
    try:
        return msgspec.convert(result, row.result)
    except msgspec.ValidationError as exc:
        what, path = problem(exc)
        raise ResultError(method, what, path) from None


R = TypeVar("R", bound=MethodResult)


def as_result(kind: type[R], result: Any) -> R:
    """An answer as its Struct, for a caller holding the decoded JSON of a call (an
    answer relayed by another process). Raises :class:`ResultError` as the client would."""
    decoded = decode_result(_BY_RESULT[kind].name, result)
    assert isinstance(decoded, kind)
    return decoded
