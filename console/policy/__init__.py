"""Policy: the sandbox ceiling, capability diffs, grants and evaluation (pure).

The names below load from their modules when first read (console/contract/lazy.py): a
module that needs only grants (the protocol's grant objects, so every CLI start) does not
pay for the policy file's reader and the evaluator.
"""

from console.contract.lazy import lazy_exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
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

lazy_exports(
    __name__,
    {
        "config": (
            "ApprovalMode",
            "NetworkMode",
            "PolicyConfig",
            "PolicyError",
            "SandboxMode",
            "Tripwire",
            "load_policy",
            "policy_from_toml",
        ),
        "diff": ("CapabilityDiff", "capability_diff", "ceiling"),
        "evaluate": ("Authorization", "Decision", "Reason", "Verdict", "authorize", "evaluate"),
        "grants": ("Effect", "Grant", "GrantScope"),
    },
)

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
