"""Allowed operations held for a later run, each behind a one-time ticket.

An adapter whose agent runs commands itself (Claude Code's Bash tool) cannot stream a
command through ``operation.exec``: the agent's own tool must run *something*. So the
adapter asks ``operation.hold``: the operation is decided as usual and, when allowed,
kept here with its authorization and the agent identity that asked. The adapter then
tells the agent to run the exact command the daemon built for the ticket
(console/protocol/tickets.py: ``agent-console exec --ticket ID``), which reads the
ticket's secret from a private file and calls ``operation.run``: exactly the held
operation runs in the sandbox — the same request id, fingerprint and pinned content,
its outcome recorded against that request.

Redeeming takes both the secret and the identity that asked: a ticket read by another
agent (from /proc, from the file) runs nothing for it. Inside a confined session the
identity is the sandbox's, proven by the process that connected rather than by anything
it says, and no process outside is that identity: there the request id alone redeems
(``in_sandbox``), and no secret file is written (the sandbox would not show it; see
docs/security.md, "Confined sessions"). The secret is 32 random bytes
(only their SHA-256 is kept), a ticket expires after :data:`TICKET_TTL_S`, lives in
memory only (a daemon restart voids every ticket), and the table is bounded.

The table also answers whether a command line is byte for byte one it issued to an
identity (``operation.held``): Claude Code's permission dialog for that command is
then the daemon's own rewrite, and nothing else is.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from console.protocol.results import OperationDecision

TICKET_TTL_S = 600.0
MAX_HELD = 256
SECRET_BYTES = 32


class TicketError(LookupError):
    """The ticket names nothing runnable; the message says why (never which part matched)."""


@dataclass(frozen=True, slots=True)
class Held:
    request_id: str
    operation: Any  # console.contract.operation.Operation
    decision: OperationDecision
    expires: float
    digest: bytes
    agent: str  # the identity that asked; only it may redeem
    command: str  # the exact command line that redeems it


def split_ticket(ticket: str) -> tuple[str, str]:
    request_id, sep, secret = ticket.partition(":")
    if not sep or not request_id or not secret:
        raise TicketError("a ticket is REQUEST_ID:SECRET, the request id and the secret from its file")
    return request_id, secret


_NO_SUCH = (
    "no such ticket for this agent: it was already used, it expired (after {ttl:.0f} s), the daemon "
    "restarted, it is wrong, or another agent identity asked for it"
)


class HeldTable:
    def __init__(
        self, clock: Callable[[], float] = time.monotonic, on_drop: Callable[[str], None] = lambda _rid: None
    ) -> None:
        self._clock = clock
        self._held: dict[str, Held] = {}
        self._on_drop = on_drop  # a ticket left the table (its secret file goes with it)

    def __len__(self) -> int:
        self._expire()
        return len(self._held)

    def issue(
        self, operation: Any, decision: OperationDecision, agent: str, command: Callable[[str], str]
    ) -> tuple[Held, str]:
        """Keep an allowed operation for ``agent``: the entry (with the exact command that
        redeems it, ``command(request_id)``) and the ticket's secret."""
        self._expire()
        while len(self._held) >= MAX_HELD:  # the oldest unclaimed ticket goes first
            self._drop(next(iter(self._held)))
        request_id = decision.request_id
        secret = secrets.token_urlsafe(SECRET_BYTES)
        held = Held(
            request_id,
            operation,
            decision,
            self._clock() + TICKET_TTL_S,
            hashlib.sha256(secret.encode()).digest(),
            agent,
            command(request_id),
        )
        self._held[request_id] = held
        return held, secret

    def take(self, ticket: str, agent: str, *, in_sandbox: bool = False) -> Held:
        """The held operation, removed: a ticket runs once, for the identity that asked.

        ``ticket`` is ``REQUEST_ID:SECRET``; the request id alone when ``in_sandbox``
        (the caller runs inside the confined session whose identity ``agent`` is, as the
        daemon found by its process). A wrong secret or another identity leaves the
        ticket where it is."""
        by_id = in_sandbox and ":" not in ticket
        request_id, secret = (ticket, "") if by_id else split_ticket(ticket)
        self._expire()
        held = self._held.get(request_id)
        digest = hashlib.sha256(secret.encode()).digest()
        right_secret = held is not None and (by_id or hmac.compare_digest(held.digest, digest))
        if held is None or not right_secret or not hmac.compare_digest(held.agent, agent):
            raise TicketError(_NO_SUCH.format(ttl=TICKET_TTL_S))
        self._drop(request_id)
        return held

    def issued(self, command: str, agent: str) -> Held | None:
        """The live ticket whose redeeming command is exactly ``command``, issued to ``agent``."""
        self._expire()
        for held in self._held.values():
            if held.agent == agent and hmac.compare_digest(
                held.command.encode(), command.encode("utf-8", "surrogatepass")
            ):
                return held
        return None

    def _drop(self, request_id: str) -> None:
        if self._held.pop(request_id, None) is not None:
            self._on_drop(request_id)

    def _expire(self) -> None:
        now = self._clock()
        for request_id in [r for r, h in self._held.items() if h.expires <= now]:
            self._drop(request_id)
