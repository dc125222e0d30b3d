"""The daemon's events, typed: one msgspec Struct per kind, shared by the daemon (which
builds and publishes them), the clients (which validate every ``event`` notification
against them at the socket) and the console (one Textual message per kind).

docs/protocol.md ("Events") lists every kind with its fields; tests/protocol/test_protocol_events.py
checks the table against these Structs and round-trips real events from a real daemon.

How a kind is told apart (msgspec tagged unions, one tag field per union):

- ``topic`` alone, for the topics with one shape: ``pending``, ``decided``, ``sessions``,
  ``outcomes``, ``attention`` (tag field ``topic``; :data:`TopicEvent`);
- ``topic`` then ``change``, for the topics with several: ``grants``
  (:data:`GrantsEvent`) and ``watch`` (:data:`WatchEvent`) are unions tagged on
  ``change``, each member with a ``topic`` field that must be the topic's name. msgspec
  writes the tag first, so these encode as ``{"change": …, "topic": …, …}`` (JSON
  readers do not depend on key order);
- ``topic: status`` has two shapes told apart by their one key: ``status`` (the whole
  daemon status, :class:`StatusChanged`) or ``watch`` (the watcher's part,
  :class:`WatchStatusChanged`).

:func:`decode_event` does the two steps; no single msgspec union can, since msgspec
tags a union on one field and the wire already has two. Every Struct forbids unknown
fields: the daemon and its clients ship together, and an event that says more than its
kind's fields is a daemon bug the tests should see, not something to guess at.

The pending request item (``PendingAdded.request``), the session object
(``SessionChanged.session``), the tripwire item (``TripwireRaised.item``,
``TripwireResolved.item``) and the grant (``GrantAdded.grant``) are shared with the
results: :class:`~console.protocol.pending.PendingItem`,
:class:`~console.protocol.sessions.SessionObject`,
:class:`~console.protocol.tripwire.TripwireNotice` and
:class:`~console.protocol.grants.GrantObject`, as ``pending.list``, ``sessions.list``,
``tripwire.list`` and ``grants.list`` give them (they allow unknown fields, as results do).

The daemon status (``StatusChanged.status``, as ``daemon.status`` answers), the watcher
status (``WatchStatusChanged.watch``), watch entries (``WatchBatch.events``) and the
attention entry (``AttentionChanged.entry``) are the results' Structs too
(console/protocol/status.py, console/protocol/watch.py). Left as mappings, because the
console renders them field by field and they have their own pages: the outcome's denials.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal, TypeAlias

import msgspec

from console.protocol.grants import GrantObject
from console.protocol.invalid import problem
from console.protocol.pending import PendingItem
from console.protocol.records import DenialRecord
from console.protocol.results import DaemonStatusResult
from console.protocol.sessions import SessionObject
from console.protocol.status import AttentionEntry
from console.protocol.tripwire import TripwireNotice
from console.protocol.watch import WatchEntry, WatchStatus


class Topic(StrEnum):
    """What ``subscribe`` takes; every event belongs to exactly one."""

    PENDING = "pending"  # a request now waits for the operator
    DECIDED = "decided"  # a request left the queue (decided, timed out, cancelled)
    GRANTS = "grants"  # grants or deny-rules changed
    STATUS = "status"  # daemon status: policy reloads and errors, sandbox, store, watcher
    SESSIONS = "sessions"  # session created, status changed, exited
    WATCH = "watch"  # workspace file events, alerts, tripwire items
    OUTCOMES = "outcomes"  # an operation ran and finished
    ATTENTION = "attention"  # an agent now waits for the person, works again, or is done


class EventError(ValueError):
    """An ``event`` notification that is no event this protocol knows; the message says why."""


class _Topical(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="topic"):
    """A topic with one shape: the tag is the topic."""


class _Changing(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="change"):
    """A topic with several shapes: the tag is ``change``; ``topic`` is an ordinary field."""


# ------------------------------------------------------------------ pending, decided


class PendingAdded(_Topical, tag="pending", kw_only=True, frozen=True):
    """A request now waits for the operator. ``request``: the item as ``pending.list``."""

    request: PendingItem


class Decided(_Topical, tag="decided", kw_only=True, frozen=True):
    """A request left the queue: decided here or elsewhere, timed out, cancelled.
    ``queued``: it had been pending (false: decided at once, by policy or a grant)."""

    request_id: str
    verdict: Literal["allow", "deny"]
    source: str
    reason: str
    queued: bool


# ------------------------------------------------------------------ grants


class GrantAdded(_Changing, tag="added", kw_only=True, frozen=True):
    topic: Literal["grants"] = "grants"
    grant: GrantObject


class GrantsUsed(_Changing, tag="used", kw_only=True, frozen=True):
    topic: Literal["grants"] = "grants"
    grant_ids: list[str]


class GrantsRevoked(_Changing, tag="revoked", kw_only=True, frozen=True):
    topic: Literal["grants"] = "grants"
    grant_ids: list[str]


# ------------------------------------------------------------------ status


class StatusChanged(_Topical, tag="status", kw_only=True, frozen=True):
    """The whole daemon status changed (a policy reload, workspace trust)."""

    status: DaemonStatusResult  # as daemon.status answers on operator.sock


class WatchStatusChanged(_Topical, tag="status", kw_only=True, frozen=True):
    """Only the watcher's part of the status changed (``daemon.status``'s ``watch``)."""

    watch: WatchStatus


# ------------------------------------------------------------------ sessions, outcomes


class SessionChanged(_Topical, tag="sessions", kw_only=True, frozen=True):
    """A session was created, changed status or terminal title, exited, was lost or removed."""

    change: Literal["created", "status", "exited", "lost", "removed", "title"]
    session: SessionObject


class OutcomeFinished(_Topical, tag="outcomes", kw_only=True, frozen=True):
    """A captured operation the daemon ran has finished (its outcome is in the history)."""

    request_id: str
    status: str
    kind: str
    exit_code: int | None
    denials: list[DenialRecord]


# ------------------------------------------------------------------ watch


class WatchBatch(_Changing, tag="events", kw_only=True, frozen=True):
    """File events since the last batch (at most every 100 ms); ``dropped`` ordinary ones
    beyond 500 were only counted."""

    topic: Literal["watch"] = "watch"
    events: list[WatchEntry]
    dropped: int


class WatchAlert(_Changing, tag="alert", kw_only=True, frozen=True):
    """A protected path changed by a session (``session``) or while an operation ran
    (``operation``): exactly one of the two is present."""

    topic: Literal["watch"] = "watch"
    session: str | msgspec.UnsetType = msgspec.UNSET
    operation: str | msgspec.UnsetType = msgspec.UNSET
    display_path: str
    pattern: str | None
    basis: str
    exited: bool
    count: int
    summary: str


class TripwireRaised(_Changing, tag="tripwire", kw_only=True, frozen=True):
    """A tripwire item: ``item["state"]`` is ``paused`` (the session was stopped) or
    ``exited`` (its writer had already gone)."""

    topic: Literal["watch"] = "watch"
    item: TripwireNotice


class TripwireResolved(_Changing, tag="tripwire_resolved", kw_only=True, frozen=True):
    topic: Literal["watch"] = "watch"
    item: TripwireNotice


# ------------------------------------------------------------------ attention


class AttentionChanged(_Topical, tag="attention", kw_only=True, frozen=True):
    """An agent's attention state really changed; ``waiting``: how many wait now."""

    change: Literal["state"] = "state"
    entry: AttentionEntry
    previous: Literal["waiting", "working", "done"] | None
    waiting: int


