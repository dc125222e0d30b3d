"""Sessions over the protocol: create, list, attach, input, resize, signal, read, screen."""

from __future__ import annotations

import base64
import binascii
import os
import signal as signals

from console.daemon.connection import CallContext, Handler, Role
from console.daemon.session_service import OPERATOR, unknown
from console.protocol.jsonrpc import BUSY, FORBIDDEN, INVALID_PARAMS, RPCError
from console.protocol.requests import (
    SessionsAdopt,
    SessionsAttach,
    SessionsDetach,
    SessionsGet,
    SessionsInput,
    SessionsKill,
    SessionsList,
    SessionsNew,
    SessionsPrune,
    SessionsRead,
    SessionsRemove,
    SessionsResize,
    SessionsScreen,
    SessionsSignal,
    SessionsWait,
)
from console.protocol.results import (
    PrunedRecording,
    SessionsAdoptResult,
    SessionsAttachResult,
    SessionsDetachResult,
    SessionsGetResult,
    SessionsInputResult,
    SessionsKillResult,
    SessionsListResult,
    SessionsNewResult,
    SessionsPruneResult,
    SessionsReadResult,
    SessionsRemoveResult,
    SessionsResizeResult,
    SessionsScreenResult,
    SessionsSignalResult,
    SessionsWaitResult,
)
from console.sessions import InputOverflow, SessionError


def _sid(ctx: CallContext, sid: str) -> str:
    """The session, if the caller may reach it (its format was checked at the socket)."""
    ctx.services.sessions.check_access(ctx.conn, sid)
    return sid


def _not_while_paused(ctx: CallContext, sid: str, what: str) -> None:
    """A tripwire pause is the operator's to resume or end (tripwire.resolve), not the agent's."""
    if ctx.conn.role is not Role.OPERATOR and ctx.services.tripwire.holds(sid):
        raise RPCError(
            FORBIDDEN,
            f"session {sid} is paused by the tripwire; only the operator can {what} it "
            "(tripwire.resolve on operator.sock)",
        )


async def sessions_list(ctx: CallContext, args: SessionsList) -> SessionsListResult:
    svc = ctx.services.sessions
    infos = svc.manager.infos()
    if ctx.conn.role is not Role.OPERATOR:
        infos = [i for i in infos if i.owner == ctx.conn.owner]
    return SessionsListResult(sessions=[svc.to_wire(i) for i in infos])


async def sessions_get(ctx: CallContext, args: SessionsGet) -> SessionsGetResult:
    sid = _sid(ctx, args.session)
    return SessionsGetResult(session=ctx.services.sessions.to_wire(ctx.services.sessions.manager.get(sid)))


async def sessions_new(ctx: CallContext, args: SessionsNew) -> SessionsNewResult:
    """A session of the operator's: confined (the sandbox, the workspace ``cwd``) unless
    ``unconfined`` says otherwise."""
    argv, title, env, cols, rows = list(args.argv), args.title, args.env, args.cols, args.rows
    if not argv or not argv[0]:
        raise RPCError(INVALID_PARAMS, "argv: give the command to run")
    if env is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise RPCError(INVALID_PARAMS, "env: an object of strings")
    svc = ctx.services.sessions
    if args.unconfined:
        if args.agent:
            raise RPCError(
                INVALID_PARAMS, "agent: a profile is for confined sessions; drop unconfined or agent"
            )
        cwd = args.cwd or os.path.expanduser("~")  # "": the operator's home
        full_env = {**os.environ, **env} if env else None
        return SessionsNewResult(session=svc.start_unconfined(argv, cwd, title, cols, rows, full_env))
    if not args.cwd:
        raise RPCError(
            INVALID_PARAMS,
            "cwd: a confined session needs its workspace (a project directory); "
            "or start it unconfined, outside the sandbox",
        )
    caller = {**os.environ, **env} if env else dict(os.environ)
    session = await svc.start_confined(
        argv, args.cwd, title=title, cols=cols, rows=rows, env=caller, agent=args.agent
    )
    return SessionsNewResult(session=session)


async def attach(ctx: CallContext, args: SessionsAttach) -> SessionsAttachResult:
    sid = _sid(ctx, args.session)
    try:
        return SessionsAttachResult(**ctx.services.sessions.attach(ctx.conn, sid, args.read_only))
    except SessionError as exc:
        raise unknown(exc) from None


async def detach(ctx: CallContext, args: SessionsDetach) -> SessionsDetachResult:
    sid = _sid(ctx, args.session)
    ctx.services.sessions.detach(ctx.conn, sid)
    return SessionsDetachResult(detached=sid)


