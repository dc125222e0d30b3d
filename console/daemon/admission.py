"""Per-agent limits on what a request may cost, checked before the broker sees it.

An agent identity may have at most 64 requests waiting for an answer, justifications of
16 Ki characters, operations of at most 3 MiB (canonical JSON plus command line), and
may add at most 32 MiB a minute to the history (a request and its decision repeat the
operation's columns, so a request is charged twice its size), and its waiting requests
may hold 8 MiB; all agents together at most 16,384 waiting requests holding 16 MiB, and
128 MiB a minute. console/daemon/quotas.py holds the
numbers and records each refusal.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from console.daemon import quotas
from console.daemon.connection import CallContext
from console.protocol import jsonrpc
from console.store import command_line

# Hashes and fixed columns of the two rows, beyond what the operation repeats.
ROW_OVERHEAD = 256


def _command_chars(op: Any) -> int:
    """The length of the shell-quoted command line, without quoting a megabyte each time
    (a quoted word is at most its length, two quotes, and four more per quote in it);
    exact when the bound is over the limit."""
    bound: int = sum(len(a) + 3 + 4 * a.count("'") for a in op.argv)
    if bound <= quotas.MAX_COMMAND_CHARS:
        return bound
    return len(command_line(op))


def _ascii(op: Any) -> bool:
    return all(a.isascii() for a in op.argv)


@contextmanager
def admitted(ctx: CallContext, op: Any) -> Iterator[str]:
    """Hold one of the agent's in-flight slots while its request is decided; yields its id."""
    agent = ctx.conn.agent
    daemon = ctx.services
    who = agent.id if agent is not None else "the operator"
    if len(op.justification) > quotas.MAX_JUSTIFICATION_CHARS:
        raise quotas.refuse_justification(daemon, who, len(op.justification))
    command_chars = _command_chars(op)
    if command_chars > quotas.MAX_COMMAND_CHARS:
        raise quotas.refuse_command(daemon, who, command_chars)
    # The command line's UTF-8 bytes: one per character when ASCII, at most four otherwise.
    size = len(jsonrpc.encode(op.to_wire())) + command_chars * (1 if _ascii(op) else 4)
    if size > quotas.MAX_OPERATION_BYTES:
        raise quotas.refuse(
            daemon,
            "operation_bytes",
            f"the operation is {size} bytes (JSON and command line); at most "
            f"{quotas.MAX_OPERATION_BYTES} (pass large inputs as files in the workspace)",
            who=who,
            limit=quotas.MAX_OPERATION_BYTES,
        )
    if agent is None:  # the operator's own requests: no agent quota
        yield ""
        return
    if op.session_id:
        agent.label = op.session_id[:256]  # the agent's name for its session: display only
    daemon.attention.activity(
        agent.id, op.session_id, tool=op.tool
    )  # a tool call: that session works (again)
    if agent.in_flight >= quotas.MAX_IN_FLIGHT_REQUESTS:
        raise quotas.refuse(
            daemon,
            "requests_in_flight",
            f"this agent already has {agent.in_flight} requests waiting for an answer; "
            "wait for them or cancel some",
            who=agent.id,
            limit=quotas.MAX_IN_FLIGHT_REQUESTS,
        )
    if _InFlight.all >= quotas.MAX_IN_FLIGHT_REQUESTS_ALL:
        raise quotas.refuse(
            daemon,
            "requests_in_flight_all",
            f"{_InFlight.all} requests of all agents wait for an answer; retry later",
            who="all agents",
            limit=quotas.MAX_IN_FLIGHT_REQUESTS_ALL,
        )
    if agent.in_flight_bytes + size > quotas.MAX_IN_FLIGHT_BYTES:
        raise quotas.refuse(
            daemon,
            "in_flight_bytes",
            f"this agent's waiting requests already hold {agent.in_flight_bytes} bytes; at most "
            f"{quotas.MAX_IN_FLIGHT_BYTES} (wait for answers, or send smaller operations)",
            who=agent.id,
            limit=quotas.MAX_IN_FLIGHT_BYTES,
        )
    if _InFlight.bytes + size > quotas.MAX_IN_FLIGHT_BYTES_ALL:
        raise quotas.refuse(
            daemon,
            "in_flight_bytes_all",
            f"waiting requests of all agents hold {_InFlight.bytes} bytes; retry later or send smaller operations",
            who="all agents",
            limit=quotas.MAX_IN_FLIGHT_BYTES_ALL,
        )
    quotas.charge_history(daemon, agent, 2 * size + ROW_OVERHEAD)
    agent.in_flight += 1
    agent.in_flight_bytes += size
    _InFlight.all += 1
    _InFlight.bytes += size
    try:
        yield agent.id
    finally:
        daemon.attention.activity(agent.id, op.session_id, tool=op.tool)  # answered: the agent goes on
        agent.in_flight -= 1
        agent.in_flight_bytes -= size
        _InFlight.all -= 1
        _InFlight.bytes -= size


class _InFlight:
    all = 0
    bytes = 0
