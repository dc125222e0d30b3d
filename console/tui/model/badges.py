"""Escalation badges: the one-glance summary of what a request may do beyond the sandbox."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from console.protocol.pending import DiffLine, PendingItem


class BadgeKind(StrEnum):
    UNRESTRICTED = "unrestricted"
    PROTECTED = "protected"
    WORKSPACE = "workspace"
    OUTSIDE = "outside"
    NETWORK = "network"
    ENVIRONMENT = "environment"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Badge:
    kind: BadgeKind
    label: str


# Loudest first: this is the order badges are shown in.
_LABELS = {
    BadgeKind.UNRESTRICTED: "UNRESTRICTED",
    BadgeKind.PROTECTED: "PROTECTED",
    BadgeKind.WORKSPACE: "NEW-WS",
    BadgeKind.OUTSIDE: "WRITE-OUT",
    BadgeKind.NETWORK: "NET",
    BadgeKind.ENVIRONMENT: "ENV",
    BadgeKind.OTHER: "ESC",
}


def _inside(path: str, root: str) -> bool:
    root = root.rstrip("/")
    return path == root or path.startswith(root + "/")


def badge_kind(escalation: DiffLine, workspace_root: str) -> BadgeKind:
    kind = escalation.kind
    scope = escalation.scope or ""
    if escalation.code == "new_workspace":
        return BadgeKind.WORKSPACE
    if kind == "unrestricted":
        return BadgeKind.UNRESTRICTED
    if kind == "protected_metadata":
        return BadgeKind.PROTECTED
    if kind == "workspace_write":
        if "protected" in escalation.reason:
            return BadgeKind.PROTECTED
        if scope and not _inside(scope, workspace_root):
            return BadgeKind.OUTSIDE
        return BadgeKind.OTHER
    if kind == "external_network":
        return BadgeKind.NETWORK
    if kind == "environment":
        return BadgeKind.ENVIRONMENT
    return BadgeKind.OTHER


def badges(item: PendingItem) -> list[Badge]:
    """Badges for a pending request, loudest first, one per kind."""
    root = item.operation.workspace_root
    kinds = {badge_kind(e, root) for e in item.evaluation.escalations}
    return [Badge(k, _LABELS[k]) for k in BadgeKind if k in kinds]


# The approvals that need more than one key: what typing the word confirms.
_CONFIRM = {
    BadgeKind.UNRESTRICTED: (
        "unrestricted",
        "It runs outside the sandbox with every power of your account: it can write protected "
        "paths, read your home, reach the network.",
    ),
    BadgeKind.PROTECTED: (
        "protected",
        "It changes a protected path (git hooks, .env, keys, agent settings): code or secrets "
        "that outlive this request.",
    ),
    BadgeKind.WORKSPACE: (
        "workspace",
        "It asks for a workspace you have not trusted: approving lets agents read and write it.",
    ),
}


def confirmation(item: PendingItem) -> tuple[str, str] | None:
    """(the word to type, the risk in one sentence) for a dangerous request, else None."""
    kinds = {b.kind for b in badges(item)}
    for kind, needed in _CONFIRM.items():
        if kind in kinds:
            return needed
    return None
