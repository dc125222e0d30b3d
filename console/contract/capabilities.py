"""The ten capability kinds of the execution contract, and capability values."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple


class CapabilityKind(StrEnum):
    FILESYSTEM_READ = "filesystem_read"
    WORKSPACE_WRITE = "workspace_write"
    PROTECTED_METADATA = "protected_metadata"
    EXTERNAL_NETWORK = "external_network"
    ISOLATED_LOOPBACK = "isolated_loopback"
    HOST_VISIBLE_BINDING = "host_visible_binding"
    PROCESS_SPAWN = "process_spawn"
    PROCESS_CONTROL = "process_control"
    ENVIRONMENT = "environment"
    UNRESTRICTED = "unrestricted"


class Capability(NamedTuple):
    """One power, optionally narrowed by a scope (a path, an env name, a host...).

    An empty scope means "not narrowed". Ordering is (kind, scope), which is the
    canonical order used by fingerprints and diffs. A named tuple because operations
    create several per request on the daemon's hot path.
    """

    kind: CapabilityKind
    scope: str = ""

    def to_dict(self) -> dict[str, Any]:
        if self.scope:
            return {"kind": self.kind.value, "scope": self.scope}
        return {"kind": self.kind.value}

    def label(self) -> str:
        return f"{self.kind.value}({self.scope})" if self.scope else self.kind.value


def normalize_capabilities(
    caps: list[Capability] | tuple[Capability, ...],
) -> tuple[Capability, ...]:
    """Sorted and deduplicated: the one order in which capabilities are compared."""
    return tuple(sorted(set(caps)))
