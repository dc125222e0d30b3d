"""The daemon's history: SQLite (WAL) with group commit, a hash chain, and trigram search.

One append-only table of :class:`Event` rows is the source of truth; ``grants`` is
derived state that :meth:`Store.verify` checks against a replay of the grant events.
Writes return futures that resolve once durable (wrap them with
``asyncio.wrap_future``); reads block and may be called from any thread (use
``asyncio.to_thread``). The hashing rule is documented in :mod:`console.store.chain`.
"""

from console.store.chain import GENESIS, row_hash
from console.store.errors import StoreConflict, StoreUnavailable
from console.store.event import (
    Event,
    EventKind,
    Record,
    command_line,
    connection_event,
    daemon_event,
    decision_event,
    decision_for_request,
    file_event,
    outcome_event,
    request_event,
    workspace_event,
)
from console.store.query import HistoryPage, HistoryQuery
from console.store.schema import SCHEMA_VERSION
from console.store.store import Store, StoreStats
from console.store.verify import VerifyReport

__all__ = [
    "GENESIS",
    "SCHEMA_VERSION",
    "Event",
    "EventKind",
    "HistoryPage",
    "HistoryQuery",
    "Record",
    "Store",
    "StoreConflict",
    "StoreStats",
    "StoreUnavailable",
    "VerifyReport",
    "command_line",
    "connection_event",
    "daemon_event",
    "decision_event",
    "decision_for_request",
    "file_event",
    "outcome_event",
    "request_event",
    "row_hash",
    "workspace_event",
]
