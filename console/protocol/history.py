"""The history's vocabulary as the protocol names it: event kinds, verdicts, sources."""

from __future__ import annotations

KINDS = (
    "request",
    "decision",
    "outcome",
    "file_event",
    "grant",
    "grant_revoked",
    "grant_used",
    "daemon",
    "tripwire",
    "tripwire_resolved",
    "connection",
    "tripwire_reverted",
    "tripwire_thawed",
)
# The tripwire's own rows: an item raised, answered, its file put back, its session
# resumed by someone other than the operator (and stopped again).
TRIPWIRE_KINDS = ("tripwire", "tripwire_resolved", "tripwire_reverted", "tripwire_thawed")
VERDICTS = ("allow", "deny")
SOURCES = (
    "operator",
    "policy",
    "grant",
    "timeout",
    "cancel",
    "shutdown",
    "store",
    # the egress broker's own refusals (console/daemon/egress/): by address, by resolution
    "address",
    "resolver",
)

# What each name of `--kind` / `kind:` covers (protected changes are the history's file
# events). "all" is the default everywhere: the CLI's and the console's history alike.
KIND_GROUPS = {
    "decision": ("decision",),
    "protected": ("file_event",),
    "tripwire": TRIPWIRE_KINDS,
    "network": ("connection",),
    "all": ("decision", "file_event", *TRIPWIRE_KINDS, "connection"),
}
GROUP_WORDS = {
    "decision": "decisions",
    "protected": "protected changes",
    "tripwire": "tripwires",
    "network": "connections",
    "all": "everything",  # it is: decisions, protected changes, tripwires and connections
}
