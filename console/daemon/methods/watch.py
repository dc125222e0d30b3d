"""The workspace watcher over the protocol: status, recent events, diffs, the tripwire."""

from __future__ import annotations

import os

from console.daemon.connection import CallContext, Handler
from console.protocol.jsonrpc import INVALID_PARAMS, NOT_FOUND, RPCError
from console.protocol.requests import (
    TripwireList,
    TripwireResolve,
    TripwireRevert,
    WatchAdd,
    WatchDiff,
    WatchRecent,
    WatchRemove,
    WatchStatus,
)
from console.protocol.results import (
    TripwireListResult,
    TripwireResolveResult,
    TripwireRevertResult,
    WatchAddResult,
    WatchDiffResult,
    WatchRecentResult,
    WatchRemoveResult,
    WatchStatusResult,
)


async def status(ctx: CallContext, args: WatchStatus) -> WatchStatusResult:
    return ctx.services.watch.status(WatchStatusResult)


async def recent(ctx: CallContext, args: WatchRecent) -> WatchRecentResult:
    limit, protected_only, session, agent_session = (
        args.limit,
        args.protected_only,
        args.session,
        args.agent_session,
    )
    svc = ctx.services.watch
    wanted: set[tuple[str, str]] = {("session", session)} if session else set()
    if agent_session:
        # What the agent's terminals and executed operations did.
        # Sessions belong to agent identities; the agent's session id is their label.
        owners = {f"agent:{agent_session}"} | {
            a.owner for a in ctx.services.agents.by_id.values() if a.label == agent_session
        }
        wanted |= {("session", i.id) for i in ctx.services.sessions.manager.infos() if i.owner in owners}
        wanted |= {("operation", rid) for rid, s in svc.op_sessions.items() if s == agent_session}
        if not wanted:
            return WatchRecentResult(events=[])
    out = []
    for record in svc.recent_records(protected_only):
        if wanted and not any((a.kind, a.id) in wanted for a in record.attribution):
            continue
        out.append(record)
        if len(out) >= limit:
            break
    return WatchRecentResult(events=out)


async def diff(ctx: CallContext, args: WatchDiff) -> WatchDiffResult:
    root, path = args.workspace_root, args.path
    if path.startswith("/") or ".." in path.split("/"):
        raise RPCError(INVALID_PARAMS, "path: relative to the workspace root, without '..'")
    text = ctx.services.watch.watcher.baseline_diff(root, path)
    if text is None:
        raise RPCError(NOT_FOUND, "no baseline for that path (only small protected text files have one)")
    # When an answer to a tripwire made the change the baseline, say so, with that change.
    answered = ctx.services.tripwire.accepted
    accepted = answered.get((os.path.realpath(root), path)) or answered.get((root, path))
    return WatchDiffResult(diff=text, accepted=accepted)


async def add(ctx: CallContext, args: WatchAdd) -> WatchAddResult:
    root = args.workspace_root
    if not os.path.isabs(root) or not os.path.isdir(root):
        raise RPCError(INVALID_PARAMS, "workspace_root: an existing absolute directory")
    await ctx.services.watch.ensure_root(os.path.realpath(root))
    return ctx.services.watch.status(WatchAddResult)


async def remove(ctx: CallContext, args: WatchRemove) -> WatchRemoveResult:
    root = args.workspace_root
    if not os.path.isabs(root):
        raise RPCError(INVALID_PARAMS, "workspace_root: an absolute directory")
    svc = ctx.services.watch
    real = os.path.realpath(root)
    if not (await svc.remove_root(real) or (real != root and await svc.remove_root(root))):
        raise RPCError(NOT_FOUND, "workspace_root: not watched (watch.status lists the roots)")
    return svc.status(WatchRemoveResult)


async def tripwire_list(ctx: CallContext, args: TripwireList) -> TripwireListResult:
    items = ctx.services.tripwire.items.values()
    if args.include_resolved:
        return TripwireListResult(items=[t.notice() for t in items])
    if args.open:  # paused, kept paused, and exited writers' items
        return TripwireListResult(items=[t.notice() for t in items if t.open or t.state == "kept"])
    return TripwireListResult(items=[t.notice() for t in items if t.state == "paused"])


async def tripwire_resolve(ctx: CallContext, args: TripwireResolve) -> TripwireResolveResult:
    item = await ctx.services.tripwire.resolve(args.id, args.action, revert=args.revert, accept=args.accept)
    return TripwireResolveResult(item=item)


async def tripwire_revert(ctx: CallContext, args: TripwireRevert) -> TripwireRevertResult:
    return TripwireRevertResult(item=await ctx.services.tripwire.revert(args.id))


METHODS: dict[str, Handler] = {
    "watch.status": status,
    "watch.recent": recent,
    "watch.diff": diff,
    "watch.add": add,
    "watch.remove": remove,
    "tripwire.list": tripwire_list,
    "tripwire.resolve": tripwire_resolve,
    "tripwire.revert": tripwire_revert,
}