# ------------------------------------------------------------------ the unions

TopicEvent: TypeAlias = PendingAdded | Decided | SessionChanged | OutcomeFinished | AttentionChanged
GrantsEvent: TypeAlias = GrantAdded | GrantsUsed | GrantsRevoked
WatchEvent: TypeAlias = WatchBatch | WatchAlert | TripwireRaised | TripwireResolved
Event: TypeAlias = TopicEvent | GrantsEvent | WatchEvent | StatusChanged | WatchStatusChanged

KINDS: tuple[type[Event], ...] = (
    PendingAdded,
    Decided,
    GrantAdded,
    GrantsUsed,
    GrantsRevoked,
    StatusChanged,
    WatchStatusChanged,
    SessionChanged,
    OutcomeFinished,
    WatchBatch,
    WatchAlert,
    TripwireRaised,
    TripwireResolved,
    AttentionChanged,
)


def _topic_of(kind: type[Event]) -> Topic:
    config = kind.__struct_config__
    if config.tag_field == "topic":
        return Topic(str(config.tag))
    return Topic(msgspec.structs.fields(kind)[0].default)


TOPIC: dict[type[Event], Topic] = {kind: _topic_of(kind) for kind in KINDS}
"""The topic each kind is published on (what a subscription filters by)."""

_BY_TOPIC: dict[str, Any] = {
    Topic.PENDING: PendingAdded,
    Topic.DECIDED: Decided,
    Topic.SESSIONS: SessionChanged,
    Topic.OUTCOMES: OutcomeFinished,
    Topic.ATTENTION: AttentionChanged,
    Topic.GRANTS: GrantsEvent,
    Topic.WATCH: WatchEvent,
}


def wire_fields(kind: type[Event]) -> tuple[str, ...]:
    """The keys an event of ``kind`` has on the wire, tag first (``session``/``operation``
    of an alert: at most one of them is sent)."""
    config = kind.__struct_config__
    return (str(config.tag_field), *(f.encode_name for f in msgspec.structs.fields(kind)))


def decode_event(params: Any) -> Event:
    """The typed event of an ``event`` notification's params (decoded JSON); raises
    :class:`EventError` naming the topic, the change and what is wrong."""
    if not isinstance(params, Mapping):
        raise EventError(f"event params must be an object, not {type(params).__name__}")
    topic = params.get("topic")
    kind: Any = _BY_TOPIC.get(topic) if isinstance(topic, str) else None
    if topic == Topic.STATUS:
        kind = StatusChanged if "status" in params else WatchStatusChanged
    if kind is None:
        known = ", ".join(t.value for t in Topic)
        raise EventError(f"event with unknown topic {str(topic)[:64]!r} (known: {known})")
    try:
        event: Event = msgspec.convert(params, kind)
    except msgspec.ValidationError as exc:
        change = params.get("change")
        if isinstance(change, str):
            # A name as the protocol writes them goes as is; anything else quoted, escaped.
            shown = change if change.isidentifier() and len(change) <= 32 else repr(change[:64])
            what = f"{topic}/{shown}"
        else:
            what = str(topic)
        raise EventError(f"malformed {what} event: {problem(exc)[0]}") from None
    return event


def encode_event(event: Event) -> msgspec.Raw:
    """The event's JSON, encoded once and spliced as is into each subscriber's frame."""
    return msgspec.Raw(msgspec.json.encode(event))
