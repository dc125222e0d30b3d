"""Limits that keep one client from exhausting the daemon, and how a refusal is recorded.

Every limit answers the client with error ``QUOTA_EXCEEDED`` (-32008) naming the quota,
its limit and what to do, writes a log line, and adds a ``daemon`` history event
("quota: <name>") at most once a minute per quota and agent, so an agent that keeps
hitting a limit cannot flood the history with the record of it.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from console.protocol.jsonrpc import QUOTA_EXCEEDED, RPCError
from console.store import daemon_event

if TYPE_CHECKING:
    from console.daemon.identity import Agent
    from console.daemon.ports import Services

log = logging.getLogger("agent-console.quotas")

KiB = 1024
MiB = 1024 * KiB

# ---- connections (console/daemon/connection.py)
# The largest frame before a connection has said hello (operator: with the right token).
MAX_FRAME_BEFORE_HELLO = 256 * KiB
# A connection must say hello within this long, and a frame must be complete this long
# after its first byte.
HELLO_TIMEOUT_S = 10.0
PARTIAL_FRAME_TIMEOUT_S = 10.0
# Bytes of incomplete frames held for all connections together.
MAX_PARTIAL_BYTES_TOTAL = 24 * MiB
# Bytes queued for one peer that is not reading (subscriber queues, replies).
MAX_QUEUED_BYTES = 16 * MiB
# Connections one agent identity may hold open at once (its hooks, `exec` runs, clients):
# many connections of one identity each sending work multiplied its share of the daemon.
MAX_CONNECTIONS_PER_AGENT = 32

# ---- requests, per agent identity (console/daemon/methods/approvals.py, execute.py)
MAX_IN_FLIGHT_REQUESTS = 64  # submitted and not yet answered
MAX_JUSTIFICATION_CHARS = 16 * KiB
# The operation's canonical JSON (stdin counts, as base64) plus its command line: what a
# pending event and a history row repeat. Under this, every frame stays under MAX_FRAME.
MAX_OPERATION_BYTES = 3 * MiB
# A history text column holds at most 1 Mi characters (console/store/event.py).
MAX_COMMAND_CHARS = 1024 * KiB - 1
HISTORY_BYTES_PER_MINUTE = 32 * MiB  # what an agent's requests may add to the history
# ...and all agents together: identities are free to make, so per-agent limits alone
# would not bound the daemon.
MAX_IN_FLIGHT_REQUESTS_ALL = 16_384
# Bytes of operations waiting for an answer (what the daemon holds while they wait).
MAX_IN_FLIGHT_BYTES = 8 * MiB
MAX_IN_FLIGHT_BYTES_ALL = 16 * MiB
HISTORY_BYTES_PER_MINUTE_ALL = 128 * MiB

# ---- results (console/daemon/methods/history.py, approvals.py)
MAX_RESULT_BYTES = 2 * MiB  # one history page or one request's story
MAX_ROW_BYTES = 256 * KiB  # a bigger row is sent with its body elided

_NOTED: dict[tuple[str, str], float] = {}  # (quota, who) -> when last recorded


def refuse(
    daemon: Services | None, quota: str, message: str, *, who: str = "", limit: int | float | None = None
) -> RPCError:
    """The error for the client, after logging and (rate-limited) recording the refusal."""
    note(daemon, quota, who=who, limit=limit)
    data: dict[str, Any] = {"quota": quota}
    if limit is not None:
        data["limit"] = limit
    return RPCError(QUOTA_EXCEEDED, f"quota {quota}: {message}", data)


def note(daemon: Services | None, quota: str, *, who: str = "", limit: int | float | None = None) -> None:
    log.warning("quota %s exceeded by %s (limit %s)", quota, who or "a connection", limit)
    now = time.monotonic()
    key = (quota, who)
    if now - _NOTED.get(key, -1e9) < 60.0:
        return
    if len(_NOTED) > 10_000:
        _NOTED.clear()
    _NOTED[key] = now
    if daemon is None or not hasattr(daemon, "store"):
        return
    event = daemon_event(
        at=time.time(), note=f"quota: {quota}", body={"quota": quota, "who": who, "limit": limit}
    )
    try:
        future = daemon.store.append(event)
    except Exception:  # best effort: the log line above is the record of last resort
        return
    future.add_done_callback(lambda f: f.exception())  # a failed record is logged by the store


def refuse_justification(daemon: Any, who: str, chars: int) -> RPCError:
    return refuse(
        daemon,
        "justification_chars",
        f"operation.justification: at most {MAX_JUSTIFICATION_CHARS} characters; say why briefly",
        who=who,
        limit=MAX_JUSTIFICATION_CHARS,
    )


def refuse_command(daemon: Any, who: str, chars: int) -> RPCError:
    return refuse(
        daemon,
        "command_chars",
        f"the command line is {chars} characters; at most {MAX_COMMAND_CHARS} "
        "(pass large inputs as files in the workspace)",
        who=who,
        limit=MAX_COMMAND_CHARS,
    )


class Bucket:
    """A token bucket of bytes per minute."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.tokens = float(per_minute)
        self.at = time.monotonic()

    def wait_for(self, nbytes: int) -> float:
        """0 when ``nbytes`` fit now (and are taken), else the seconds until they would."""
        now = time.monotonic()
        rate = self.per_minute / 60.0
        self.tokens = min(float(self.per_minute), self.tokens + (now - self.at) * rate)
        self.at = now
        if nbytes > self.tokens:
            return (nbytes - self.tokens) / rate
        self.tokens -= nbytes
        return 0.0


ALL_AGENTS = Bucket(HISTORY_BYTES_PER_MINUTE_ALL)


def charge_history(daemon: Services, agent: Agent, nbytes: int) -> None:
    """Take ``nbytes`` from the agent's and from everyone's per-minute history allowance."""
    if agent.history is None:
        agent.history = Bucket(HISTORY_BYTES_PER_MINUTE)
    wait = agent.history.wait_for(nbytes)
    if wait:
        raise refuse(
            daemon,
            "history_bytes_per_minute",
            f"this agent's requests may add at most {HISTORY_BYTES_PER_MINUTE // MiB} MiB a minute to the "
            f"history; retry in {wait:.0f} s or send smaller operations",
            who=agent.id,
            limit=HISTORY_BYTES_PER_MINUTE,
        )
    wait = ALL_AGENTS.wait_for(nbytes)
    if wait:
        agent.history.tokens += nbytes  # not this agent's fault: give its share back
        raise refuse(
            daemon,
            "history_bytes_per_minute_all",
            f"all agents together may add at most {HISTORY_BYTES_PER_MINUTE_ALL // MiB} MiB a minute to "
            f"the history; retry in {wait:.0f} s",
            who="all agents",
            limit=HISTORY_BYTES_PER_MINUTE_ALL,
        )
