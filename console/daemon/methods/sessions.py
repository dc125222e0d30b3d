"""Sessions over the protocol: create, list, attach, input, resize, signal, read, screen."""

from __future__ import annotations

import base64
import binascii
import os
import signal as signals
from typing import Any

from console.daemon.connection import CallContext, Method, Role
from console.daemon.session_service import OPERATOR, unknown
from console.protocol.ids import SESSION_ID, read_id
from console.protocol.jsonrpc import BUSY, FORBIDDEN, INVALID_PARAMS, RPCError
from console.protocol.params import Params
from console.sessions import InputOverflow, SessionError

MAX_INPUT = 1 << 20


def _sid(ctx: CallContext, p: Params) -> str:
    sid: str = read_id(p, "session", SESSION_ID)
    ctx.daemon.sessions.check_access(ctx.conn, sid)
    return sid


def _not_while_paused(ctx: CallContext, sid: str, what: str) -> None:
    """A tripwire pause is the operator's to resume or end (tripwire.resolve), not the agent's."""
    if ctx.conn.role is not Role.OPERATOR and ctx.daemon.sessions.paused_by_tripwire(sid):
        raise RPCError(
            FORBIDDEN,
            f"session {sid} is paused by the tripwire; only the operator can {what} it "
            "(tripwire.resolve on operator.sock)",
        )


def _size(p: Params) -> tuple[int, int]:
    return p.integer("cols", 120, low=2, high=1000), p.integer("rows", 40, low=2, high=1000)


async def sessions_list(ctx: CallContext, p: Params) -> dict[str, Any]:
    p.done()
    svc = ctx.daemon.sessions
    infos = svc.manager.infos()
    if ctx.conn.role is not Role.OPERATOR:
        infos = [i for i in infos if i.owner == ctx.conn.owner]
    return {"sessions": [svc.to_wire(i) for i in infos]}


