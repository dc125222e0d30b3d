"""A tripwire item: a session stopped (or an exited writer reported) for a protected
change, until the operator answers. Its state is a closed set, so every answer and
every view goes through the same names (docs/tripwire.md)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import msgspec

from console.protocol.tripwire import TripwireNotice
from console.sessions.writers import OPEN_FOR_WRITE
from console.watch import display_path


class TripwireState(StrEnum):
    PAUSED = "paused"  # the session is stopped, waiting for the operator
    EXITED = "exited"  # the writer had ended already: an alert to acknowledge
    RESUMED = "resumed"
    KILLED = "killed"
    KEPT = "kept"  # kept paused: still stopped, no longer asking
    DISMISSED = "dismissed"  # an exited writer's item, acknowledged


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

    @property
    def open(self) -> bool:
        return self.state in (TripwireState.PAUSED, TripwireState.EXITED)

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
        summary = f"session {self.session} modified {what}"
        if self.state is TripwireState.EXITED or (
            self.state is TripwireState.DISMISSED and self.stopped is None
        ):
            summary = f"session {self.session} (exited) modified {what}"
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
            "summary": summary,
        }