async def send_input(ctx: CallContext, args: SessionsInput) -> SessionsInputResult:
    sid = _sid(ctx, args.session)
    text, data_b64 = args.text, args.data_base64
    if (text is None) == (data_b64 is None):
        raise RPCError(INVALID_PARAMS, "give exactly one of text and data_base64")
    try:
        data = text.encode() if text is not None else base64.b64decode(data_b64 or "", validate=True)
    except (binascii.Error, ValueError):
        raise RPCError(INVALID_PARAMS, "data_base64: not valid base64") from None
    try:
        ctx.services.sessions.manager.write(sid, data, client_id=f"conn-{ctx.conn.id}")
    except InputOverflow as exc:
        # Not the caller's mistake: the program is not reading yet. Nothing was
        # queued, so the same input can be sent again.
        raise RPCError(BUSY, "session input is busy, try again", {"reason": str(exc)}) from None
    except SessionError as exc:
        raise unknown(exc) from None
    return SessionsInputResult(written=len(data))


async def resize(ctx: CallContext, args: SessionsResize) -> SessionsResizeResult:
    sid = _sid(ctx, args.session)
    cols, rows = args.cols, args.rows
    try:
        ctx.services.sessions.manager.resize(sid, cols, rows, f"conn-{ctx.conn.id}")
    except SessionError as exc:
        raise unknown(exc) from None
    return SessionsResizeResult(cols=cols, rows=rows)


async def send_signal(ctx: CallContext, args: SessionsSignal) -> SessionsSignalResult:
    sid = _sid(ctx, args.session)
    name = args.signal.upper()
    allowed = {"INT", "TERM", "HUP", "KILL", "QUIT", "STOP", "CONT", "USR1", "USR2", "WINCH"}
    name = name.removeprefix("SIG")
    if name not in allowed:
        raise RPCError(INVALID_PARAMS, "signal: one of " + ", ".join(sorted(allowed)))
    _not_while_paused(ctx, sid, "signal")
    try:
        ctx.services.sessions.manager.signal(sid, getattr(signals, "SIG" + name))
    except SessionError as exc:
        raise unknown(exc) from None
    return SessionsSignalResult(signalled="SIG" + name)


async def kill(ctx: CallContext, args: SessionsKill) -> SessionsKillResult:
    sid = _sid(ctx, args.session)
    _not_while_paused(ctx, sid, "kill")
    info = await ctx.services.sessions.manager.kill(sid, args.grace_s)
    return SessionsKillResult(session=ctx.services.sessions.to_wire(info))


async def wait(ctx: CallContext, args: SessionsWait) -> SessionsWaitResult:
    sid = _sid(ctx, args.session)
    try:
        info = await ctx.services.sessions.manager.wait(sid, args.timeout_s)
    except TimeoutError:
        info = ctx.services.sessions.manager.get(sid)
    return SessionsWaitResult(session=ctx.services.sessions.to_wire(info))


async def read(ctx: CallContext, args: SessionsRead) -> SessionsReadResult:
    sid = _sid(ctx, args.session)
    r = ctx.services.sessions.manager.read(sid, args.offset, args.max_bytes)
    return SessionsReadResult(
        data_base64=base64.b64encode(r.data).decode("ascii"),
        next_offset=r.next_offset,
        dropped_bytes=r.dropped_bytes,
    )


async def screen(ctx: CallContext, args: SessionsScreen) -> SessionsScreenResult:
    sid = _sid(ctx, args.session)
    return SessionsScreenResult(text=ctx.services.sessions.manager.screen_text(sid, args.scrollback))


async def remove(ctx: CallContext, args: SessionsRemove) -> SessionsRemoveResult:
    sid = _sid(ctx, args.session)
    await ctx.services.sessions.manager.remove(sid)
    return SessionsRemoveResult(removed=sid)


async def adopt(ctx: CallContext, args: SessionsAdopt) -> SessionsAdoptResult:
    sid = _sid(ctx, args.session)
    info = ctx.services.sessions.manager.adopt(sid, OPERATOR, "durable")
    return SessionsAdoptResult(session=ctx.services.sessions.to_wire(info))


async def prune(ctx: CallContext, args: SessionsPrune) -> SessionsPruneResult:
    manager = ctx.services.sessions.manager
    freed = manager.prune(args.all)  # each pruned session is published as a status change
    return SessionsPruneResult(
        pruned=[PrunedRecording(session=sid, bytes=n) for sid, n in freed],
        freed_bytes=sum(n for _, n in freed),
        total_bytes=manager.recordings_bytes(),
        quota_bytes=manager.recording_caps()[1],
    )


METHODS: dict[str, Handler] = {
    "sessions.list": sessions_list,
    "sessions.get": sessions_get,
    "sessions.new": sessions_new,
    "sessions.attach": attach,
    "sessions.detach": detach,
    "sessions.input": send_input,
    "sessions.resize": resize,
    "sessions.signal": send_signal,
    "sessions.kill": kill,
    "sessions.wait": wait,
    "sessions.read": read,
    "sessions.screen": screen,
    "sessions.remove": remove,
    "sessions.adopt": adopt,
    "sessions.prune": prune,
}
