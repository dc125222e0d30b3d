"""One-time tickets that let a console on another machine say ``hello`` on operator.sock.

A console that reaches this daemon over SSH opens a ``direct-streamlocal`` channel to
operator.sock: the channel's peer is sshd, running as the operator, so ``SO_PEERCRED``
passes, but the operator token stays on this machine. The console first asks for a
ticket on a connection that is already the operator's (``agent-console daemon
dial-stdio``, run here by sshd, authenticated with the token read here), then says
``hello`` with the ticket on the new channel.

A ticket is worth one ``hello`` on operator.sock within :data:`TICKET_TTL_S`: 32 random
bytes, of which only the SHA-256 is kept, in memory (a restart voids every ticket), at
most :data:`MAX_TICKETS` at once (the oldest dropped first). It carries no power the
connection that asked for it did not have.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable

TICKET_TTL_S = 30.0
MAX_TICKETS = 64
TICKET_BYTES = 32


class LinkTickets:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._tickets: OrderedDict[bytes, float] = OrderedDict()  # SHA-256 -> expiry

    def __len__(self) -> int:
        self._expire()
        return len(self._tickets)

    def mint(self) -> str:
        self._expire()
        while len(self._tickets) >= MAX_TICKETS:
            self._tickets.popitem(last=False)
        ticket = secrets.token_urlsafe(TICKET_BYTES)
        self._tickets[_digest(ticket)] = self._clock() + TICKET_TTL_S
        return ticket

    def redeem(self, ticket: str) -> bool:
        """True once for a ticket minted here and not yet expired; it is gone after."""
        self._expire()
        return self._tickets.pop(_digest(ticket), None) is not None

    def _expire(self) -> None:
        now = self._clock()
        for digest, expires in list(self._tickets.items()):
            if expires <= now:
                del self._tickets[digest]


def _digest(ticket: str) -> bytes:
    # A lookup by the hash of the secret: what a timing difference could tell is which
    # hash prefix exists, which says nothing about any ticket.
    return hashlib.sha256(ticket.encode("utf-8", "surrogatepass")).digest()