async def sessions_get(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    p.done()
    return {"session": ctx.daemon.sessions.to_wire(ctx.daemon.sessions.manager.get(sid))}


async def sessions_new(ctx: CallContext, p: Params) -> dict[str, Any]:
    argv = p.texts("argv", max_items=10_000)
    cwd = p.text("cwd", os.path.expanduser("~"), max_len=4096)
    title = p.text("title", "", max_len=200)
    env = p.obj("env", None)
    cols, rows = _size(p)
    p.done()
    if not argv:
        raise RPCError(INVALID_PARAMS, "argv: give the command to run")
    if env is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise RPCError(INVALID_PARAMS, "env: an object of strings")
    full_env = {**os.environ, **env} if env else None
    return {"session": ctx.daemon.sessions.start_for_operator(argv, cwd, title, cols, rows, full_env)}


async def attach(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    read_only = p.flag("read_only", False)
    p.done()
    try:
        return ctx.daemon.sessions.attach(ctx.conn, sid, read_only)
    except SessionError as exc:
        raise unknown(exc) from None


async def detach(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    p.done()
    ctx.daemon.sessions.detach(ctx.conn, sid)
    return {"detached": sid}


async def send_input(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    text = p.text("text", None, max_len=MAX_INPUT)
    data_b64 = p.text("data_base64", None, max_len=MAX_INPUT * 2)
    p.done()
    if (text is None) == (data_b64 is None):
        raise RPCError(INVALID_PARAMS, "give exactly one of text and data_base64")
    try:
        data = text.encode() if text is not None else base64.b64decode(data_b64, validate=True)
    except (binascii.Error, ValueError):
        raise RPCError(INVALID_PARAMS, "data_base64: not valid base64") from None
    try:
        ctx.daemon.sessions.manager.write(sid, data, client_id=f"conn-{ctx.conn.id}")
    except InputOverflow as exc:
        # Not the caller's mistake: the program is not reading yet. Nothing was
        # queued, so the same input can be sent again.
        raise RPCError(BUSY, "session input is busy, try again", {"reason": str(exc)}) from None
    except SessionError as exc:
        raise unknown(exc) from None
    return {"written": len(data)}


async def resize(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    cols, rows = _size(p)
    p.done()
    try:
        ctx.daemon.sessions.manager.resize(sid, cols, rows, f"conn-{ctx.conn.id}")
    except SessionError as exc:
        raise unknown(exc) from None
    return {"cols": cols, "rows": rows}


async def send_signal(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    name = p.text("signal", max_len=16).upper()
    p.done()
    allowed = {"INT", "TERM", "HUP", "KILL", "QUIT", "STOP", "CONT", "USR1", "USR2", "WINCH"}
    name = name.removeprefix("SIG")
    if name not in allowed:
        raise RPCError(INVALID_PARAMS, "signal: one of " + ", ".join(sorted(allowed)))
    _not_while_paused(ctx, sid, "signal")
    try:
        ctx.daemon.sessions.manager.signal(sid, getattr(signals, "SIG" + name))
    except SessionError as exc:
        raise unknown(exc) from None
    return {"signalled": "SIG" + name}


async def kill(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    grace = p.number("grace_s", 3.0, low=0, high=60)
    p.done()
    _not_while_paused(ctx, sid, "kill")
    info = await ctx.daemon.sessions.manager.kill(sid, grace)
    return {"session": ctx.daemon.sessions.to_wire(info)}


async def wait(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    timeout = p.number("timeout_s", None, low=0, high=86_400)
    p.done()
    try:
        info = await ctx.daemon.sessions.manager.wait(sid, timeout)
    except TimeoutError:
        info = ctx.daemon.sessions.manager.get(sid)
    return {"session": ctx.daemon.sessions.to_wire(info)}


async def read(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    offset = p.integer("offset", 0, low=0)
    max_bytes = p.integer("max_bytes", 65536, low=1, high=1 << 20)
    p.done()
    r = ctx.daemon.sessions.manager.read(sid, offset, max_bytes)
    return {
        "data_base64": base64.b64encode(r.data).decode("ascii"),
        "next_offset": r.next_offset,
        "dropped_bytes": r.dropped_bytes,
    }


async def screen(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    scrollback = p.flag("scrollback", False)
    p.done()
    return {"text": ctx.daemon.sessions.manager.screen_text(sid, scrollback)}


async def remove(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    p.done()
    await ctx.daemon.sessions.manager.remove(sid)
    return {"removed": sid}


async def adopt(ctx: CallContext, p: Params) -> dict[str, Any]:
    sid = _sid(ctx, p)
    p.done()
    info = ctx.daemon.sessions.manager.adopt(sid, OPERATOR, "durable")
    return {"session": ctx.daemon.sessions.to_wire(info)}


async def prune(ctx: CallContext, p: Params) -> dict[str, Any]:
    everything = p.flag("all", False)
    p.done()
    manager = ctx.daemon.sessions.manager
    freed = manager.prune(everything)  # each pruned session is published as a status change
    return {
        "pruned": [{"session": sid, "bytes": n} for sid, n in freed],
        "freed_bytes": sum(n for _, n in freed),
        "total_bytes": manager.recordings_bytes(),
        "quota_bytes": manager.recording_caps()[1],
    }


METHODS = {
    "sessions.list": Method(sessions_list),
    "sessions.get": Method(sessions_get),
    "sessions.new": Method(sessions_new, operator_only=True),
    "sessions.attach": Method(attach),
    "sessions.detach": Method(detach),
    "sessions.input": Method(send_input),
    "sessions.resize": Method(resize),
    "sessions.signal": Method(send_signal),
    "sessions.kill": Method(kill),
    "sessions.wait": Method(wait),
    "sessions.read": Method(read),
    "sessions.screen": Method(screen),
    "sessions.remove": Method(remove, operator_only=True),
    "sessions.adopt": Method(adopt, operator_only=True),
    "sessions.prune": Method(prune, operator_only=True),
}
