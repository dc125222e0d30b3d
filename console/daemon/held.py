"""Allowed operations held for a later run, each behind a one-time ticket.

An adapter whose agent runs commands itself (Claude Code's Bash tool) cannot stream a
command through ``operation.exec``: the agent's own tool must run *something*. So the
adapter asks ``operation.hold``: the operation is decided as usual and, when allowed,
kept here with its authorization. The adapter then tells the agent to run
``agent-console exec --ticket ID:SECRET`` instead, which calls ``operation.run`` and gets
exactly the held operation run in the sandbox — the same request id, fingerprint and
pinned content, its outcome recorded against that request.

A ticket is a capability: whoever presents it runs the operation it names, once. It is
32 random bytes (only their SHA-256 is kept), expires after :data:`TICKET_TTL_S`, lives
in memory only (a daemon restart voids every ticket), and the table is bounded.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

TICKET_TTL_S = 600.0
MAX_HELD = 256
SECRET_BYTES = 32


class TicketError(LookupError):
    """The ticket names nothing runnable; the message says why (never which part matched)."""


@dataclass(frozen=True, slots=True)
class Held:
    request_id: str
    operation: Any  # console.contract.operation.Operation
    decision: dict[str, Any]
    expires: float
    digest: bytes


def split_ticket(ticket: str) -> tuple[str, str]:
    request_id, sep, secret = ticket.partition(":")
    if not sep or not request_id or not secret:
        raise TicketError("a ticket is REQUEST_ID:SECRET, as operation.hold returned it")
    return request_id, secret


class HeldTable:
    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._held: dict[str, Held] = {}

    def __len__(self) -> int:
        self._expire()
        return len(self._held)

    def hold(self, operation: Any, decision: dict[str, Any]) -> str:
        """Keep an allowed operation; returns its ticket ``REQUEST_ID:SECRET``."""
        self._expire()
        while len(self._held) >= MAX_HELD:  # the oldest unclaimed ticket goes first
            self._held.pop(next(iter(self._held)))
        request_id = decision["request_id"]
        secret = secrets.token_urlsafe(SECRET_BYTES)
        self._held[request_id] = Held(
            request_id,
            operation,
            decision,
            self._clock() + TICKET_TTL_S,
            hashlib.sha256(secret.encode()).digest(),
        )
        return f"{request_id}:{secret}"

    def take(self, ticket: str) -> Held:
        """The held operation, removed: a ticket runs once."""
        request_id, secret = split_ticket(ticket)
        self._expire()
        held = self._held.get(request_id)
        digest = hashlib.sha256(secret.encode()).digest()
        if held is None or not hmac.compare_digest(held.digest, digest):
            raise TicketError(
                "no such ticket: it was already used, it expired "
                f"(after {TICKET_TTL_S:.0f} s), the daemon restarted, or it is wrong"
            )
        del self._held[request_id]
        return held

    def _expire(self) -> None:
        now = self._clock()
        for request_id in [r for r, h in self._held.items() if h.expires <= now]:
            del self._held[request_id]
