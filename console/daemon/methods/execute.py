"""`operation.exec`: ask, and if allowed, run in the sandbox with output streamed back."""

from __future__ import annotations

from typing import Any

from console.contract.operation import Mode
from console.contract.outcome import CONTENT_CHANGED
from console.daemon.connection import CallContext, Method
from console.daemon.methods.approvals import MAX_RESUBMISSIONS, parse_operation, submit_bound, watch_owner
from console.protocol.jsonrpc import INVALID_PARAMS, RPCError
from console.protocol.params import Params


async def exec_(ctx: CallContext, p: Params) -> dict[str, Any]:
    obj = p.obj("operation")
    timeout = p.number("timeout_s", None, low=0.001, high=86_400)
    stream = p.flag("stream", True)
    p.done()
    op = parse_operation(ctx, obj)
    if op.mode is not Mode.CAPTURED:
        raise RPCError(
            INVALID_PARAMS,
            "operation.mode: exec runs captured operations; interactive and durable ones run as sessions",
        )
    conn = ctx.conn
    watch_owner(ctx)

    def send(output: dict[str, Any]) -> None:
        if stream:
            conn.notify("output", output)

    supersedes = ""
    for attempt in range(MAX_RESUBMISSIONS + 1):
        op, decision = await submit_bound(ctx, obj, op, timeout, supersedes)
        if decision["verdict"] != "allow":
            return {"decision": decision, "result": None}
        if not conn.owns_executions:
            conn.owns_executions = True
            conn.on_close.append(lambda: ctx.daemon.execution.cancel_owner(conn.id))
        record, _ = await ctx.daemon.execution.run(
            decision["request_id"], op, decision["authorization"], conn.id, send
        )
        denial = (record.get("outcome") or {}).get("denial") or {}
        if denial.get("reason") != CONTENT_CHANGED or attempt == MAX_RESUBMISSIONS:
            break
        # What would have run is not what was allowed (a file changed after the decision):
        # the operation as it is now is a fresh request.
        supersedes = decision["request_id"]
        op = parse_operation(ctx, obj)
    return {"decision": decision, "result": record}


METHODS = {"operation.exec": Method(exec_)}
