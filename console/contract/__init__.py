"""The execution contract: operations, capabilities, fingerprints and outcomes.

Pure data and validation. Nothing here imports Textual, asyncio servers or sqlite3
(tests/project/test_layers.py enforces it); the filesystem is reached only through
:class:`~console.contract.host.Host`.

The names below load from their modules when first read (console/contract/lazy.py): a
module that needs one small part (the protocol's strict JSON, a command's inert text)
does not pay for the operation parser.
"""

from console.contract.lazy import lazy_exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from console.contract.capabilities import Capability, CapabilityKind
    from console.contract.fingerprint import canonical_bytes, fingerprint, parse_fingerprint
    from console.contract.host import Host, OSHost
    from console.contract.operation import (
        Kind,
        Mode,
        Network,
        Operation,
        Origin,
        OutputLimits,
        WorkspaceAccess,
        parse,
    )
    from console.contract.problem import InvalidInput, Problem

lazy_exports(
    __name__,
    {
        "capabilities": ("Capability", "CapabilityKind"),
        "fingerprint": ("canonical_bytes", "fingerprint", "parse_fingerprint"),
        "host": ("Host", "OSHost"),
        "operation": (
            "Kind",
            "Mode",
            "Network",
            "Operation",
            "Origin",
            "OutputLimits",
            "WorkspaceAccess",
            "parse",
        ),
        "problem": ("InvalidInput", "Problem"),
    },
)

__all__ = [
    "Capability",
    "CapabilityKind",
    "Host",
    "InvalidInput",
    "Kind",
    "Mode",
    "Network",
    "OSHost",
    "Operation",
    "Origin",
    "OutputLimits",
    "Problem",
    "WorkspaceAccess",
    "canonical_bytes",
    "fingerprint",
    "parse",
    "parse_fingerprint",
]
