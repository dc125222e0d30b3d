"""The daemon's JSON-RPC methods, one module per area; docs/protocol.md documents them."""

from __future__ import annotations

from dataclasses import replace

from console.daemon.connection import Method
from console.daemon.methods import approvals, attention, core, execute, history, sessions, watch, workspaces
from console.daemon.methods.errors import mapped


def all_methods() -> dict[str, Method]:
    """Every method, its handler wrapped so a service's refusal reaches the wire as its
    JSON-RPC error (console/daemon/methods/errors.py)."""
    table: dict[str, Method] = {}
    for module in (core, approvals, execute, history, sessions, watch, workspaces, attention):
        for name, method in module.METHODS.items():
            assert name not in table, name
            table[name] = replace(method, handler=mapped(method.handler))
    return table
