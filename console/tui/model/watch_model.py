"""What the console holds of the workspace watcher: recent events, roots' health, tripwire items.

No Textual here, so the rules are testable on their own. Events are the daemon's
watch entries (:class:`~console.protocol.watch.WatchEntry`); they arrive in batches, newest
last, and are kept newest first, bounded like the daemon's own memory of them. The
protected-only view is kept alongside rather than recomputed, so a filter toggle over
10,000 rows is a list swap, not a scan per frame.

A tripwire item (``tripwire = "pause"``) joins the approval queue as a queue item of
its own ``kind``: the queue model needs only ``request_id``, ``command`` and
``session_id``; everything else stays in ``tripwire``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from console.protocol.results import DaemonStatusResult
from console.protocol.tripwire import TripwireNotice
from console.protocol.watch import WatchEntry, WatchStatus

KEEP = 10_000


class WatchEvents:
    """Recent file events, newest first, with a protected-only view kept in step."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._all: list[WatchEntry] = []
        self._protected: list[WatchEntry] = []
        self.protected_only = False
        self._seqs: set[int] = set()
        self.loud_added = 0  # loud protected events in the last ``add`` (the header's badge)

    def __len__(self) -> int:
        return len(self._protected if self.protected_only else self._all)

    def __getitem__(self, index: int) -> WatchEntry:
        return (self._protected if self.protected_only else self._all)[index]

    @property
    def total(self) -> int:
        return len(self._all)

    @property
    def protected_total(self) -> int:
        return len(self._protected)

    def replace(self, newest_first: Iterable[WatchEntry]) -> None:
        """Start over from ``watch.recent`` (newest first).

        Events that arrived live while the listing was on its way, newer than anything
        in it, are kept on top.
        """
        recent = list(newest_first)
        newest = max((e.seq for e in recent), default=-1)
        later = [e for e in self._all if e.seq > newest]
        self._all, self._protected, self._seqs = [], [], set()
        self.add(recent[::-1] + later[::-1])

    def add(self, batch: Sequence[WatchEntry]) -> tuple[int, int]:
        """Add a batch (oldest first, as the daemon sends it).

        Returns how many rows went on top of (all, protected): the view keeps the
        operator's selection by moving the cursor down as much.
        """
        self.loud_added = 0
        updates = {e.seq: e for e in batch if e.flood and e.seq in self._seqs}
        if updates:  # a flood's count grew: its row is updated where it stands
            self._all = [updates.get(e.seq, e) for e in self._all]
            self._protected = [updates.get(e.seq, e) for e in self._protected]
        fresh = [e for e in batch if e.seq not in self._seqs]
        if not fresh:
            return 0, 0
        self._seqs.update(e.seq for e in fresh)
        newest_first = fresh[::-1]
        protected = [e for e in newest_first if e.protected]
        # Quiet ones (editor files, sample hooks) are listed but not counted as alerts.
        self.loud_added = sum(1 for e in protected if not e.quiet)
        self._all[:0] = newest_first
        self._protected[:0] = protected
        for gone in self._all[self.keep :]:
            self._seqs.discard(gone.seq)
        del self._all[self.keep :]
        del self._protected[self.keep :]
        return len(newest_first), len(protected)


def attribution(event: WatchEntry) -> list[tuple[str, str, str]]:
    """(kind, id, label) of who was active in the workspace; empty means unattributed."""
    return [(a.kind, a.id, a.label if isinstance(a.label, str) else "") for a in event.attribution]


def sessions_of(event: WatchEntry) -> set[str]:
    return {ident for kind, ident, _ in attribution(event) if kind == "session"}


# ---------------------------------------------------------------------- roots' health


@dataclass(frozen=True, slots=True)
class Degraded:
    root: str
    codes: tuple[str, ...]
    message: str


def degraded_roots(watch_status: WatchStatus | None) -> list[Degraded]:
    """Roots whose watcher is degraded (changes still reported, by polling or rescans)."""
    if watch_status is None:
        return []
    return [
        Degraded(r.root, tuple(x.code for x in r.reasons), r.reasons[0].message if r.reasons else "")
        for r in watch_status.roots
        if r.state == "degraded"
    ]


def sandbox_pill(status: DaemonStatusResult) -> tuple[str, str]:
    """The header badge for the sandbox probe: (label, variant)."""
    summary = status.sandbox.summary
    probe = status.sandbox.probe
    if not probe:  # still probing (null), or an agent's view (absent)
        return (f"sandbox: {summary}" if summary else "sandbox: probing", "muted")
    if not probe.available:
        if summary.startswith("UNAVAILABLE"):
            return f"SANDBOX {summary}", "error"
        return f"SANDBOX UNAVAILABLE: {summary or probe.reason}", "error"
    if not probe.network_isolated:
        return f"sandbox: {summary}", "warning"
    return f"sandbox: {summary}", "muted"


# ---------------------------------------------------------------------- tripwire items in the queue


@dataclass(frozen=True, slots=True)
class TripwireEntry:
    """A tripwire item as the pending queue holds it, beside the requests: answered with
    resume, kill or keep paused, never approved."""

    tripwire: TripwireNotice
    host: str = ""  # the host whose daemon paused the session ("" with one host)

    @property
    def request_id(self) -> str:  # the queue's key, with the host
        return self.tripwire.id

    @property
    def command(self) -> str:  # what the queue's row says
        return self.tripwire.summary

    @property
    def session_id(self) -> str:  # the terminal session it stopped
        return self.tripwire.session

    @property
    def submitted_at(self) -> float:
        return self.tripwire.at


# Answers to a tripwire item: (tripwire.resolve action, past tense for the status line).
ANSWERS = {"resume": "resumed", "kill": "killed", "keep_paused": "kept paused"}
