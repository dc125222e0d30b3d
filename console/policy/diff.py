"""The ceiling and the capability diff the operator sees.

The ceiling is what the sandbox grants without asking. The diff splits what an
operation requests into what stays within the ceiling and the escalations beyond it,
each with a plain reason, and lists the part of the ceiling the operation leaves
unused — what the sandbox would still forbid is everything else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, NamedTuple

from console.contract.capabilities import Capability, CapabilityKind, normalize_capabilities
from console.contract.operation import Operation, is_within
from console.contract.workspace import is_trusted
from console.policy.agent_settings import agent_settings
from console.policy.config import NetworkMode, PolicyConfig, SandboxMode
from console.policy.patterns import ProtectedPaths

K = CapabilityKind

# What the sandbox still forbids, whatever the ceiling: shown so the operator knows the
# limits an approval does not lift.
SANDBOX_FORBIDS: dict[CapabilityKind, str] = {
    K.FILESYSTEM_READ: (
        "nothing else of the host is there: other projects, /srv, /var, /run and its sockets, "
        "the rest of your home, the console's state"
    ),
    K.PROTECTED_METADATA: "protected paths stay read-only",
    K.EXTERNAL_NETWORK: "no network beyond an isolated loopback (with network: the egress broker, by domain)",
    K.HOST_VISIBLE_BINDING: "no ports reachable from the host",
    K.PROCESS_CONTROL: "no signals or tracing outside its own process tree",
    K.ENVIRONMENT: "only an allowlisted environment is inherited",
    K.WORKSPACE_WRITE: "no writes outside the workspace and approved write dirs",
}


# What an approved ``unrestricted`` operation can do that a sandboxed one cannot: all of
# it. Shown instead of SANDBOX_FORBIDS, which would otherwise read as still in force.
UNRESTRICTED_LIFTS: dict[CapabilityKind, str] = {
    K.PROTECTED_METADATA: "it can write protected paths (.git/hooks, .env, keys, .claude/)",
    K.WORKSPACE_WRITE: "it can write anywhere your account can, not only the workspace",
    K.FILESYSTEM_READ: "it can read your home and secrets (~/.ssh, tokens, the console's state)",
    K.EXTERNAL_NETWORK: "it has the network",
    K.PROCESS_CONTROL: "it can signal and trace your other processes",
    K.ENVIRONMENT: "it inherits the daemon's whole environment",
}


# The reason code of the escalation a workspace outside the trusted roots is.
NEW_WORKSPACE = "new_workspace"


class DiffItem(NamedTuple):
    capability: Capability
    reason: str
    code: str = ""  # a stable machine-readable code, where one kind has several causes

    def to_dict(self) -> dict[str, Any]:
        out = {**self.capability.to_dict(), "reason": self.reason}
        if self.code:
            out["code"] = self.code
        return out


def new_workspace_reason(root: str) -> str:
    return f"new workspace: {root} is not among your trusted workspaces; approve always to trust it"


def trusted_roots(config: PolicyConfig, trusted: Iterable[str] | None) -> tuple[str, ...]:
    """The trusted roots an evaluation uses: the caller's (the daemon's: the policy's and
    the operator's list, canonical), or else the policy's own ``workspaces``."""
    return tuple(config.workspaces if trusted is None else trusted)


@dataclass(frozen=True)
class CapabilityDiff:
    requested: tuple[Capability, ...]
    ceiling: tuple[Capability, ...]
    within: tuple[DiffItem, ...]
    escalations: tuple[DiffItem, ...]
    unused: tuple[DiffItem, ...]
    forbidden: tuple[DiffItem, ...]
    # Non-empty only when approving would lift the sandbox (an ``unrestricted`` escalation).
    lifted: tuple[DiffItem, ...] = ()

    @cached_property
    def as_dict(self) -> dict[str, Any]:
        """The JSON form, built once (a decision is written, sent and shown): do not mutate."""
        return self.to_dict()

    def to_dict(self) -> dict[str, Any]:
        return {
            "requested": [c.to_dict() for c in self.requested],
            "ceiling": [c.to_dict() for c in self.ceiling],
            "within": [i.to_dict() for i in self.within],
            "escalations": [i.to_dict() for i in self.escalations],
            "unused": [i.to_dict() for i in self.unused],
            "forbidden": [i.to_dict() for i in self.forbidden],
            "lifted": [i.to_dict() for i in self.lifted],
        }


@lru_cache(maxsize=256)
def ceiling(config: PolicyConfig, workspace_root: str) -> tuple[Capability, ...]:
    if config.sandbox is SandboxMode.DANGER_FULL_ACCESS:
        return (Capability(K.UNRESTRICTED),)
    caps = [
        Capability(K.FILESYSTEM_READ),
        Capability(K.PROCESS_SPAWN),
        Capability(K.ISOLATED_LOOPBACK),
    ]
    if config.sandbox is SandboxMode.WORKSPACE_WRITE:
        caps.append(Capability(K.WORKSPACE_WRITE, workspace_root))
    if config.network is NetworkMode.ANY:
        caps.append(Capability(K.EXTERNAL_NETWORK))
    return normalize_capabilities(caps)


def _relative(path: str, root: str) -> str | None:
    if not is_within(path, root):
        return None
    return "." if path == root else path[len(root.rstrip("/")) + 1 :]


def requested(op: Operation, protected: ProtectedPaths) -> tuple[Capability, ...]:
    """The operation's own request, plus `protected_metadata` for writes into protected
    paths and into agents' settings in the home (console/policy/agent_settings.py)."""
    caps = list(op.requested_capabilities())
    for cap in list(caps):
        if cap.kind is K.WORKSPACE_WRITE and cap.scope:
            rel = _relative(cap.scope, op.workspace_root)
            if (rel not in (None, ".") and protected.is_protected(rel)) or (
                rel is None and agent_settings(cap.scope)
            ):
                caps.append(Capability(K.PROTECTED_METADATA, cap.scope))
    return normalize_capabilities(caps)


