"""Policy evaluation: one operation, the operator's grants, a verdict.

Order: operator deny-rules, then grants, then the approval mode. The reason codes are
stable (docs/policy.md lists them); tools and tests match on them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from console.contract.operation import Operation
from console.policy.config import ApprovalMode, PolicyConfig
from console.policy.diff import CapabilityDiff, capability_diff
from console.policy.grants import Grant, GrantScope, matching
from console.policy.readonly import Resolver, is_read_only_command
from console.policy.rules import matching_rule


class Verdict(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    REVIEW = "review"


class Reason(StrEnum):
    DENY_RULE = "deny_rule"
    GRANT_ONCE = "grant_once"
    GRANT_SESSION = "grant_session"
    GRANT_ALWAYS = "grant_always"
    WITHIN_CEILING = "within_ceiling"
    READ_ONLY_COMMAND = "read_only_command"
    ESCALATION_REQUIRES_APPROVAL = "escalation_requires_approval"
    ESCALATION_DENIED_BY_POLICY = "escalation_denied_by_policy"
    UNTRUSTED_REQUIRES_APPROVAL = "untrusted_requires_approval"
    RULE = "rule"


_GRANT_REASON = {
    GrantScope.ONCE: Reason.GRANT_ONCE,
    GrantScope.SESSION: Reason.GRANT_SESSION,
    GrantScope.ALWAYS: Reason.GRANT_ALWAYS,
    GrantScope.RULE: Reason.RULE,
}


@dataclass(frozen=True, slots=True)
class Authorization:
    """Permission to run exactly one fingerprint in one workspace."""

    fingerprint: str
    workspace_root: str
    source: str
    grant_id: str = ""

    def permits(self, op: Operation) -> bool:
        return op.fingerprint == self.fingerprint and op.workspace_root == self.workspace_root

    def to_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "workspace_root": self.workspace_root,
            "source": self.source,
            "grant_id": self.grant_id,
        }


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str
    fingerprint: str
    diff: CapabilityDiff
    authorization: Authorization | None = None
    grant: Grant | None = None

    def to_dict(self) -> dict[str, Any]:
        diff = self.diff.as_dict
        return {
            "verdict": self.verdict.value,
            "reason": self.reason,
            "fingerprint": self.fingerprint,
            "requested": diff["requested"],
            "ceiling": diff["ceiling"],
            "escalations": diff["escalations"],
            "within": diff["within"],
            "unused": diff["unused"],
            "forbidden": diff["forbidden"],
            "lifted": diff["lifted"],
            "authorization": self.authorization.to_dict() if self.authorization else None,
            "grant_id": self.grant.id if self.grant else None,
        }


def authorize(op: Operation, source: str, grant_id: str = "") -> Authorization:
    return Authorization(op.fingerprint, op.workspace_root, source, grant_id)


def evaluate(
    op: Operation,
    config: PolicyConfig,
    grants: list[Grant] | tuple[Grant, ...] = (),
    now: float = 0.0,
    *,
    trusted: Iterable[str] | None = None,
    resolve_path: Resolver | None = None,
) -> Decision:
    """The verdict on ``op``. ``trusted`` are the operator's trusted workspace roots
    (canonical); None means the policy's ``workspaces``. A workspace under none of them
    is the escalation ``new_workspace``: never allowed without the operator.
    ``resolve_path`` canonicalizes a path with symlinks followed, for the read-only set's
    argument check (without it, commands with path arguments are not read-only)."""
    fp = op.fingerprint
    diff = capability_diff(op, config, trusted)

    def decide(verdict: Verdict, reason: Reason, grant: Grant | None = None) -> Decision:
        auth = (
            authorize(op, "grant" if grant else "policy", grant.id if grant else "")
            if verdict is Verdict.ALLOW
            else None
        )
        return Decision(verdict, reason._value_, fp, diff, auth, grant)  # value, as an attribute

    deny_rule, allow_grant = matching(grants, fp, op.session_id, now)
    if allow_grant is not None and op.unbound and allow_grant.scope is not GrantScope.ONCE:
        # Content this operation runs is not bound by its fingerprint, so a standing
        # grant could carry over to other code: only a once grant applies.
        once = [g for g in grants if g.scope is GrantScope.ONCE]
        allow_grant = matching(once, fp, op.session_id, now)[1]
    if deny_rule is not None:
        return decide(Verdict.DENY, Reason.DENY_RULE, deny_rule)
    if allow_grant is not None:
        return decide(Verdict.ALLOW, _GRANT_REASON[allow_grant.scope], allow_grant)

    escalates = bool(diff.escalations)
    if config.approval is ApprovalMode.UNTRUSTED:
        if not escalates and is_read_only_command(op, resolve_path):
            return decide(Verdict.ALLOW, Reason.READ_ONLY_COMMAND)
        # A rule widens an approval past one fingerprint only within the ceiling.
        rule = None if escalates else matching_rule(grants, op, now)
        if rule is not None:
            return decide(Verdict.ALLOW, Reason.RULE, rule)
        return decide(Verdict.REVIEW, Reason.UNTRUSTED_REQUIRES_APPROVAL)
    if not escalates:
        return decide(Verdict.ALLOW, Reason.WITHIN_CEILING)
    if config.approval is ApprovalMode.NEVER:
        return decide(Verdict.DENY, Reason.ESCALATION_DENIED_BY_POLICY)
    return decide(Verdict.REVIEW, Reason.ESCALATION_REQUIRES_APPROVAL)
