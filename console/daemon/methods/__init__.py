"""The daemon's JSON-RPC methods, one module per area; docs/protocol.md documents them.

Each handler takes ``(ctx, args)``, ``args`` its method's params Struct
(console/protocol/requests.py), which the dispatcher reads at the socket, and returns
its method's result Struct (console/protocol/results.py), which the connection encodes
as it is.
"""

from __future__ import annotations

import functools
from typing import Any

from console.daemon.connection import CallContext, Handler, Method
from console.daemon.methods import approvals, attention, core, execute, history, sessions, watch, workspaces
from console.daemon.methods.errors import mapped
from console.protocol.requests import MethodParams, read_params
from console.protocol.results import MethodResult
from console.protocol.table import BY_NAME


def typed(handler: Handler, cls: type[MethodParams[Any]]) -> Handler:
    """``handler``, also callable with its params as a mapping or a
    :class:`~console.protocol.params.Params` (a test calling a method without a socket):
    they are read into ``cls`` just as the dispatcher reads them."""

    @functools.wraps(handler)
    async def call(ctx: CallContext, args: Any) -> MethodResult:
        if not isinstance(args, cls):
            args = read_params(args, cls)
        return await handler(ctx, args)

    return call


def all_methods() -> dict[str, Method]:
    """Every method of the table (console/protocol/table.py) with its handler, wrapped so
    a service's refusal reaches the wire as its JSON-RPC error
    (console/daemon/methods/errors.py)."""
    handlers: dict[str, Handler] = {}
    for module in (core, approvals, execute, history, sessions, watch, workspaces, attention):
        for name, handler in module.METHODS.items():
            assert name not in handlers, name
            handlers[name] = handler
    assert set(handlers) == set(BY_NAME), set(handlers) ^ set(BY_NAME)
    return {name: Method(mapped(typed(handlers[name], row.params)), row) for name, row in BY_NAME.items()}
