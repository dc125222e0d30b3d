"""Submitting operations, the pending queue, operator decisions and grants."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import msgspec

from console.contract.fingerprint import parse_fingerprint
from console.contract.operation import Mode, Operation, parse
from console.contract.outcome import CONTENT_CHANGED
from console.contract.problem import InvalidInput
from console.daemon.admission import admitted
from console.daemon.connection import CallContext, Handler
from console.daemon.errors import ServiceError
from console.daemon.methods.history import bounded_detail
from console.daemon.quotas import MAX_RESULT_BYTES
from console.policy import Grant, GrantScope
from console.protocol.grants import GrantObject
from console.protocol.jsonrpc import INVALID_PARAMS, NOT_FOUND, RPCError
from console.protocol.pending import PendingItem
from console.protocol.requests import (
    Decide,
    DecideAction,
    GrantsAdd,
    GrantsList,
    GrantsRevoke,
    OperationCancel,
    OperationSubmit,
    PendingList,
    RequestGet,
)
from console.protocol.results import (
    DecideResult,
    GrantsAddResult,
    GrantsListResult,
    GrantsRevokeResult,
    OperationCancelResult,
    OperationDecision,
    OperationSubmitResult,
    PendingListResult,
    RequestGetResult,
)


def parse_operation(ctx: CallContext, obj: dict[str, Any]) -> Operation:
    try:
        return parse(obj, ctx.services.host, ctx.services.workspaces.limits)
    except InvalidInput as exc:
        raise RPCError(
            INVALID_PARAMS, f"invalid operation: {exc.problem}", {"problem": exc.problem.to_dict()}
        ) from None


def watch_owner(ctx: CallContext) -> None:
    """An agent's pending requests end with its connection (recorded as agent_disconnected)."""
    conn = ctx.conn
    if not conn.owns_requests:
        conn.owns_requests = True
        conn.on_close.append(lambda: ctx.services.broker.connection_closed(conn.id))


# How often one call submits its operation again because the bound content changed
# while it waited (or before it ran): a file rewritten without pause ends in a denial.
MAX_RESUBMISSIONS = 3


async def submit_bound(
    ctx: CallContext, obj: dict[str, Any], op: Operation, timeout: float | None, supersedes: str = ""
) -> tuple[Operation, OperationDecision]:
    """Submit ``op``; when the answer is ``content_changed`` (the operator decided on
    content that has changed since), parse the wire form again and submit that as a
    fresh request naming the old one, at most :data:`MAX_RESUBMISSIONS` times."""
    for attempt in range(MAX_RESUBMISSIONS + 1):
        with admitted(ctx, op) as agent:
            answer = await ctx.services.broker.submit(
                op,
                owner=ctx.conn.id,
                peer_pid=ctx.conn.peer.pid,
                wait_s=timeout,
                agent=agent,
                shown=None if ctx.conn.agent is None else ctx.conn.agent.shown(),
                supersedes=supersedes,
            )
        if answer.reason != CONTENT_CHANGED or attempt == MAX_RESUBMISSIONS:
            break
        supersedes = answer.request_id
        op = parse_operation(ctx, obj)
    return op, answer


async def submit(ctx: CallContext, args: OperationSubmit) -> OperationSubmitResult:
    obj, timeout, cols, rows = args.operation, args.timeout_s, args.cols, args.rows
    op = parse_operation(ctx, obj)
    watch_owner(ctx)
    if ctx.services.workspaces.is_trusted(op.workspace_root):
        # Only the operator's workspaces are watched before anyone approved anything.
        ctx.services.watch.watch_soon(op.workspace_root)
    op, answer = await submit_bound(ctx, obj, op, timeout)
    result = OperationSubmitResult(**msgspec.structs.asdict(answer))
    if result.verdict == "allow" and op.mode is not Mode.CAPTURED:
        # An approved interactive or durable operation is a session: the agent gets its id.
        try:
            session = await ctx.services.sessions.start_for_operation(
                op, ctx.conn, cols, rows, request_id=result.request_id
            )
        except ServiceError as exc:
            return msgspec.structs.replace(result, session=None, session_error=exc.message)
        return msgspec.structs.replace(result, session=session)
    return result


async def cancel(ctx: CallContext, args: OperationCancel) -> OperationCancelResult:
    rid = args.request_id
    agent = None if ctx.conn.agent is None else ctx.conn.agent.id
    conn_owner = None if ctx.conn.role.value == "operator" else ctx.conn.id
    if await ctx.services.broker.cancel(rid, owner=agent) or ctx.services.execution.cancel(
        rid, owner=conn_owner
    ):
        return OperationCancelResult(cancelled=rid)
    raise RPCError(NOT_FOUND, f"no pending or running request {rid} of yours")


