"""Attention over the protocol: an agent says it waits, works or is done; who reads it.

``agent.attention`` (agent.sock only) records a state for the caller's own identity:
the key is (the connection's daemon-issued identity, the ``session_id`` it gives), so no
param can name another agent. ``agent.attention_list`` shows the operator every entry
and an agent its own. See console/daemon/attention.py.
"""

from __future__ import annotations

from console.daemon.connection import CallContext, Handler, Role
from console.protocol.jsonrpc import FORBIDDEN, INVALID_PARAMS, RPCError
from console.protocol.requests import AgentAttention, AgentAttentionList, AttentionState
from console.protocol.results import AgentAttentionListResult, AgentAttentionResult

KIND_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.:")


async def attention(ctx: CallContext, args: AgentAttention) -> AgentAttentionResult:
    agent = ctx.conn.agent
    if ctx.conn.role is not Role.AGENT or agent is None:
        raise RPCError(FORBIDDEN, "agent.attention: agent.sock only (an agent reports its own state)")
    state, session, message, kind = args.state, args.session_id, args.message, args.kind
    if not set(kind) <= KIND_CHARS:
        raise RPCError(
            INVALID_PARAMS,
            "kind: lowercase letters, digits and _-.: only (e.g. idle_prompt)",
            {"param": "kind"},
        )
    table = ctx.services.attention
    entry, changed = table.report(agent.id, session, state, message=message, kind=kind)
    return AgentAttentionResult(entry=table.wire(entry), changed=changed)


async def attention_list(ctx: CallContext, args: AgentAttentionList) -> AgentAttentionListResult:
    table = ctx.services.attention
    if ctx.conn.role is Role.OPERATOR:
        entries = table.entries()
    else:
        assert ctx.conn.agent is not None
        entries = table.entries(ctx.conn.agent.id)
    return AgentAttentionListResult(
        agents=[table.wire(e) for e in entries],
        waiting=sum(1 for e in entries if e.state is AttentionState.WAITING),
    )


METHODS: dict[str, Handler] = {
    "agent.attention": attention,
    "agent.attention_list": attention_list,
}
