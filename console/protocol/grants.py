"""A grant as the daemon reports it (``grants.list``, ``grants.add``, ``decide`` and the
``grants`` topic's ``added`` event), typed: one shape everywhere.

Like the results (console/protocol/results.py), it allows unknown fields, so a newer
daemon may add a key; every key it has is always sent.
"""

from __future__ import annotations

import msgspec

from console.policy.grants import Grant, ended


class GrantObject(msgspec.Struct, frozen=True, kw_only=True):
    """A standing grant (``effect`` ``allow``) or deny-rule (``deny``) for one fingerprint.

    ``scope`` is ``once``, ``session`` (for the agent identity in ``session_id``) or
    ``always``. ``tool`` and ``summary`` say what it was granted for (the tool and the
    command line, agent text); both are ``""`` when the grant was added without them."""

    id: str
    fingerprint: str
    scope: str
    effect: str
    session_id: str
    created_at: float
    expires_at: float | None
    uses: int
    last_used_at: float | None
    revoked_at: float | None
    note: str
    tool: str
    summary: str

    @classmethod
    def of(cls, grant: Grant, tool: str, summary: str) -> GrantObject:
        """The grant with what it was granted for (the store keeps the two beside it)."""
        return cls(**grant.to_dict(), tool=tool, summary=summary)

    def ended(self, now: float) -> str:
        """Why it no longer applies at ``now`` (``revoked``, ``expired``, ``used``), or
        ``""`` while it does: the daemon's rule (console/policy/grants.py)."""
        return ended(self.scope, self.effect, self.uses, self.expires_at, self.revoked_at, now)