class _Ceiling(NamedTuple):
    """A ceiling's facts, worked out once per ceiling rather than once per capability."""

    caps: tuple[Capability, ...]
    unrestricted: bool
    write_limits: tuple[str, ...]
    unscoped: frozenset[CapabilityKind]


@lru_cache(maxsize=256)
def _facts(ceil: tuple[Capability, ...]) -> _Ceiling:
    return _Ceiling(
        ceil,
        any(c.kind is K.UNRESTRICTED for c in ceil),
        tuple(c.scope for c in ceil if c.kind is K.WORKSPACE_WRITE),
        frozenset(c.kind for c in ceil if not c.scope),
    )


def _covered(cap: Capability, ceil: _Ceiling, op: Operation, protected: ProtectedPaths) -> bool:
    if ceil.unrestricted:
        return True
    if cap.kind is K.WORKSPACE_WRITE:
        scope = cap.scope or op.workspace_root
        if not any(is_within(scope, limit) for limit in ceil.write_limits):
            return False
        rel = _relative(scope, op.workspace_root)
        return rel in (None, ".") or not protected.is_protected(rel)
    return cap.kind in ceil.unscoped or cap in ceil.caps


def _why_escalation(cap: Capability, op: Operation, config: PolicyConfig, protected: ProtectedPaths) -> str:
    kind = cap.kind
    if kind is K.WORKSPACE_WRITE:
        scope = cap.scope or op.workspace_root
        if config.sandbox is SandboxMode.READ_ONLY:
            return "writes, but the sandbox is read-only"
        rel = _relative(scope, op.workspace_root)
        if rel is None:
            return f"writes outside the workspace: {scope}"
        pattern = protected.match(rel)
        return f"writes into a protected path ({pattern})" if pattern else "writes inside the workspace"
    if kind is K.PROTECTED_METADATA:
        return "may change protected paths (hooks, git config, env files, keys)"
    if kind is K.EXTERNAL_NETWORK:
        return "reaches the network; the sandbox allows none"
    if kind is K.UNRESTRICTED:
        return "runs outside the sandbox with every power the operator's account has"
    if kind is K.ENVIRONMENT:
        target = cap.scope or "the environment"
        return f"overrides {target}, which changes what code runs or how"
    if kind is K.PROCESS_CONTROL:
        return "may signal or trace processes outside its own tree"
    if kind is K.HOST_VISIBLE_BINDING:
        return "opens a port the host can reach"
    if kind is K.ISOLATED_LOOPBACK:
        return "uses a loopback interface"
    return "beyond what the sandbox grants"


def read_scope(config: PolicyConfig) -> str:
    """What a sandboxed command can read, for the request's detail (console/sandbox/surface.py)."""
    named = list(config.readable[:8])
    more = ", …" if len(config.readable) > 8 else ""
    tail = f"; and the policy's readable: {', '.join(named)}{more}" if named else ""
    return (
        "reads only the system (/usr, /etc without its root-only files, /opt), the workspace, the "
        f"toolchains on the sandbox's PATH (daemon status lists them){tail}"
    )


