"""Who was active in a workspace at a given time.

The kernel does not say which process wrote a file (fanotify could, but needs
CAP_SYS_ADMIN), so a change is attributed to every session and running operation whose
workspace overlaps the changed workspace (the same root, or one inside the other) and
that was active when the change happened. Two sessions in one workspace therefore both
get the change; two sessions in two separate workspaces never share one.

Ended entries are kept for ``keep_ended_s`` so that an event seen after a short-lived
operation finished still finds it; an entry counts from ``began - early_s`` (the kernel
stamps ctime from a coarse clock that can lag ``time.time()`` by a tick) to
``ended + late_s``.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from dataclasses import dataclass

from console.watch.events import Attribution, AttributionKind


@dataclass(frozen=True, slots=True)
class AttributionToken:
    """Returned by ``Attributions.begin``; pass it to ``end``."""

    serial: int


@dataclass(slots=True)
class _Entry:
    attribution: Attribution
    root: str
    began: float
    ended: float | None = None


def _overlaps(a: str, b: str) -> bool:
    if a == b:
        return True
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return long_.startswith(short.rstrip("/") + "/")


class Attributions:
    """Thread-safe registry of active sessions and operations per workspace."""

    def __init__(
        self,
        *,
        keep_ended_s: float = 120.0,
        early_s: float = 0.05,
        late_s: float = 0.25,
    ) -> None:
        self.keep_ended_s = keep_ended_s
        self.early_s = early_s
        self.late_s = late_s
        self._lock = threading.Lock()
        self._serial = itertools.count(1)
        self._entries: dict[int, _Entry] = {}

    def begin(
        self,
        workspace_root: str,
        kind: AttributionKind,
        id: str,
        label: str,
        pid: int | None,
        *,
        at: float | None = None,
    ) -> AttributionToken:
        """Record that a session or operation became active in ``workspace_root``.

        ``at`` defaults to now; pass the process start time when registering late.
        """
        if kind not in ("session", "operation"):
            raise ValueError("attribution kind must be 'session' or 'operation'")
        if not isinstance(id, str) or not id:
            raise ValueError("attribution id must be a non-empty string")
        if not isinstance(workspace_root, str) or not os.path.isabs(workspace_root):
            raise ValueError("workspace_root must be an absolute path")
        if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0):
            raise ValueError("pid must be a positive integer or None")
        root = os.path.normpath(workspace_root)
        entry = _Entry(
            Attribution(kind=kind, id=id, label=str(label), pid=pid, workspace_root=root),
            root,
            time.time() if at is None else at,
        )
        with self._lock:
            serial = next(self._serial)
            self._entries[serial] = entry
            self._prune_locked(time.time())
        return AttributionToken(serial)

    def end(self, token: AttributionToken, *, at: float | None = None) -> None:
        """Record that the session or operation stopped; unknown or ended tokens are ignored."""
        with self._lock:
            entry = self._entries.get(token.serial)
            if entry is not None and entry.ended is None:
                entry.ended = time.time() if at is None else at

    def at(self, workspace_root: str, path: str, when: float) -> tuple[Attribution, ...]:
        """Sessions and operations active in a workspace overlapping ``workspace_root`` at
        ``when``, oldest first. ``path`` (relative to the root) names the changed file;
        every overlapping workspace counts today, whatever the path."""
        root = os.path.normpath(workspace_root)
        found: list[Attribution] = []
        with self._lock:
            for entry in self._entries.values():
                if entry.began - self.early_s > when:
                    continue
                if entry.ended is not None and when > entry.ended + self.late_s:
                    continue
                if _overlaps(entry.root, root):
                    found.append(entry.attribution)
        return tuple(found)

    def active(self, workspace_root: str | None = None) -> tuple[Attribution, ...]:
        """Entries that have begun and not ended (optionally in one workspace)."""
        with self._lock:
            return tuple(
                e.attribution
                for e in self._entries.values()
                if e.ended is None and (workspace_root is None or _overlaps(e.root, workspace_root))
            )

    def _prune_locked(self, now: float) -> None:
        stale = [
            k for k, e in self._entries.items() if e.ended is not None and e.ended + self.keep_ended_s < now
        ]
        for k in stale:
            del self._entries[k]
