"""Running captured operations in the sandbox, with output streamed back.

The decision and the run's record stay dicts here (the broker and the execution service
make them, and the held table keeps the decision); each answer wraps them in its result
Struct (console/protocol/results.py) as it leaves.

``operation.exec`` asks and, if allowed, runs. ``operation.hold`` asks and, if allowed,
keeps the operation behind a one-time ticket (:mod:`console.daemon.held`) that
``operation.run`` redeems: for an agent whose own tool must run the command.
"""

from __future__ import annotations

from typing import Any

from console.contract.operation import Mode
from console.contract.outcome import CONTENT_CHANGED
from console.daemon.connection import CallContext, Method
from console.daemon.held import TicketError
from console.daemon.methods.approvals import MAX_RESUBMISSIONS, parse_operation, submit_bound, watch_owner
from console.protocol.jsonrpc import INVALID_PARAMS, NOT_FOUND, RPCError
from console.protocol.requests import OperationExec, OperationHold, OperationRun
from console.protocol.results import (
    ExecRecord,
    OperationDecision,
    OperationExecResult,
    OperationHoldResult,
    OperationRunResult,
)


def _captured(ctx: CallContext, obj: dict[str, Any]) -> Any:
    op = parse_operation(ctx, obj)
    if op.mode is not Mode.CAPTURED:
        raise RPCError(
            INVALID_PARAMS,
            "operation.mode: only captured operations run here; interactive and durable ones run as sessions",
        )
    return op


async def _run(ctx: CallContext, op: Any, decision: dict[str, Any], stream: bool) -> dict[str, Any]:
    """Run an allowed operation for this connection (which may cancel it by closing)."""
    conn = ctx.conn

    def send(output: dict[str, Any]) -> None:
        if stream:
            conn.notify("output", output)

    if not conn.owns_executions:
        conn.owns_executions = True
        conn.on_close.append(lambda: ctx.services.execution.cancel_owner(conn.id))
    record, _ = await ctx.services.execution.run(
        decision["request_id"],
        op,
        decision["authorization"],
        conn.id,
        send,
        agent=conn.agent.id if conn.agent else "",
    )
    return record


async def exec_(ctx: CallContext, args: OperationExec) -> OperationExecResult:
    obj, timeout, stream = args.operation, args.timeout_s, args.stream
    op = _captured(ctx, obj)
    watch_owner(ctx)
    supersedes = ""
    for attempt in range(MAX_RESUBMISSIONS + 1):
        op, decision = await submit_bound(ctx, obj, op, timeout, supersedes)
        # In its Struct before anything runs on its strength (see approvals.submit).
        decided = OperationDecision(**decision)
        if decided.verdict != "allow":
            return OperationExecResult(decision=decided, result=None)
        record = await _run(ctx, op, decision, stream)
        denial = (record.get("outcome") or {}).get("denial") or {}
        if denial.get("reason") != CONTENT_CHANGED or attempt == MAX_RESUBMISSIONS:
            break
        # What would have run is not what was allowed (a file changed after the decision):
        # the operation as it is now is a fresh request.
        supersedes = decision["request_id"]
        op = parse_operation(ctx, obj)
    return OperationExecResult(decision=decided, result=ExecRecord(**record))


async def hold(ctx: CallContext, args: OperationHold) -> OperationHoldResult:
    """Decide; when allowed, keep the operation and answer with its one-time ticket."""
    obj, timeout = args.operation, args.timeout_s
    op = _captured(ctx, obj)
    watch_owner(ctx)
    op, decision = await submit_bound(ctx, obj, op, timeout)
    decided = OperationDecision(**decision)  # before a ticket is issued on its strength
    ticket = ctx.services.held.hold(op, decision) if decided.verdict == "allow" else None
    return OperationHoldResult(decision=decided, ticket=ticket)


async def run(ctx: CallContext, args: OperationRun) -> OperationRunResult:
    """Run the operation a ticket holds, once. A file it runs that changed since the
    decision is not run (``content_changed``): the agent asks again."""
    try:
        held = ctx.services.held.take(args.ticket)
    except TicketError as exc:
        raise RPCError(NOT_FOUND, str(exc)) from None
    record = await _run(ctx, held.operation, held.decision, args.stream)
    return OperationRunResult(decision=OperationDecision(**held.decision), result=ExecRecord(**record))


METHODS = {
    "operation.exec": Method(exec_, OperationExec),
    "operation.hold": Method(hold, OperationHold),
    "operation.run": Method(run, OperationRun),
}
