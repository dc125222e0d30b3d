"""The workspace watcher as clients see it, typed: its status (``watch.status``, the
``watch`` part of ``daemon.status`` and of a ``status`` event), a watched root, a file
event (``watch.recent``, the ``watch`` topic's ``events`` batches) and the tripwire's
answer that made a change the baseline (``watch.diff``).

Why Structs: the console's watch screen, its monitor and ``agent-console watch`` read
these field by field; typed, they read attributes the daemon is held to
(tests/protocol/test_protocol_results.py decodes and re-encodes real answers).

The daemon keeps a file event as a :class:`WatchRecord` while it is still growing (a
flood's count and sample, the tripwire's attribution); what leaves the watch service is a
frozen :class:`WatchEntry` of it. Like the results, every Struct allows unknown fields; a key the
daemon sends only sometimes is ``X | UnsetType = UNSET`` and absent on the wire too.
``path``, ``display_path`` and ``workspace_root`` of an entry may hold any file name: the
console shows them escaped (``display_path`` is escaped already).
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from console.protocol.tripwire import TripwireNotice


class WatchDegradation(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    message: str
    since: float


class WatchRoot(msgspec.Struct, frozen=True, kw_only=True):
    """How one workspace root is watched (console/watch/events.py ``RootStatus``)."""

    root: str
    state: str  # starting, ok, degraded or stopped
    mode: str  # inotify, polling or none
    reasons: list[WatchDegradation]
    watched_dirs: int
    protected_entries: int
    restarts: int
    rescans: int
    missed_by_events: int


class WatchStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The watcher's status (console/daemon/watch_service.py)."""

    ok: bool
    roots: list[WatchRoot]
    fast_lane: str  # "fanotify+inotify", "inotify" or "off"
    lineage: str  # how a writer that exited is still named: "proc connector", or "off (why)"
    open_gate: bool  # opens in the hot directories wait until the opener is read
    deep_dirs: dict[str, int]  # directories per root in the fast lane's deep group
    summary: str
    paused_sessions: list[TripwireNotice]  # the tripwire items whose session is paused
    protected_kept: int
    recent_kept: int


class WatchAttribution(msgspec.Struct, frozen=True, kw_only=True):
    """Who a file event is put down to: a session or an operation (``kind``), and for a
    protected change how that was known (``basis``) and the session's standing then."""

    kind: str  # session, operation or unknown
    id: str
    workspace_root: str
    label: str | UnsetType = UNSET  # absent when the kernel named an operation's process
    pid: int | UnsetType | None = UNSET
    basis: str | UnsetType = UNSET  # protected changes only
    in_workspace: bool | UnsetType = UNSET  # a session named by evidence only
    alive: bool | UnsetType = UNSET  # a session named by evidence only


class WatchRecord(msgspec.Struct, kw_only=True):
    """One file event (console/watch/events.py ``FileEvent.to_dict``), or a flood of
    them (``flood``: ``path`` is the group's directory, ``count`` how many changes,
    ``sample`` some of them), as the daemon keeps it: mutable, since a flood's count and
    sample and the tripwire's attribution grow after it is first kept. What leaves the
    daemon is a frozen :class:`WatchEntry` of it (:meth:`entry`)."""

    seq: int
    at: float
    changed_at: float
    workspace_root: str
    path: str
    path_hex: str | UnsetType = UNSET  # the raw name in hex, when it is not UTF-8
    display_path: str
    path_flagged: bool  # the name has characters shown escaped
    kind: str  # added, modified or deleted
    protected: str | None  # the pattern that protects the path
    is_dir: bool
    symlink_escape: bool
    size: int | None
    mode: int | None
    attribution: list[WatchAttribution]
    source: str
    count: int
    flood: bool
    quiet: str | None  # why a protected change is noise: recorded, never a tripwire
    sample: list[str] | UnsetType = UNSET  # a flood's: some of its paths, escaped
    flood_dir: str | UnsetType = UNSET  # a flood's group, escaped
    flood_ended: bool | UnsetType = UNSET  # a flood's last report
    attribution_basis: str | UnsetType = UNSET  # protected changes only

    def entry(self) -> WatchEntry:
        """This record as it stands now; later growth does not reach it."""
        fields = msgspec.structs.asdict(self)
        fields["attribution"] = list(self.attribution)
        if not isinstance(self.sample, UnsetType):
            fields["sample"] = list(self.sample)
        return WatchEntry(**fields)


class WatchEntry(WatchRecord, frozen=True, kw_only=True):  # type: ignore[misc]  # msgspec allows it
    """A file event or flood as a client receives it (``watch.recent``, the ``watch``
    topic's batches): a :class:`WatchRecord` fixed as it stood when sent."""


class AcceptedChange(msgspec.Struct, frozen=True, kw_only=True):
    """The tripwire answer that made a protected change the baseline (``watch.diff``)."""

    diff: str | None
    state: str  # what the item was settled as
    item: str  # the tripwire item's id
    at: float
