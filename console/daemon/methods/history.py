"""Reading the history: queries, one request's story, previous decisions, verification."""

from __future__ import annotations

import asyncio
from typing import Any

from console.daemon.connection import CallContext, Method
from console.protocol.history import KINDS
from console.protocol.jsonrpc import NOT_FOUND, RPCError
from console.protocol.params import Params
from console.store import HistoryQuery


async def query(ctx: CallContext, p: Params) -> dict[str, Any]:
    kinds = p.texts("kinds", ["decision"], max_items=len(KINDS))
    if any(k not in KINDS for k in kinds):
        raise RPCError(-32602, "kinds: each must be one of " + ", ".join(KINDS))
    q = HistoryQuery(
        kinds=tuple(kinds),
        verdict=p.text("verdict", None, max_len=16),
        source=p.text("source", None, max_len=32),
        tool=p.text("tool", None, max_len=128),
        session_id=p.text("session_id", None, max_len=256),
        fingerprint=p.text("fingerprint", None, max_len=64),
        request_id=p.text("request_id", None, max_len=64),
        since=p.number("since", None, low=0, high=1e11),
        until=p.number("until", None, low=0, high=1e11),
        search=p.text("search", None, max_len=1024),
        before_seq=p.integer("before_seq", None, low=0),
        after_seq=p.integer("after_seq", None, low=0),
        limit=p.integer("limit", 200, low=1, high=5000),
    )
    with_count = p.flag("count", False)
    p.done()
    page = await asyncio.to_thread(ctx.daemon.store.history, q)
    result = page.to_dict()
    if with_count:
        result["count"] = await asyncio.to_thread(ctx.daemon.store.count, q)
    return result


async def detail(ctx: CallContext, p: Params) -> dict[str, Any]:
    rid = p.text("request_id", max_len=64)
    p.done()
    found = await asyncio.to_thread(ctx.daemon.store.request_detail, rid)
    if found is None:
        raise RPCError(NOT_FOUND, f"no request {rid} in the history")
    return found


async def previous(ctx: CallContext, p: Params) -> dict[str, Any]:
    tool = p.text("tool", max_len=128)
    executable = p.text("executable", max_len=4096)
    limit = p.integer("limit", 20, low=1, high=200)
    p.done()
    rows = await asyncio.to_thread(ctx.daemon.store.previous_decisions, tool, executable, limit)
    return {"decisions": rows}


async def verify(ctx: CallContext, p: Params) -> dict[str, Any]:
    p.done()
    report = await asyncio.to_thread(ctx.daemon.store.verify)
    return report.to_dict()


METHODS = {
    "history.query": Method(query, operator_only=True),
    "history.detail": Method(detail, operator_only=True),
    "history.previous": Method(previous, operator_only=True),
    "history.verify": Method(verify, operator_only=True),
}
