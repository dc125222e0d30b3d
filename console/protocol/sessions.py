"""What a session's wire form (`sessions.list`, `sessions.get`) says beyond its fields,
worded once for every client (the console's list, `agent-console sessions`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def recording_note(session: Mapping[str, Any]) -> str:
    """Why the session's recording is not the whole of its output, or ''. The daemon
    sets the flags the moment they become true, so a client can show them live."""
    if session.get("recording_pruned"):
        return "recording pruned"
    if session.get("recording_truncated"):
        return "recording truncated"
    return ""
