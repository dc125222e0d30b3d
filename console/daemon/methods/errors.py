"""The one place a service's refusal becomes a JSON-RPC error (docs/protocol.md lists
the codes): `mapped` wraps every method handler of `all_methods`."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from console.daemon.errors import (
    AlreadyDecided,
    Conflict,
    InvalidParams,
    NotFound,
    NotStored,
    ServiceError,
    Unauthorized,
    Unavailable,
)
from console.protocol.jsonrpc import (
    ALREADY_DECIDED,
    CONFLICT,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    NOT_FOUND,
    STORE_UNAVAILABLE,
    UNAUTHORIZED,
    UNAVAILABLE,
    RPCError,
)
from console.protocol.results import MethodResult

CODES: dict[type[ServiceError], int] = {
    NotFound: NOT_FOUND,
    NotStored: STORE_UNAVAILABLE,
    AlreadyDecided: ALREADY_DECIDED,
    Conflict: CONFLICT,
    InvalidParams: INVALID_PARAMS,
    Unauthorized: UNAUTHORIZED,
    Unavailable: UNAVAILABLE,
}


def rpc_error(exc: ServiceError) -> RPCError:
    """The wire's form of a service's refusal (an unmapped kind is the daemon's bug)."""
    return RPCError(CODES.get(type(exc), INTERNAL_ERROR), exc.message, exc.data)


def mapped(handler: Callable[..., Awaitable[MethodResult]]) -> Callable[..., Awaitable[MethodResult]]:
    @functools.wraps(handler)
    async def call(*args: Any, **kwargs: Any) -> MethodResult:
        try:
            return await handler(*args, **kwargs)
        except ServiceError as exc:
            raise rpc_error(exc) from None

    return call
