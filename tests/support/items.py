"""Pending and tripwire items for the console's tests: a test writes the fields it is
about, as the daemon's JSON; :func:`pending_item` and :func:`tripwire_notice` fill the
rest with empty values and give the Struct the console holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from console.protocol.pending import PendingItem
from console.protocol.tripwire import TripwireNotice

_OPERATION: dict[str, Any] = {
    "origin": "interactive_command",
    "mode": "captured",
    "kind": "shell",
    "tool": "",
    "executable": "",
    "args": [],
    "workspace_root": "",
    "cwd": ".",
    "env": {},
    "stdin": "",
    "timeout_ms": 120_000,
    "output": {"capture_bytes": 65536, "max_bytes": 8 << 20},
    "workspace_access": "read_only",
    "write_dirs": [],
    "network": "none",
    "capabilities": [],
    "justification": "",
    "session_id": "",
}
_LINES = ("escalations", "within", "unused", "forbidden", "lifted")


def pending_item(item: Mapping[str, Any]) -> PendingItem:
    """``item`` (a dict as ``pending.list`` gives it, whole or in part) as a PendingItem."""
    evaluation = dict(item.get("evaluation") or {})
    for key in _LINES:
        evaluation[key] = [{"reason": "", **line} for line in evaluation.get(key, [])]
    whole = {
        "request_id": "",
        "fingerprint": "",
        "submitted_at": 0.0,
        "deadline": 0.0,
        "peer_pid": 0,
        "agent_id": "",
        "session_id": "",
        "command": "",
        "content": [],
        "unbound": [],
        "supersedes": "",
        "proposed": None,
        **item,
        "operation": {**_OPERATION, **(item.get("operation") or {})},
        "evaluation": {"verdict": "review", "reason": "", "requested": [], "ceiling": [], **evaluation},
    }
    return msgspec.convert(whole, PendingItem)


def tripwire_notice(item: Mapping[str, Any]) -> TripwireNotice:
    """``item`` (a tripwire item as ``tripwire.list`` gives it, whole or in part) as a
    TripwireNotice: a paused session's, by default."""
    whole = {
        "id": "",
        "at": 0.0,
        "session": "",
        "session_label": "",
        "workspace_root": "",
        "display_path": "",
        "pattern": "",
        "change": "modified",
        "diff": None,
        "state": "paused",
        "basis": "",
        "stopped": True,
        "stop_mode": "",
        "count": 1,
        "sample": [],
        "summary": "",
        **item,
    }
    return msgspec.convert(whole, TripwireNotice)
