"""What the watcher reports: file events, attributions and status.

Everything here is a frozen value with ``to_dict()`` giving JSON-safe data (file names
that are not UTF-8 carry their raw bytes in hex, see ``names.json_path``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from console.contract.outcome import Change, ChangeKind
from console.watch.names import display_path, is_plain, json_path

AttributionKind = Literal["session", "operation"]
Source = Literal["inotify", "poll", "rescan"]


@dataclass(frozen=True, slots=True)
class Attribution:
    """A session or running operation that was active in the workspace when a change happened."""

    kind: AttributionKind
    id: str
    label: str
    pid: int | None
    workspace_root: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "label": self.label,
            "pid": self.pid,
            "workspace_root": self.workspace_root,
        }


@dataclass(frozen=True, slots=True)
class FileEvent:
    """One change of one path, classified and attributed.

    ``kind`` describes the final state checked with ``lstat``: ``modified`` means the path
    existed before and exists now (including an atomic rename-over), ``deleted`` that it
    is gone. ``protected`` is the pattern that protects the path, or None. ``changed_at``
    is the best estimate of when the change happened (the inode's ctime, or the parent
    directory's mtime for a deletion), which is what attribution uses; ``at`` is when
    the watcher saw it. ``attribution`` is empty when no session or operation was
    active in the workspace then.
    """

    seq: int
    at: float
    changed_at: float
    workspace_root: str
    path: str
    kind: ChangeKind
    protected: str | None
    is_dir: bool
    symlink_escape: bool
    size: int | None
    mode: int | None
    attribution: tuple[Attribution, ...]
    source: Source
    # A flood (floods.py): ``path`` is the group's directory, ``count`` how many changes,
    # ``members`` their paths (not sent: the daemon keeps a bounded sample).
    count: int = 1
    members: tuple[str, ...] = field(default=(), repr=False, compare=False)
    quiet: str | None = None  # why a protected change is noise (noise.py): recorded, never a tripwire
    group: str | None = None  # the flood group a protected change may be folded into; None: alone

    @property
    def flood(self) -> bool:
        return self.count > 1

    @property
    def display_path(self) -> str:
        return display_path(self.path)

    def to_change(self) -> Change:
        return Change(path=self.path, kind=self.kind, protected=self.protected is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at": self.at,
            "changed_at": self.changed_at,
            "workspace_root": json_path(self.workspace_root)["path"],
            **json_path(self.path),
            "display_path": display_path(self.path),
            "path_flagged": not is_plain(self.path),
            "kind": self.kind.value,
            "protected": self.protected,
            "is_dir": self.is_dir,
            "symlink_escape": self.symlink_escape,
            "size": self.size,
            "mode": self.mode,
            "attribution": [a.to_dict() for a in self.attribution],
            "source": self.source,
            "count": self.count,
            "flood": self.flood,
            "quiet": self.quiet,
        }


def net_changes(events: Iterable[FileEvent]) -> tuple[Change, ...]:
    """The net change per path over a run of events, for an operation's outcome.

    added→modified is added, modified→deleted is deleted, deleted→added is modified,
    and a path added then deleted again is dropped, except a protected one, which keeps
    both entries: a hook that existed for a moment still ran.
    """
    first: dict[str, FileEvent] = {}
    last: dict[str, FileEvent] = {}
    for ev in events:
        first.setdefault(ev.path, ev)
        last[ev.path] = ev
    out: list[Change] = []
    for path, a in first.items():
        b = last[path]
        protected = a.protected is not None or b.protected is not None
        existed_before = a.kind is not ChangeKind.ADDED
        exists_after = b.kind is not ChangeKind.DELETED
        if existed_before and exists_after:
            out.append(Change(path, ChangeKind.MODIFIED, protected))
        elif existed_before:
            out.append(Change(path, ChangeKind.DELETED, protected))
        elif exists_after:
            out.append(Change(path, ChangeKind.ADDED, protected))
        elif protected:
            out.append(Change(path, ChangeKind.ADDED, True))
            out.append(Change(path, ChangeKind.DELETED, True))
    return tuple(out)


DegradationCode = Literal[
    "non_utf8_name",
    "watch_limit",
    "watcher_error",
    "missed_events",
    "root_missing",
    "unreadable",
]


@dataclass(frozen=True, slots=True)
class Degradation:
    """Why a root is not fully watched by events, and since when (``time.time()``)."""

    code: DegradationCode
    message: str
    since: float

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "since": self.since}


@dataclass(frozen=True, slots=True)
class RootStatus:
    """How one workspace root is watched.

    ``state`` is ``starting`` until the first baseline is taken, then ``ok`` or
    ``degraded`` (``reasons`` says why; changes are still reported, by polling or by the
    periodic rescan), or ``stopped`` after ``remove_root``/``close``. ``mode`` is
    ``inotify``, ``polling`` or ``none`` (root missing).
    """

    root: str
    state: Literal["starting", "ok", "degraded", "stopped"]
    mode: Literal["inotify", "polling", "none"]
    reasons: tuple[Degradation, ...] = ()
    watched_dirs: int = 0
    protected_entries: int = 0
    restarts: int = 0
    rescans: int = 0
    missed_by_events: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": json_path(self.root)["path"],
            "state": self.state,
            "mode": self.mode,
            "reasons": [r.to_dict() for r in self.reasons],
            "watched_dirs": self.watched_dirs,
            "protected_entries": self.protected_entries,
            "restarts": self.restarts,
            "rescans": self.rescans,
            "missed_by_events": self.missed_by_events,
        }


@dataclass(frozen=True, slots=True)
class WatchStatus:
    roots: tuple[RootStatus, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return all(r.state == "ok" for r in self.roots)

    def for_root(self, root: str) -> RootStatus | None:
        return next((r for r in self.roots if r.root == root), None)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "roots": [r.to_dict() for r in self.roots]}
