"""hello, status, subscriptions and stop."""

from __future__ import annotations

import hmac
import time
from typing import Any

from msgspec import UNSET, UnsetType

from console.daemon import identity
from console.daemon.connection import CallContext, Handler, Role
from console.daemon.events import Topic
from console.daemon.link_tickets import TICKET_TTL_S
from console.protocol.jsonrpc import INVALID_PARAMS, PROTOCOL_VERSION, UNAUTHORIZED, RPCError
from console.protocol.pending import AgentIdentity
from console.protocol.requests import DaemonStatus, DaemonStop, Hello, LinkTicket, Subscribe, Unsubscribe
from console.protocol.results import (
    DaemonStatusResult,
    DaemonStopResult,
    HelloAgent,
    HelloResult,
    LinkTicketResult,
    SubscribeResult,
    UnsubscribeResult,
)
from console.protocol.status import PolicyStatus, SandboxStatus, SessionsStatus


async def hello(ctx: CallContext, args: Hello) -> HelloResult:
    token, label, agent_id, secret = args.token, args.session_id, args.agent_id, args.agent_secret
    agent_pid = args.agent_pid
    conn = ctx.conn
    if conn.role is Role.OPERATOR:
        if agent_id or secret or agent_pid is not None:
            raise RPCError(INVALID_PARAMS, "agent_id, agent_secret, agent_pid: agent.sock only")
        if not conn.authenticated:
            if args.ticket:
                # A console on another machine (docs/remote.md): the ticket was asked for
                # on a connection the token authenticated here.
                if not ctx.services.link_tickets.redeem(args.ticket):
                    raise RPCError(
                        UNAUTHORIZED, "unknown, used or expired link ticket; ask link.ticket again"
                    )
            elif not token or not _token_matches(token, ctx.services.token):
                raise RPCError(
                    UNAUTHORIZED, "wrong or missing operator token (it is in operator.token in the state dir)"
                )
            conn.authenticated = True
        return _greeting(ctx)
    if args.ticket:
        raise RPCError(INVALID_PARAMS, "ticket: operator.sock only")
    if bool(agent_id) != bool(secret):
        raise RPCError(INVALID_PARAMS, "agent_id and agent_secret: give both to reconnect, or neither")
    registry = ctx.services.agents
    confined = registry.confined(conn.peer) if not agent_id else None
    if agent_id:
        agent, how = registry.by_secret(agent_id, secret), "secret"
    elif confined is not None:
        agent, how = confined, "sandbox"
    elif agent_pid is not None:
        agent, how = registry.by_process(conn.peer, agent_pid), "process"
    elif conn.agent is not None:
        agent, how = conn.agent, "connection"
    else:
        found = registry.by_ancestry(conn.peer)
        if found is not None:
            agent, how = found, "process_tree"
        elif args.per_call:
            agent, how = registry.fresh(conn.peer, anonymous=True), "anonymous"
        else:
            agent, how = registry.fresh(conn.peer), "new"
    identity.bind(conn, agent)
    if label:
        # The agent's own name for its session: shown to the operator, never a key.
        agent.label = label
    wire: dict[str, Any] = agent.to_wire(secret=registry.secret_of(agent))
    return _greeting(ctx, HelloAgent(**wire, bound_by=how))


def _token_matches(token: str, expected: str) -> bool:
    # compare_digest takes str only when both are ASCII; a non-ASCII guess is simply wrong.
    return hmac.compare_digest(token.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))


def _greeting(ctx: CallContext, agent: HelloAgent | UnsetType = UNSET) -> HelloResult:
    conn = ctx.conn
    return HelloResult(
        protocol=PROTOCOL_VERSION,
        role="operator" if conn.role is Role.OPERATOR else "agent",
        daemon_pid=ctx.services.pid,
        version=ctx.services.version,
        peer_pid=conn.peer.pid,
        agent=agent,
    )


async def link_ticket(ctx: CallContext, args: LinkTicket) -> LinkTicketResult:
    """A one-time ticket for one more operator connection (console/daemon/link_tickets.py)."""
    return LinkTicketResult(
        ticket=ctx.services.link_tickets.mint(),
        socket=str(ctx.services.loc.operator_socket),
        expires_in_s=TICKET_TTL_S,
    )


async def status(ctx: CallContext, args: DaemonStatus) -> DaemonStatusResult:
    if ctx.conn.role is Role.OPERATOR:
        return ctx.services.status()
    return agent_status(ctx)


def agent_status(ctx: CallContext) -> DaemonStatusResult:
    """What agent.sock shows: the agent's own standing and the policy facts it acts on.

    No watched roots, protected paths, state or runtime directories, other agents'
    requests or sessions: those are the operator's.
    """
    daemon, agent = ctx.services, ctx.conn.agent
    assert agent is not None
    config = daemon.policy()
    mine = [i for i in daemon.sessions.manager.infos() if i.owner == agent.owner]
    wire: dict[str, Any] = agent.to_wire()
    return DaemonStatusResult(
        pid=daemon.pid,
        version=daemon.version,
        protocol=PROTOCOL_VERSION,
        started_at=daemon.started_at,
        uptime_s=round(time.time() - daemon.started_at, 3),
        view="agent",
        agent=AgentIdentity(**wire),
        policy=PolicyStatus(
            sandbox=config.sandbox.value,
            network=config.network.value,
            approval=config.approval.value,
            approval_timeout_s=config.approval_timeout_s,
        ),
        approval_timeout_s=config.approval_timeout_s,
        pending=sum(1 for item in daemon.broker.pending.values() if item.agent == agent.id),
        sessions=SessionsStatus(running=sum(1 for i in mine if i.alive), total=len(mine)),
        sandbox=SandboxStatus(summary=daemon.execution.summary()),
    )


async def subscribe(ctx: CallContext, args: Subscribe) -> SubscribeResult:
    try:
        topics = frozenset(Topic(n) for n in args.topics)
    except ValueError:
        raise RPCError(-32602, "topics: each must be one of " + ", ".join(t.value for t in Topic)) from None
    conn = ctx.conn
    ctx.services.events.subscribe(conn.id, topics, lambda event: conn.notify("event", event))
    conn.on_close.append(lambda: ctx.services.events.unsubscribe(conn.id))
    return SubscribeResult(topics=sorted(t.value for t in topics), status=ctx.services.status())


async def unsubscribe(ctx: CallContext, args: Unsubscribe) -> UnsubscribeResult:
    ctx.services.events.unsubscribe(ctx.conn.id)
    return UnsubscribeResult()


async def stop(ctx: CallContext, args: DaemonStop) -> DaemonStopResult:
    ctx.services.request_stop()
    return DaemonStopResult(stopping=True, pid=ctx.services.pid)


METHODS: dict[str, Handler] = {
    "hello": hello,
    "daemon.status": status,
    "link.ticket": link_ticket,
    "daemon.stop": stop,
    "subscribe": subscribe,
    "unsubscribe": unsubscribe,
}
