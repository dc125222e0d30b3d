"""Policy: the sandbox ceiling, capability diffs, grants and evaluation (pure)."""

from console.policy.config import (
    ApprovalMode,
    NetworkMode,
    PolicyConfig,
    PolicyError,
    SandboxMode,
    Tripwire,
    load_policy,
    policy_from_toml,
)
from console.policy.diff import CapabilityDiff, capability_diff, ceiling
from console.policy.evaluate import Authorization, Decision, Reason, Verdict, authorize, evaluate
from console.policy.grants import Effect, Grant, GrantScope

__all__ = [
    "ApprovalMode",
    "Authorization",
    "CapabilityDiff",
    "Decision",
    "Effect",
    "Grant",
    "GrantScope",
    "NetworkMode",
    "PolicyConfig",
    "PolicyError",
    "Reason",
    "SandboxMode",
    "Tripwire",
    "Verdict",
    "authorize",
    "capability_diff",
    "ceiling",
    "evaluate",
    "load_policy",
    "policy_from_toml",
]
