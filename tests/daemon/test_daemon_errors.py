"""A service's refusal becomes its JSON-RPC error in one place (console/daemon/methods/errors.py).

The services raise `console.daemon.errors` kinds and know nothing of the wire; the codes
the wire carries are the ones docs/protocol.md lists, unchanged by the move."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from console.daemon import errors
from console.daemon.methods import all_methods
from console.daemon.methods.errors import CODES, mapped, rpc_error
from console.protocol.jsonrpc import INTERNAL_ERROR, RPCError

# What each kind of refusal answered before services stopped raising RPCError.
WIRE = {
    "NotFound": -32002,
    "AlreadyDecided": -32003,
    "Conflict": -32006,
    "InvalidParams": -32602,
    "Unauthorized": -32001,
    "Unavailable": -32007,
    "NotStored": -32004,
}


def kinds() -> list[type[errors.ServiceError]]:
    return [
        c
        for _, c in inspect.getmembers(errors, inspect.isclass)
        if issubclass(c, errors.ServiceError) and c is not errors.ServiceError
    ]


@pytest.mark.parametrize("kind", kinds(), ids=lambda k: k.__name__)
def test_every_kind_has_its_code_and_keeps_message_and_data(kind):
    err = rpc_error(kind("what was wrong", {"param": "x"}))
    assert (err.code, err.message, err.data) == (CODES[kind], "what was wrong", {"param": "x"})
    assert err.code == WIRE[kind.__name__]


def test_a_kind_without_a_code_is_an_internal_error_not_a_made_up_one():
    class Odd(errors.ServiceError):
        """A refusal nobody gave a code."""

    assert rpc_error(Odd("?")).code == INTERNAL_ERROR


def test_every_method_handler_maps_refusals():
    async def refuses(ctx, params):
        raise errors.NotFound("no pending request r-1")

    with pytest.raises(RPCError) as err:
        asyncio.run(mapped(refuses)(None, None))
    assert (err.value.code, err.value.message) == (WIRE["NotFound"], "no pending request r-1")
    for name, method in all_methods().items():
        assert getattr(method.handler, "__wrapped__", None) is not None, name
