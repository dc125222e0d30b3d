"""The workspace watcher over the protocol: status, recent events, diffs, the tripwire."""

from __future__ import annotations

import os
from typing import Any

from console.daemon.connection import CallContext, Method
from console.daemon.tripwire import TripwireAction
from console.protocol.jsonrpc import INVALID_PARAMS, NOT_FOUND, RPCError
from console.protocol.params import Params


async def status(ctx: CallContext, p: Params) -> dict[str, Any]:
    p.done()
    return ctx.daemon.watch.status()


async def recent(ctx: CallContext, p: Params) -> dict[str, Any]:
    limit = p.integer("limit", 200, low=1, high=10_000)
    protected_only = p.flag("protected_only", False)
    session = p.text("session", "", max_len=64)
    agent_session = p.text("agent_session", "", max_len=256)
    p.done()
    svc = ctx.daemon.watch
    wanted: set[tuple[str, str]] = {("session", session)} if session else set()
    if agent_session:
        # What the agent's terminals and executed operations did.
        # Sessions belong to agent identities; the agent's session id is their label.
        owners = {f"agent:{agent_session}"} | {
            a.owner for a in ctx.daemon.agents.by_id.values() if a.label == agent_session
        }
        wanted |= {("session", i.id) for i in ctx.daemon.sessions.manager.infos() if i.owner in owners}
        wanted |= {("operation", rid) for rid, s in svc.op_sessions.items() if s == agent_session}
        if not wanted:
            return {"events": []}
    out = []
    for record in svc.recent_records(protected_only):
        if wanted and not any((a["kind"], a["id"]) in wanted for a in record["attribution"]):
            continue
        out.append(record)
        if len(out) >= limit:
            break
    return {"events": out}


async def diff(ctx: CallContext, p: Params) -> dict[str, Any]:
    root = p.text("workspace_root", max_len=4096)
    path = p.text("path", max_len=4096)
    p.done()
    if path.startswith("/") or ".." in path.split("/"):
        raise RPCError(INVALID_PARAMS, "path: relative to the workspace root, without '..'")
    text = ctx.daemon.watch.watcher.baseline_diff(root, path)
    if text is None:
        raise RPCError(NOT_FOUND, "no baseline for that path (only small protected text files have one)")
    # When an answer to a tripwire made the change the baseline, say so, with that change.
    accepted = ctx.daemon.watch.accepted.get((os.path.realpath(root), path)) or ctx.daemon.watch.accepted.get(
        (root, path)
    )
    return {"diff": text, "accepted": accepted}


async def add(ctx: CallContext, p: Params) -> dict[str, Any]:
    root = p.text("workspace_root", max_len=4096)
    p.done()
    if not os.path.isabs(root) or not os.path.isdir(root):
        raise RPCError(INVALID_PARAMS, "workspace_root: an existing absolute directory")
    await ctx.daemon.watch.ensure_root(os.path.realpath(root))
    return ctx.daemon.watch.status()


async def remove(ctx: CallContext, p: Params) -> dict[str, Any]:
    root = p.text("workspace_root", max_len=4096)
    p.done()
    if not os.path.isabs(root):
        raise RPCError(INVALID_PARAMS, "workspace_root: an absolute directory")
    svc = ctx.daemon.watch
    real = os.path.realpath(root)
    if not (await svc.remove_root(real) or (real != root and await svc.remove_root(root))):
        raise RPCError(NOT_FOUND, "workspace_root: not watched (watch.status lists the roots)")
    return svc.status()


async def tripwire_list(ctx: CallContext, p: Params) -> dict[str, Any]:
    include_resolved = p.flag("include_resolved", False)
    open_only = p.flag("open", False)  # paused, kept paused, and exited writers' items
    p.done()
    items = ctx.daemon.watch.tripwires.values()
    if include_resolved:
        return {"items": [t.to_wire() for t in items]}
    if open_only:
        return {"items": [t.to_wire() for t in items if t.open or t.state == "kept"]}
    return {"items": [t.to_wire() for t in items if t.state == "paused"]}


async def tripwire_resolve(ctx: CallContext, p: Params) -> dict[str, Any]:
    item_id = p.text("id", max_len=32)
    action = p.choice("action", TripwireAction)
    p.done()
    return {"item": await ctx.daemon.watch.resolve(item_id, action)}


METHODS = {
    "watch.status": Method(status, operator_only=True),
    "watch.recent": Method(recent, operator_only=True),
    "watch.diff": Method(diff, operator_only=True),
    "watch.add": Method(add, operator_only=True),
    "watch.remove": Method(remove, operator_only=True),
    "tripwire.list": Method(tripwire_list, operator_only=True),
    "tripwire.resolve": Method(tripwire_resolve, operator_only=True),
}
