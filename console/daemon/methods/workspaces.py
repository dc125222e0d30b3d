"""The operator's trusted workspaces over the protocol: list, add, remove."""

from __future__ import annotations

from typing import Any

from console.daemon.connection import CallContext, Method
from console.protocol.params import Params


async def workspaces_list(ctx: CallContext, p: Params) -> dict[str, Any]:
    p.done()
    return {"workspaces": ctx.daemon.workspaces.to_list()}


async def workspaces_add(ctx: CallContext, p: Params) -> dict[str, Any]:
    root = p.text("workspace_root", max_len=4096)
    note = p.text("note", "", max_len=1024)
    p.done()
    return await ctx.daemon.workspaces.add(root, source="operator", note=note)


async def workspaces_remove(ctx: CallContext, p: Params) -> dict[str, Any]:
    root = p.text("workspace_root", max_len=4096)
    p.done()
    return await ctx.daemon.workspaces.remove(root)


METHODS = {
    "workspaces.list": Method(workspaces_list, operator_only=True),
    "workspaces.add": Method(workspaces_add, operator_only=True),
    "workspaces.remove": Method(workspaces_remove, operator_only=True),
}
