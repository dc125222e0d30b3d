"""The operator's trusted workspaces over the protocol: list, add, remove."""

from __future__ import annotations

from console.daemon.connection import CallContext, Handler
from console.protocol.requests import WorkspacesAdd, WorkspacesList, WorkspacesRemove
from console.protocol.results import (
    WorkspacesAddResult,
    WorkspacesListResult,
    WorkspacesRemoveResult,
)


async def workspaces_list(ctx: CallContext, args: WorkspacesList) -> WorkspacesListResult:
    return WorkspacesListResult(workspaces=ctx.services.workspaces.to_list())


async def workspaces_add(ctx: CallContext, args: WorkspacesAdd) -> WorkspacesAddResult:
    added = await ctx.services.workspaces.add(args.workspace_root, source="operator", note=args.note)
    return WorkspacesAddResult(**added)


async def workspaces_remove(ctx: CallContext, args: WorkspacesRemove) -> WorkspacesRemoveResult:
    return WorkspacesRemoveResult(**await ctx.services.workspaces.remove(args.workspace_root))


METHODS: dict[str, Handler] = {
    "workspaces.list": workspaces_list,
    "workspaces.add": workspaces_add,
    "workspaces.remove": workspaces_remove,
}