_WITHIN_REASON: dict[CapabilityKind, str] = {
    K.FILESYSTEM_READ: "reads only the system, the workspace, the toolchains and the policy's readable",
    K.PROCESS_SPAWN: "running a program is what was asked",
    K.WORKSPACE_WRITE: "writes inside the workspace are allowed by the sandbox",
    K.EXTERNAL_NETWORK: "the policy allows network access",
    K.ISOLATED_LOOPBACK: "a private loopback exists inside the sandbox",
}


@lru_cache(maxsize=1024)
def _forbidden(ceil: tuple[Capability, ...], asked: frozenset[CapabilityKind]) -> tuple[DiffItem, ...]:
    if any(c.kind is K.UNRESTRICTED for c in ceil):
        return ()
    ceiling_kinds = {c.kind for c in ceil}
    return tuple(
        DiffItem(Capability(kind), reason)
        for kind, reason in SANDBOX_FORBIDS.items()
        # Read and write stay listed: an approval lifts one scope, never the whole host.
        if kind in (K.WORKSPACE_WRITE, K.FILESYSTEM_READ) or (kind not in ceiling_kinds and kind not in asked)
    )


# The diff depends only on the fields that make the request (`requested_capabilities`'s
# inputs and the workspace) and on the policy, not on the command: an agent's operations
# differ in their arguments far more often than in the powers they ask for, so distinct
# operations reuse it too. Keyed by the config's identity (the daemon holds one per
# policy load; hashing a config costs more than the lookup), with the config kept in the
# entry so an id is never reused.
_DIFFS: dict[tuple[Any, ...], tuple[PolicyConfig, CapabilityDiff]] = {}
_DIFFS_MAX = 4096


def _diff_key(op: Operation, config: PolicyConfig, known: bool) -> tuple[Any, ...]:
    """Everything :func:`_compute_diff` reads of ``op``: change one and the key changes."""
    return (
        op.workspace_root,
        op.workspace_access,
        op.write_dirs,
        op.network,
        op.env,
        op.capabilities,
        id(config),
        known,
    )


def capability_diff(
    op: Operation, config: PolicyConfig, trusted: Iterable[str] | None = None
) -> CapabilityDiff:
    """The diff under ``config``, with the escalation ``new_workspace`` when the workspace
    is under none of the ``trusted`` roots (None: the policy's ``workspaces``)."""
    known = is_trusted(op.workspace_root, trusted_roots(config, trusted))
    key = _diff_key(op, config, known)
    found = _DIFFS.get(key)
    if found is not None and found[0] is config:
        return found[1]
    if len(_DIFFS) >= _DIFFS_MAX:
        _DIFFS.clear()
    diff = _compute_diff(op, config, known)
    _DIFFS[key] = (config, diff)
    return diff


def _compute_diff(op: Operation, config: PolicyConfig, trusted_workspace: bool = True) -> CapabilityDiff:
    protected = config.protected_paths
    ceil = ceiling(config, op.workspace_root)
    facts = _facts(ceil)
    req = requested(op, protected)
    within: list[DiffItem] = []
    escalations: list[DiffItem] = []
    for cap in req:
        if _covered(cap, facts, op, protected):
            if cap.kind is K.FILESYSTEM_READ and not cap.scope and not facts.unrestricted:
                within.append(DiffItem(cap, read_scope(config)))
                continue
            within.append(DiffItem(cap, _WITHIN_REASON.get(cap.kind, "the policy grants it without asking")))
        else:
            escalations.append(DiffItem(cap, _why_escalation(cap, op, config, protected)))
    if not trusted_workspace:
        # Whatever the ceiling (even unrestricted): the workspace itself is the operator's
        # to give, since the sandbox makes it readable and, for writes, writable.
        cap = Capability(K.FILESYSTEM_READ, op.workspace_root)
        req = normalize_capabilities([*req, cap])
        escalations.insert(0, DiffItem(cap, new_workspace_reason(op.workspace_root), NEW_WORKSPACE))
    used_kinds = {i.capability.kind for i in within}
    unused = tuple(
        DiffItem(c, "granted by the sandbox, not requested") for c in ceil if c.kind not in used_kinds
    )
    asked = frozenset(i.capability.kind for i in escalations)
    if K.UNRESTRICTED in asked:
        # Nothing stays forbidden: saying "protected paths stay read-only" here would be a lie.
        lifted = tuple(DiffItem(Capability(kind), why) for kind, why in UNRESTRICTED_LIFTS.items())
        return CapabilityDiff(req, ceil, tuple(within), tuple(escalations), unused, (), lifted)
    forbidden = _forbidden(ceil, asked)
    return CapabilityDiff(req, ceil, tuple(within), tuple(escalations), unused, forbidden)
