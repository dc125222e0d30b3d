"""JSON-RPC 2.0 over newline-delimited UTF-8 JSON: decoding, errors, encoding.

Decoding is strict (duplicate keys, NaN, lone surrogates are errors), and every
malformed input maps to the JSON-RPC error a client can act on; nothing a peer sends
can raise past :func:`decode_message`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from console.contract import strictjson

MAX_FRAME = 4 * 1024 * 1024
# What hello and daemon.status say this daemon speaks (docs/protocol.md, "Identity").
PROTOCOL_VERSION = 2  # 2: agent identities

# Standard codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# Application codes (documented in docs/protocol.md).
UNAUTHORIZED = -32001
NOT_FOUND = -32002
ALREADY_DECIDED = -32003
STORE_UNAVAILABLE = -32004
SHUTTING_DOWN = -32005
CONFLICT = -32006
UNAVAILABLE = -32007
QUOTA_EXCEEDED = -32008  # a limit of console/daemon/quotas.py; data names the quota
FORBIDDEN = -32009  # an operator-only power asked for on agent.sock
BUSY = -32010  # a bounded queue is full for now (session input); retry later


class RPCError(Exception):
    """An error to send back as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    params: dict[str, Any]
    id: str | int | None
    is_notification: bool


@dataclass(frozen=True, slots=True)
class Response:
    id: str | int | None
    result: Any = None
    error: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Invalid:
    """An entry that cannot be served; answered with ``error`` under ``id`` (maybe null)."""

    id: str | int | None
    error: RPCError


Message = Request | Response | Invalid


def _valid_id(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return len(value) <= 256
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= 2**53


def _one(obj: Any) -> Message:
    if not isinstance(obj, dict):
        return Invalid(None, RPCError(INVALID_REQUEST, "each message must be a JSON object"))
    raw_id = obj.get("id")
    msg_id = raw_id if _valid_id(raw_id) else None
    if obj.get("jsonrpc") != "2.0":
        return Invalid(msg_id, RPCError(INVALID_REQUEST, 'missing or wrong "jsonrpc": must be "2.0"'))
    if "id" in obj and not _valid_id(raw_id):
        return Invalid(None, RPCError(INVALID_REQUEST, "id must be a string, an integer or null"))
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str) or not method or len(method) > 128:
            return Invalid(msg_id, RPCError(INVALID_REQUEST, "method must be a non-empty string"))
        unknown = set(obj) - {"jsonrpc", "method", "params", "id"}
        if unknown:
            return Invalid(msg_id, RPCError(INVALID_REQUEST, "unexpected members in a request"))
        params = obj.get("params", {})
        if isinstance(params, list):
            if params:
                return Invalid(msg_id, RPCError(INVALID_PARAMS, "params must be an object (by name)"))
            params = {}
        if not isinstance(params, dict):
            return Invalid(msg_id, RPCError(INVALID_PARAMS, "params must be an object"))
        return Request(method, params, msg_id, "id" not in obj)
    if "result" in obj or "error" in obj:
        if ("result" in obj) == ("error" in obj):
            return Invalid(None, RPCError(INVALID_REQUEST, "a response has exactly one of result and error"))
        error = obj.get("error")
        if error is not None and not isinstance(error, dict):
            return Invalid(None, RPCError(INVALID_REQUEST, "error must be an object"))
        return Response(msg_id, obj.get("result"), error)
    return Invalid(msg_id, RPCError(INVALID_REQUEST, "neither a request nor a response"))


def decode_message(frame: bytes) -> tuple[list[Message], bool]:
    """Decode one frame into messages; the flag says whether it was a batch."""
    try:
        obj = strictjson.loads(frame)
    except strictjson.StrictJSONError as exc:
        return [Invalid(None, RPCError(PARSE_ERROR, f"parse error: {exc}", {"reason": exc.code}))], False
    if isinstance(obj, list):
        if not obj:
            return [Invalid(None, RPCError(INVALID_REQUEST, "empty batch"))], False
        if len(obj) > 1000:
            return [Invalid(None, RPCError(INVALID_REQUEST, "batch larger than 1000 messages"))], False
        return [_one(item) for item in obj], True
    return [_one(obj)], False


_encoder = msgspec.json.Encoder()


def encode(obj: Any) -> bytes:
    """One frame: compact JSON plus the newline that delimits it."""
    return _encoder.encode(obj) + b"\n"


def response(msg_id: str | int | None, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def error_response(msg_id: str | int | None, error: RPCError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": error.to_dict()}


def request(msg_id: str | int | None, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if msg_id is not None:
        msg["id"] = msg_id
    return msg


def notification(method: str, params: msgspec.Struct | msgspec.Raw) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}
