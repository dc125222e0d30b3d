"""The operator's trusted workspaces over the protocol: list, add, remove."""

from __future__ import annotations

from typing import Any

from console.daemon.connection import CallContext, Method
from console.protocol.requests import WorkspacesAdd, WorkspacesList, WorkspacesRemove


async def workspaces_list(ctx: CallContext, args: WorkspacesList) -> dict[str, Any]:
    return {"workspaces": ctx.services.workspaces.to_list()}


async def workspaces_add(ctx: CallContext, args: WorkspacesAdd) -> dict[str, Any]:
    return await ctx.services.workspaces.add(args.workspace_root, source="operator", note=args.note)


async def workspaces_remove(ctx: CallContext, args: WorkspacesRemove) -> dict[str, Any]:
    return await ctx.services.workspaces.remove(args.workspace_root)


METHODS = {
    "workspaces.list": Method(workspaces_list, WorkspacesList, operator_only=True),
    "workspaces.add": Method(workspaces_add, WorkspacesAdd, operator_only=True),
    "workspaces.remove": Method(workspaces_remove, WorkspacesRemove, operator_only=True),
}
