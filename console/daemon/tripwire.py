"""A tripwire item: a session stopped (or an exited writer reported) for a protected
change, until the operator answers. Its state is a closed set, so every answer and
every view goes through the same names (docs/tripwire.md).

An item keeps what the protected file was before (its baseline: bytes and mode, or
"absent"), so that any answer can put it back (``revert``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgspec

from console.protocol.tripwire import TripwireNotice
from console.sessions.writers import OPEN_FOR_WRITE
from console.watch import display_path
from console.watch.baseline import Previous

# The basis of an item raised for a change whose writer could not be named.
UNKNOWN_WRITER = "writer unknown; live in the workspace"


class TripwireState(StrEnum):
    PAUSED = "paused"  # the session is stopped, waiting for the operator
    EXITED = "exited"  # the writer had ended already: an alert to acknowledge
    RESUMED = "resumed"
    KILLED = "killed"
    KEPT = "kept"  # kept paused: still stopped, no longer asking
    DISMISSED = "dismissed"  # an exited writer's (or an alert's) item, acknowledged
    ALERTED = "alerted"  # nothing could be stopped (no session): an alert to acknowledge or revert


@dataclass
class TripwireItem:
    id: str
    at: float
    session: str
    session_label: str
    workspace_root: str
    path: str
    pattern: str
    kind: str
    diff: str | None
    state: TripwireState = TripwireState.PAUSED
    basis: str = OPEN_FOR_WRITE
    stopped: bool | None = None  # every process confirmed stopped (None: not yet known)
    stop_mode: str = ""
    count: int = 1  # a flood: how many changes under ``path`` (a directory)
    sample: tuple[str, ...] = ()
    operation: str = ""  # the operation that wrote it, or that ran while an unknown writer did
    suspect: bool = False  # stopped because the writer is unknown and it was live in the workspace
    # What each changed path was before (relative path -> its baseline), for a revert.
    restore: dict[str, Previous] = field(default_factory=dict)
    reverted: str = ""  # what the last revert did ("" never reverted)
    thawed: int = 0  # times someone other than the operator resumed it (frozen again each time)

    @property
    def open(self) -> bool:
        return self.state in (TripwireState.PAUSED, TripwireState.EXITED, TripwireState.ALERTED)

    @property
    def revertable(self) -> bool:
        return bool(self.restore)

    def notice(self, wire: dict[str, Any] | None = None) -> TripwireNotice:
        """The item as clients see it (:meth:`to_wire`, typed, or ``wire`` when the caller
        has just made it): converted, so a field its type does not describe is a daemon bug
        caught here."""
        return msgspec.convert(self.to_wire() if wire is None else wire, TripwireNotice)

    def to_wire(self) -> dict[str, Any]:
        """The item as JSON: what the history keeps, and :meth:`notice`'s source."""
        what = display_path(self.path)
        if self.count > 1:
            what = f"{self.count:,} files under {what.rstrip('/')}/"
        return {
            "id": self.id,
            "at": self.at,
            "session": self.session,
            "session_label": self.session_label,
            "workspace_root": self.workspace_root,
            "display_path": display_path(self.path),
            "pattern": self.pattern,
            "change": self.kind,
            "diff": self.diff,
            "state": self.state.value,
            "basis": self.basis,
            "stopped": self.stopped,
            "stop_mode": self.stop_mode,
            "count": self.count,
            "sample": [display_path(p) for p in self.sample],
            "summary": self.summary(what),
            "operation": self.operation,
            "suspect": self.suspect,
            "revertable": self.revertable,
            "reverted": self.reverted,
            "thawed": self.thawed,
        }

    def summary(self, what: str) -> str:
        """One line, as the queue and the history say it: who, what, and whether someone
        other than the operator resumed it."""
        if self.suspect:
            out = (
                f"{what} changed by a writer that could not be named; session {self.session} "
                f"stopped (it was live in the workspace)"
            )
        elif not self.session and self.basis == UNKNOWN_WRITER:
            out = f"{what} changed by a writer that could not be named while operation {self.operation} ran"
        elif not self.session:
            out = f"operation {self.operation} wrote {what}"
        elif self.state is TripwireState.EXITED or (
            self.state is TripwireState.DISMISSED and self.stopped is None
        ):
            out = f"session {self.session} (exited) modified {what}"
        else:
            out = f"session {self.session} modified {what}"
        if self.thawed:
            times = "once" if self.thawed == 1 else f"{self.thawed} times"
            out += f"; resumed by someone other than the operator ({times}), stopped again"
        if self.reverted:
            out += f"; reverted ({self.reverted})"
        return out
