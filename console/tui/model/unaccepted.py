"""History rows the daemon found past its head anchor at start-up, as its status lists them.

Something wrote the history while the daemon was down (docs/security.md): the daemon
does not honour the grants in those rows until the operator accepts them. The console
shows them in the header and says what to do, as `agent-console daemon status` does.
"""

from __future__ import annotations

from console.protocol.results import DaemonStatusResult
from console.protocol.status import IntegrityStatus, StatusHistory


def unaccepted_rows(status: DaemonStatusResult | None) -> list[tuple[int, int]]:
    """The ``(from_seq, to_seq)`` ranges in the status's ``history``; a range that is no
    range of rows (a daemon of another version) is left out."""
    history = status.history if status is not None else None
    if not isinstance(history, StatusHistory):
        return []
    return [(low, high) for low, high in history.unaccepted if 0 < low <= high]


def history_remedy(low: int, high: int) -> str:
    """What the operator is told of one range: what it means and the commands to run."""
    return (
        f"History rows {low}-{high} were found past the head anchor when the daemon started: "
        "something wrote the history while the daemon was down. Their grants are not honoured. "
        f"Review them (agent-console history export | tail), then: "
        f"agent-console history accept --through {high}"
    )


def _integrity(status: DaemonStatusResult | None) -> IntegrityStatus | None:
    check = status.integrity if status is not None else None
    return check if isinstance(check, IntegrityStatus) else None


def integrity_findings(status: DaemonStatusResult | None) -> list[tuple[str, str]]:
    """What the daemon's start-up check of the history found wrong, as ``(what, message)``
    pairs from the status's ``integrity``; a finding that names nothing is skipped."""
    check = _integrity(status)
    return [(f.what, f.message) for f in check.findings if f.what] if check is not None else []


def integrity_progress(status: DaemonStatusResult | None) -> str:
    """``verifying history: 4,096/50,000 rows`` while the full verify runs, else ""."""
    check = _integrity(status)
    if check is None or check.state != "checking":
        return ""
    return f"verifying history: {check.checked:,}/{check.total:,} rows"


def tamper_remedy(what: str, message: str) -> str:
    """What the operator is told of one finding: what was found and what to run."""
    return (
        f"The history does not verify ({what}): {message}. Something changed it outside "
        "agent-console. Details: agent-console history verify; see docs/security.md"
    )
