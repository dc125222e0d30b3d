"""Event frames for tests that play a daemon speaking the protocol, or not quite."""

from __future__ import annotations

# A well-formed ``decided`` event, as the daemon sends it.
DECIDED = {
    "topic": "decided",
    "request_id": "r-1-2",
    "verdict": "deny",
    "source": "timeout",
    "reason": "approval_timeout",
    "queued": True,
}
