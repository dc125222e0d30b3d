"""The daemon's JSON-RPC methods, one module per area; docs/protocol.md documents them."""

from __future__ import annotations

from console.daemon.connection import Method
from console.daemon.methods import approvals, attention, core, execute, history, sessions, watch, workspaces


def all_methods() -> dict[str, Method]:
    table: dict[str, Method] = {}
    for module in (core, approvals, execute, history, sessions, watch, workspaces, attention):
        for name, method in module.METHODS.items():
            assert name not in table, name
            table[name] = method
    return table
