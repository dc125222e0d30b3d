"""Pending and tripwire items for the console's tests: a test writes the fields it is
about, as the daemon's JSON; :func:`pending_item` and :func:`tripwire_notice` fill the
rest with empty values and give the Struct the console holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from console.protocol.pending import EMPTY_EVALUATION, EMPTY_OPERATION, PendingItem
from console.protocol.records import HistoryRow
from console.protocol.tripwire import TripwireNotice

_LINES = ("escalations", "within", "unused", "forbidden", "lifted")


def pending_item(item: Mapping[str, Any]) -> PendingItem:
    """``item`` (a dict as ``pending.list`` gives it, whole or in part) as a PendingItem."""
    evaluation = dict(item.get("evaluation") or {})
    for key in _LINES:
        evaluation[key] = [{"reason": "", **line} for line in evaluation.get(key, [])]
    whole = {
        "request_id": "",
        "fingerprint": "",
        "submitted_at": 0.0,
        "deadline": 0.0,
        "peer_pid": 0,
        "agent_id": "",
        "session_id": "",
        "command": "",
        "content": [],
        "unbound": [],
        "supersedes": "",
        "proposed": None,
        **item,
        "operation": {**EMPTY_OPERATION, **(item.get("operation") or {})},
        "evaluation": {**EMPTY_EVALUATION, "verdict": "review", **evaluation},
    }
    return msgspec.convert(whole, PendingItem)


def tripwire_notice(item: Mapping[str, Any]) -> TripwireNotice:
    """``item`` (a tripwire item as ``tripwire.list`` gives it, whole or in part) as a
    TripwireNotice: a paused session's, by default."""
    whole = {
        "id": "",
        "at": 0.0,
        "session": "",
        "session_label": "",
        "workspace_root": "",
        "display_path": "",
        "pattern": "",
        "change": "modified",
        "diff": None,
        "state": "paused",
        "basis": "",
        "stopped": True,
        "stop_mode": "",
        "count": 1,
        "sample": [],
        "summary": "",
        **item,
    }
    return msgspec.convert(whole, TripwireNotice)


def history_row(row: Mapping[str, Any]) -> HistoryRow:
    """``row`` (a dict as ``history.query`` gives one, whole or in part) as a HistoryRow:
    the columns it does not name are empty, as the store leaves a column that does not apply."""
    blank: dict[str, Any] = dict.fromkeys(HistoryRow.__struct_fields__, "")
    blank.update(seq=0, at=0.0, peer_pid=None, latency_ms=None, body={})
    del blank["elided"], blank["elided_bytes"]
    return msgspec.convert({**blank, **row}, HistoryRow)
