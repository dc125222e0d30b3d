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
)
VERDICTS = ("allow", "deny")
SOURCES = ("operator", "policy", "grant", "timeout", "cancel", "shutdown", "store")
