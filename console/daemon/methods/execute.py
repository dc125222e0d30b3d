"""Running captured operations in the sandbox, with output streamed back.

The decision stays a dict here (the broker makes it and the held table keeps it); each
answer wraps it in its result Struct (console/protocol/results.py) as it leaves. The run's
record comes typed from the execution service (console/protocol/records.py).

``operation.exec`` asks and, if allowed, runs. ``operation.hold`` asks and, if allowed,
keeps the operation behind a one-time ticket (:mod:`console.daemon.held`) that
``operation.run`` redeems: for an agent whose own tool must run the command.
"""

from __future__ import annotations

import sys
from typing import Any

from console.contract.operation import Mode, Operation
from console.contract.outcome import CONTENT_CHANGED
from console.daemon.connection import CallContext, Handler
from console.daemon.held import TicketError
from console.daemon.methods.approvals import MAX_RESUBMISSIONS, parse_operation, submit_bound, watch_owner
from console.locations import locate
from console.policy import Authorization
from console.protocol.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, NOT_FOUND, RPCError
from console.protocol.notifications import ExecOutput
from console.protocol.records import ExecRecord
from console.protocol.requests import OperationExec, OperationHeld, OperationHold, OperationRun
from console.protocol.results import (
    OperationDecision,
    OperationExecResult,
    OperationHeldResult,
    OperationHoldResult,
    OperationRunResult,
)
from console.protocol.tickets import redeem_command, write_secret


def _captured(ctx: CallContext, obj: dict[str, Any]) -> Operation:
    op = parse_operation(ctx, obj)
    if op.mode is not Mode.CAPTURED:
        raise RPCError(
            INVALID_PARAMS,
            "operation.mode: only captured operations run here; interactive and durable ones run as sessions",
        )
    return op


async def _run(ctx: CallContext, op: Operation, decision: OperationDecision, stream: bool) -> ExecRecord:
    """Run an allowed operation for this connection (which may cancel it by closing)."""
    conn = ctx.conn

    def send(output: ExecOutput) -> None:
        if stream:
            conn.notify("output", output)

    if not conn.owns_executions:
        conn.owns_executions = True
        conn.on_close.append(lambda: ctx.services.execution.cancel_owner(conn.id))
    granted = decision.authorization
    assert granted is not None, "only an allowed operation runs"
    record, _ = await ctx.services.execution.run(
        decision.request_id,
        op,
        Authorization(granted.fingerprint, granted.workspace_root, granted.source, granted.grant_id),
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
        op, decided = await submit_bound(ctx, obj, op, timeout, supersedes)
        if decided.verdict != "allow":
            return OperationExecResult(decision=decided, result=None)
        record = await _run(ctx, op, decided, stream)
        denial = record.outcome.denial
        if denial is None or denial.reason != CONTENT_CHANGED or attempt == MAX_RESUBMISSIONS:
            break
        # What would have run is not what was allowed (a file changed after the decision):
        # the operation as it is now is a fresh request.
        supersedes = decided.request_id
        op = parse_operation(ctx, obj)
    return OperationExecResult(decision=decided, result=record)


def _asker(ctx: CallContext) -> str:
    """Who a ticket belongs to: the connection's agent identity (agent.sock binds one
    before any method runs), or the operator."""
    agent = ctx.conn.agent
    return agent.id if agent is not None else "operator"


def _in_sandbox(ctx: CallContext) -> bool:
    """Whether the caller runs inside the confined session whose identity its connection
    acts for: found from its process, so nothing it said makes it true."""
    agent = ctx.conn.agent
    return agent is not None and agent.confined and ctx.services.agents.confined(ctx.conn.peer) is agent


async def hold(ctx: CallContext, args: OperationHold) -> OperationHoldResult:
    """Decide; when allowed, keep the operation for this agent identity and answer with the
    exact command that redeems it (its secret goes into a private file, never into it)."""
    obj, timeout = args.operation, args.timeout_s
    op = _captured(ctx, obj)
    watch_owner(ctx)
    op, decided = await submit_bound(ctx, obj, op, timeout)
    if decided.verdict != "allow":
        return OperationHoldResult(decision=decided, ticket=None, command=None)
    loc = ctx.services.loc
    # --state-dir only where it names these very locations (the default ones come from
    # the environment, as the daemon's did).
    state = str(loc.state_dir) if locate(loc.state_dir) == loc else None
    held, secret = ctx.services.held.issue(
        op, decided, _asker(ctx), lambda rid: redeem_command(sys.executable, state, rid)
    )
    if _in_sandbox(ctx):
        # Redeemed by its id from inside the same sandbox (held.py): no secret to keep.
        return OperationHoldResult(decision=decided, ticket=held.request_id, command=held.command)
    try:
        write_secret(loc.runtime_dir, held.request_id, secret)
    except OSError as exc:
        ctx.services.held.take(f"{held.request_id}:{secret}", _asker(ctx))
        raise RPCError(INTERNAL_ERROR, f"could not keep the ticket's secret: {exc.strerror}") from None
    return OperationHoldResult(decision=decided, ticket=held.request_id, command=held.command)


async def run(ctx: CallContext, args: OperationRun) -> OperationRunResult:
    """Run the operation a ticket holds, once, for the identity that asked for it (by its id
    alone inside that identity's confined session). A file it runs that changed since the
    decision is not run (``content_changed``): the agent asks again."""
    try:
        held = ctx.services.held.take(args.ticket, _asker(ctx), in_sandbox=_in_sandbox(ctx))
    except TicketError as exc:
        raise RPCError(NOT_FOUND, str(exc)) from None
    record = await _run(ctx, held.operation, held.decision, args.stream)
    return OperationRunResult(decision=held.decision, result=record)


async def held(ctx: CallContext, args: OperationHeld) -> OperationHeldResult:
    """Whether ``command`` is, byte for byte, the command of a live ticket this daemon issued
    to this agent identity (so a permission dialog for it asks about the daemon's own rewrite)."""
    found = ctx.services.held.issued(args.command, _asker(ctx))
    return OperationHeldResult(held=found is not None, ticket=found.request_id if found else None)


METHODS: dict[str, Handler] = {
    "operation.exec": exec_,
    "operation.hold": hold,
    "operation.run": run,
    "operation.held": held,
}
