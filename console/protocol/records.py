"""What the history records and what an execution did, typed: the history row, the
outcome of a captured run, its streams, denials and enforcement, and the parts of an
operation's answer (escalations, denials, authorization).

Why: these were the shapes every history screen and the CLI indexed into on trust, each
with its own fallback for a key that might be missing. As Structs they are checked once,
at the socket (a result's part) or where a stored body is read (:meth:`HistoryRow.ran`
and its siblings), and the renderers read attributes mypy knows.

Two kinds of Struct live here:

- parts of results (console/protocol/results.py), sent by this daemon and held to the
  same rules: unknown fields allowed, a key sometimes left out ``X | UnsetType = UNSET``,
  never a plain default;
- what a stored row's ``body`` holds (:class:`FileEventBody`, :class:`DecisionBody`, …).
  The history outlives the daemon that wrote it, so these are read leniently: a key an
  older daemon did not write has its empty value, and a body this console cannot read at
  all is ``None`` (the renderers then say what the row's columns say).

A row's ``body`` itself stays a mapping on the wire: its shape depends on the row's
``kind`` and it is open-ended (``history export`` has it whole); the readers on
:class:`HistoryRow` turn it into the Struct of its kind.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from console.protocol.pending import CapabilityWire, DiffLine
from console.protocol.tripwire import TripwireNotice

# ------------------------------------------------------------------ an operation's answer


class DenialRecord(msgspec.Struct, frozen=True, kw_only=True):
    """Something refused (the contract's ``Denial``): by the policy, the operator, or the
    sandbox while the command ran. ``reason`` may hold the command's own words."""

    capability: CapabilityWire
    source: str  # configured_policy, platform_sandbox or approval
    reason: str
    recoverable: bool
    next_action: str  # none, request_approval, change_command or enable_sandbox


class AuthorizationRecord(msgspec.Struct, frozen=True, kw_only=True):
    """Permission to run exactly one fingerprint in one workspace (an allowed answer's)."""

    fingerprint: str
    workspace_root: str
    source: str
    grant_id: str


# ------------------------------------------------------------------ an execution


class StreamRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The kept head and tail of one output stream, as text (invalid UTF-8 replaced)."""

    head: str
    tail: str
    tail_offset: int
    total_bytes: int
    truncated: bool  # bytes between head and tail were not kept


class EnforcementRecord(msgspec.Struct, frozen=True, kw_only=True):
    backend: str
    level: str
    degraded: bool
    downgrade_reason: str


class ExitRecord(msgspec.Struct, frozen=True, kw_only=True):
    code: int
    signal: str | UnsetType = UNSET


class ChangeRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A file change seen in the workspace while the operation ran."""

    path: str
    kind: str  # added, modified or deleted
    protected: bool
    refused: bool | UnsetType = UNSET  # true: a protected name made without approval, removed


class OutcomeRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The contract's outcome: a state and a kind that agree (console/contract/outcome.py)."""

    state: str
    kind: str
    process_id: str
    exit: ExitRecord | None
    denial: DenialRecord | None
    enforcement: EnforcementRecord
    changes: list[ChangeRecord]


class ExecRecord(msgspec.Struct, frozen=True, kw_only=True):
    """What a captured operation did, as the history records it (its ``outcome`` row's
    body) and as ``operation.exec`` and ``operation.run`` answer it."""

    status: str  # exited, signaled, timed_out, cancelled, output_limit, not_started
    exit_code: int | None
    signal: str
    duration_ms: float
    outcome: OutcomeRecord
    stdout: StreamRecord
    stderr: StreamRecord
    denials: list[DenialRecord]
    enforcement: EnforcementRecord
    reason: str
    temp_root_removed: bool
    recorded: bool | UnsetType = UNSET  # false when the history could not store it


# ------------------------------------------------------------------ stored bodies


class SessionRun(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome row of a request that runs as a session (the session's own record has
    how it ended)."""

    kind: str  # "session"
    session: str
    mode: str = ""
    sandboxed: bool = False


class Attributed(msgspec.Struct, frozen=True, kw_only=True):
    """Who a file change is attributed to: a session or an operation."""

    kind: str = ""
    id: str = ""
    label: str = ""


class EventMarks(msgspec.Struct, frozen=True, kw_only=True):
    """What the watcher flagged about the change's path."""

    symlink_escape: bool = False
    path_flagged: bool = False


class Attribution(msgspec.Struct, frozen=True, kw_only=True):
    who: list[Attributed] | str = "unattributed"
    basis: str = ""
    event: EventMarks | None = None


class FileEventBody(msgspec.Struct, frozen=True, kw_only=True):
    """A protected file's change (a ``file_event`` row's body)."""

    path: str = ""
    change: str = ""
    protected_pattern: str = ""
    attribution: Attribution | None = None

    @property
    def who(self) -> list[Attributed]:
        """Whom the change is attributed to; empty when nobody."""
        who = self.attribution.who if self.attribution is not None else ""
        return who if isinstance(who, list) else []


class DecisionBody(msgspec.Struct, frozen=True, kw_only=True):
    """A ``decision`` row's body: the denials of a deny, the grant that allowed it."""

    denials: list[DenialRecord] = []
    grant_id: str = ""
    capability_diff: dict[str, Any] | None = None  # as the pending item's evaluation


class RequestBody(msgspec.Struct, frozen=True, kw_only=True):
    """A ``request`` row's body: the operation and how it was evaluated, each as a
    pending item has them (read with their own fallbacks, as another version wrote them)."""

    operation: dict[str, Any] = {}
    evaluation: dict[str, Any] = {}


class ConnectionBody(msgspec.Struct, frozen=True, kw_only=True):
    """A ``connection`` row's body: where the egress broker let a connection go (or not)."""

    host: str = ""
    port: int = 0
    address: str = ""  # the address it went to, when allowed
    protocol: str = ""
    agent_id: str = ""


class TripwireBody(msgspec.Struct, frozen=True, kw_only=True):
    """A tripwire row's body: the item as it was then."""

    item: TripwireNotice


T = TypeVar("T", bound=msgspec.Struct)


def _read(body: dict[str, Any], kind: type[T]) -> T | None:
    try:
        return msgspec.convert(body, kind)
    except msgspec.ValidationError:
        return None


def _filled(empty: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
    """``found`` with what it lacks of ``empty``, object by object."""
    out = dict(empty)
    for key, value in found.items():
        inner = empty.get(key)
        out[key] = _filled(inner, value) if isinstance(inner, dict) and isinstance(value, dict) else value
    return out


_EMPTY_STREAM = {"head": "", "tail": "", "tail_offset": 0, "total_bytes": 0, "truncated": False}
_EMPTY_ENFORCEMENT = {"backend": "", "level": "", "degraded": False, "downgrade_reason": ""}
_EMPTY_EXEC: dict[str, Any] = {
    "status": "",
    "exit_code": None,
    "signal": "",
    "duration_ms": 0.0,
    "outcome": {
        "state": "",
        "kind": "",
        "process_id": "",
        "exit": None,
        "denial": None,
        "enforcement": _EMPTY_ENFORCEMENT,
        "changes": [],
    },
    "stdout": _EMPTY_STREAM,
    "stderr": _EMPTY_STREAM,
    "denials": [],
    "enforcement": _EMPTY_ENFORCEMENT,
    "reason": "",
    "temp_root_removed": True,
}


# ------------------------------------------------------------------ the history row


class HistoryRow(msgspec.Struct, frozen=True, kw_only=True):
    """One event of the history as stored: its columns (``""`` where one does not apply),
    its ``body`` and the hashes that seal it. A row larger than the daemon sends whole
    comes with ``elided`` true, its body empty and its long texts cut."""

    seq: int
    kind: str
    at: float
    request_id: str
    fingerprint: str
    tool: str
    executable: str
    command: str
    cwd: str
    workspace_root: str
    session_id: str
    verdict: str
    source: str
    scope: str
    reason: str
    note: str
    justification: str
    peer_pid: int | None
    latency_ms: float | None
    body: dict[str, Any]
    prev_hash: str
    hash: str
    elided: bool | UnsetType = UNSET
    elided_bytes: int | UnsetType = UNSET

    def ran(self) -> ExecRecord | SessionRun | None:
        """An ``outcome`` row's body: the run's record, or the session it runs as; None
        when it is neither (elided, or written in a shape this console cannot read). A
        key an older daemon did not record reads as its empty value."""
        if self.elided is True or not self.body:
            return None
        if self.body.get("kind") == "session":
            return _read(self.body, SessionRun)
        return _read(self.body, ExecRecord) or _read(_filled(_EMPTY_EXEC, self.body), ExecRecord)

    def file_change(self) -> FileEventBody:
        """A ``file_event`` row's body (empty when it cannot be read)."""
        return _read(self.body, FileEventBody) or FileEventBody()

    def decision(self) -> DecisionBody:
        """A ``decision`` row's body (empty when it cannot be read)."""
        return _read(self.body, DecisionBody) or DecisionBody()

    def request(self) -> RequestBody:
        """A ``request`` row's body (empty when it cannot be read)."""
        return _read(self.body, RequestBody) or RequestBody()

    def connection(self) -> ConnectionBody:
        """A ``connection`` row's body (empty when it cannot be read)."""
        return _read(self.body, ConnectionBody) or ConnectionBody()

    def tripwire_item(self) -> TripwireNotice | None:
        """A tripwire row's item; None when it cannot be read."""
        found = _read(self.body, TripwireBody)
        return found.item if found is not None else None


__all__ = [
    "AuthorizationRecord",
    "ChangeRecord",
    "ConnectionBody",
    "DecisionBody",
    "DenialRecord",
    "DiffLine",
    "EnforcementRecord",
    "ExecRecord",
    "ExitRecord",
    "FileEventBody",
    "HistoryRow",
    "OutcomeRecord",
    "RequestBody",
    "SessionRun",
    "StreamRecord",
    "TripwireBody",
]
