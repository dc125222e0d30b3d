"""hello, status, subscriptions and stop."""

from __future__ import annotations

import hmac
from typing import Any

from console.daemon.connection import CallContext, Method, Role
from console.daemon.events import Topic
from console.protocol.jsonrpc import UNAUTHORIZED, RPCError
from console.protocol.params import Params

PROTOCOL_VERSION = 1


async def hello(ctx: CallContext, p: Params) -> dict[str, Any]:
    token = p.text("token", "", max_len=256)
    p.text("client", "", max_len=128)
    agent_session = p.text("session_id", "", max_len=256)
    p.done()
    conn = ctx.conn
    if agent_session:
        # An agent names its session to reach its durable sessions after a reconnect.
        ctx.daemon.sessions.hold(conn, f"agent:{agent_session}")
    if conn.role is Role.OPERATOR and not conn.authenticated:
        if not token or not hmac.compare_digest(token, ctx.daemon.token):
            raise RPCError(
                UNAUTHORIZED, "wrong or missing operator token (it is in operator.token in the state dir)"
            )
        conn.authenticated = True
    return {
        "protocol": PROTOCOL_VERSION,
        "role": conn.role.value,
        "daemon_pid": ctx.daemon.pid,
        "version": ctx.daemon.version,
        "peer_pid": conn.peer.pid,
    }


async def status(ctx: CallContext, p: Params) -> dict[str, Any]:
    p.done()
    return ctx.daemon.status()


async def subscribe(ctx: CallContext, p: Params) -> dict[str, Any]:
    names = p.texts("topics", [t.value for t in Topic], max_items=16)
    p.done()
    try:
        topics = frozenset(Topic(n) for n in names)
    except ValueError:
        raise RPCError(-32602, "topics: each must be one of " + ", ".join(t.value for t in Topic)) from None
    conn = ctx.conn
    ctx.daemon.events.subscribe(conn.id, topics, lambda event: conn.notify("event", event))
    conn.on_close.append(lambda: ctx.daemon.events.unsubscribe(conn.id))
    return {"topics": sorted(t.value for t in topics), "status": ctx.daemon.status()}


async def unsubscribe(ctx: CallContext, p: Params) -> dict[str, Any]:
    p.done()
    ctx.daemon.events.unsubscribe(ctx.conn.id)
    return {}


async def stop(ctx: CallContext, p: Params) -> dict[str, Any]:
    p.done()
    ctx.daemon.request_stop()
    return {"stopping": True, "pid": ctx.daemon.pid}


METHODS = {
    "hello": Method(hello, before_auth=True),
    "daemon.status": Method(status),
    "daemon.stop": Method(stop, operator_only=True),
    "subscribe": Method(subscribe, operator_only=True),
    "unsubscribe": Method(unsubscribe, operator_only=True),
}
