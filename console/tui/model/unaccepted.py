"""History rows the daemon found past its head anchor at start-up, as its status lists them.

Something wrote the history while the daemon was down (docs/security.md): the daemon
does not honour the grants in those rows until the operator accepts them. The console
shows them in the header and says what to do, as `agent-console daemon status` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def unaccepted_rows(status: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The ``(from_seq, to_seq)`` ranges in ``status["history"]["unaccepted"]``; anything
    else there (a daemon of another version) is no range."""
    history = status.get("history")
    ranges = history.get("unaccepted") if isinstance(history, Mapping) else None
    if not isinstance(ranges, list):
        return []
    out = []
    for r in ranges:
        if (
            isinstance(r, list | tuple)
            and len(r) == 2
            and all(type(n) is int and n > 0 for n in r)
            and r[0] <= r[1]
        ):
            out.append((r[0], r[1]))
    return out


def history_remedy(low: int, high: int) -> str:
    """What the operator is told of one range: what it means and the commands to run."""
    return (
        f"History rows {low}-{high} were found past the head anchor when the daemon started: "
        "something wrote the history while the daemon was down. Their grants are not honoured. "
        f"Review them (agent-console history export | tail), then: "
        f"agent-console history accept --through {high}"
    )


def integrity_findings(status: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the daemon's start-up check of the history found wrong, as ``(what, message)``
    pairs from ``status["integrity"]["findings"]``; anything malformed is skipped."""
    check = status.get("integrity")
    found = check.get("findings") if isinstance(check, Mapping) else None
    if not isinstance(found, list):
        return []
    return [
        (str(f.get("what", "")), str(f.get("message", "")))
        for f in found
        if isinstance(f, Mapping) and f.get("what")
    ]


def integrity_progress(status: Mapping[str, Any]) -> str:
    """``verifying history: 4,096/50,000 rows`` while the full verify runs, else ""."""
    check = status.get("integrity")
    if not isinstance(check, Mapping) or check.get("state") != "checking":
        return ""
    checked, total = check.get("checked"), check.get("total")
    if type(checked) is not int or type(total) is not int:
        return "verifying history"
    return f"verifying history: {checked:,}/{total:,} rows"


def tamper_remedy(what: str, message: str) -> str:
    """What the operator is told of one finding: what was found and what to run."""
    return (
        f"The history does not verify ({what}): {message}. Something changed it outside "
        "agent-console. Details: agent-console history verify; see docs/security.md"
    )
