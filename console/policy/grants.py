"""Grants and deny-rules: the operator's standing answers, keyed by fingerprint.

Pure data. The daemon persists them and consumes ``once`` grants atomically; here we
only say whether a rule applies to an operation at a given time.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class GrantScope(StrEnum):
    ONCE = "once"
    SESSION = "session"
    ALWAYS = "always"
    # A command prefix in one workspace for one agent (console/policy/rules.py): its
    # ``fingerprint`` is the rule's key, its ``session_id`` the agent.
    RULE = "rule"


class Effect(StrEnum):
    ALLOW = "allow"
    DENY = "deny"


# When several allow grants match, the one that is not used up wins: a standing grant
# is preferred so a `once` grant is not consumed needlessly.
_PRIORITY = {GrantScope.ALWAYS: 0, GrantScope.SESSION: 1, GrantScope.RULE: 1, GrantScope.ONCE: 2}


def ended(
    scope: str, effect: str, uses: int, expires_at: float | None, revoked_at: float | None, now: float
) -> str:
    """Why a grant no longer applies at ``now``: ``revoked``, ``expired``, or ``used`` (a
    once-grant that allowed its one request); ``""`` while it does. The one rule, for the
    daemon's grants and for a client's copy of one (console/protocol/grants.py)."""
    if revoked_at is not None:
        return "revoked"
    if expires_at is not None and now >= expires_at:
        return "expired"
    if scope == GrantScope.ONCE and effect == Effect.ALLOW and uses >= 1:
        return "used"
    return ""


@dataclass(frozen=True, slots=True)
class Grant:
    id: str
    fingerprint: str
    scope: GrantScope
    effect: Effect = Effect.ALLOW
    session_id: str = ""
    created_at: float = 0.0
    expires_at: float | None = None
    uses: int = 0
    last_used_at: float | None = None
    revoked_at: float | None = None
    note: str = ""

    def applies(self, fingerprint: str, session_id: str, now: float) -> bool:
        if self.fingerprint != fingerprint or self.ended(now):
            return False
        return not (self.scope is GrantScope.SESSION and (not session_id or self.session_id != session_id))

    def ended(self, now: float) -> str:
        """Why it no longer applies at ``now`` (:func:`ended`), or ``""`` while it does."""
        return ended(self.scope, self.effect, self.uses, self.expires_at, self.revoked_at, now)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "fingerprint": self.fingerprint,
            "scope": self.scope.value,
            "effect": self.effect.value,
            "session_id": self.session_id,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "uses": self.uses,
            "last_used_at": self.last_used_at,
            "revoked_at": self.revoked_at,
            "note": self.note,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Grant:
        return cls(
            id=str(d["id"]),
            fingerprint=str(d["fingerprint"]),
            scope=GrantScope(d["scope"]),
            effect=Effect(d.get("effect", "allow")),
            session_id=str(d.get("session_id", "")),
            created_at=float(d.get("created_at", 0.0)),
            expires_at=d.get("expires_at"),
            uses=int(d.get("uses", 0)),
            last_used_at=d.get("last_used_at"),
            revoked_at=d.get("revoked_at"),
            note=str(d.get("note", "")),
        )


def matching(
    grants: list[Grant] | tuple[Grant, ...], fingerprint: str, session_id: str, now: float
) -> tuple[Grant | None, Grant | None]:
    """The deny-rule and the best allow grant that apply, either possibly None."""
    deny: Grant | None = None
    allow: Grant | None = None
    # Most grants name another fingerprint: a comparison each, before the full test.
    for g in [g for g in grants if g.fingerprint == fingerprint]:
        if not g.applies(fingerprint, session_id, now):
            continue
        if g.effect is Effect.DENY:
            deny = deny or g
        elif allow is None or _PRIORITY[g.scope] < _PRIORITY[allow.scope]:
            allow = g
    return deny, allow