def _wire_estimate(op: Any) -> int:
    """About what a pending item weighs on the wire (args twice: operation and command)."""
    return (
        2048
        + len(op.justification)
        + 2 * sum(len(a) for a in op.args)
        + len(op.stdin) * 4 // 3
        + sum(len(k) + len(v) for k, v in op.env)
    )


async def pending_list(ctx: CallContext, args: PendingList) -> PendingListResult:
    """Oldest first, in pages: a 10,000-request queue would not fit one frame, nor would
    a few huge requests (a page also stops at about 2 MiB)."""
    limit, after = args.limit, args.after
    items = ctx.services.broker.pending
    out: list[PendingItem] = []
    rids = iter(items)
    if after:
        if after not in items:
            raise RPCError(NOT_FOUND, f"{after} is no longer pending; list again from the start")
        for rid in rids:
            if rid == after:
                break
    used = 0
    for rid in rids:
        weight = _wire_estimate(items[rid].op)
        if len(out) == limit or (out and used + weight > MAX_RESULT_BYTES):
            return PendingListResult(pending=out, count=len(items), next=out[-1].request_id)
        used += weight
        out.append(items[rid].to_wire())
    return PendingListResult(pending=out, count=len(items), next=None)


async def request_get(ctx: CallContext, args: RequestGet) -> RequestGetResult:
    rid = args.request_id
    item = ctx.services.broker.pending.get(rid)
    if item is not None:
        return RequestGetResult(pending=True, request=item.to_wire())
    detail = await asyncio.to_thread(ctx.services.store.request_detail, rid)
    if detail is None:
        raise RPCError(NOT_FOUND, f"no request {rid}")
    return RequestGetResult(pending=False, detail=bounded_detail(detail))


async def decide(ctx: CallContext, args: Decide) -> DecideResult:
    target, action, scope, expires = args.target, args.action, args.scope, args.expires_in_s
    note, reason, always = args.note, args.reason, args.always
    if action is DecideAction.DENY and scope is not GrantScope.ONCE:
        raise RPCError(INVALID_PARAMS, "scope: applies to approvals; to deny every time use always=true")
    words = tuple(args.rule.split())
    if scope is GrantScope.RULE and not words:
        raise RPCError(INVALID_PARAMS, "rule: the words the command starts with, e.g. npm test")
    if words and scope is not GrantScope.RULE:
        raise RPCError(INVALID_PARAMS, 'rule: goes with scope "rule"')
    decided = await ctx.services.broker.decide(
        target, action, scope=scope, expires_in_s=expires, note=note, reason=reason, always=always, rule=words
    )
    return DecideResult(**decided)


async def grants_list(ctx: CallContext, args: GrantsList) -> GrantsListResult:
    rows = await asyncio.to_thread(ctx.services.store.grant_rows, include_inactive=args.include_inactive)
    return GrantsListResult(grants=[GrantObject(**row) for row in rows])


async def grants_add(ctx: CallContext, args: GrantsAdd) -> GrantsAddResult:
    """A standing grant or deny-rule without a pending request (e.g. from a past denial)."""
    try:
        fingerprint = parse_fingerprint(args.fingerprint)
    except InvalidInput:
        raise RPCError(INVALID_PARAMS, "fingerprint: must be 64 lowercase hexadecimal digits") from None
    scope, effect, session_id, expires = args.scope, args.effect, args.session_id, args.expires_in_s
    note, tool, summary = args.note, args.tool, args.summary
    if scope is GrantScope.RULE:
        raise RPCError(
            INVALID_PARAMS, 'scope: a rule is made from a pending request (decide with scope "rule")'
        )
    if scope is GrantScope.SESSION and not session_id:
        raise RPCError(
            INVALID_PARAMS,
            "session_id: a session grant needs the agent's identity (agent_id in pending.list)",
        )
    now = ctx.services.broker.clock()
    grant = Grant(
        id="g-" + secrets.token_hex(5),
        fingerprint=fingerprint,
        scope=scope,
        effect=effect,
        session_id=session_id,
        created_at=now,
        expires_at=now + expires if expires else None,
        note=note,
    )
    await ctx.services.broker.grants.add(grant, tool=tool, summary=summary)
    return GrantsAddResult(grant=GrantObject.of(grant, tool, summary))


async def grants_revoke(ctx: CallContext, args: GrantsRevoke) -> GrantsRevokeResult:
    return GrantsRevokeResult(revoked=await ctx.services.broker.grants.revoke(args.target))


METHODS: dict[str, Handler] = {
    "operation.submit": submit,
    "operation.cancel": cancel,
    "pending.list": pending_list,
    "request.get": request_get,
    "decide": decide,
    "grants.list": grants_list,
    "grants.add": grants_add,
    "grants.revoke": grants_revoke,
}
