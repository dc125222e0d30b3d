"""Pending and tripwire items, watch entries and daemon statuses for the console's tests:
a test writes the fields it is about, as the daemon's JSON; the helpers here fill the
rest (empty values, or a quiet status) and give the Struct the console holds, or the
whole JSON for a fake daemon to answer with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from console.protocol.pending import EMPTY_EVALUATION, EMPTY_OPERATION, PendingItem
from console.protocol.records import HistoryRow
from console.protocol.results import DaemonStatusResult
from console.protocol.tripwire import TripwireNotice
from console.protocol.watch import WatchEntry

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


def watch_entry_wire(event: Mapping[str, Any]) -> dict[str, Any]:
    """``event`` (a file event as ``watch.recent`` gives it, whole or in part) made whole,
    as the daemon's JSON: an ordinary, unattributed modification seen by inotify."""
    path = str(event.get("path", event.get("display_path", "")))
    return {
        "seq": 0,
        "at": 0.0,
        "changed_at": 0.0,
        "workspace_root": "",
        "path": path,
        "display_path": path,
        "path_flagged": False,
        "kind": "modified",
        "protected": None,
        "is_dir": False,
        "symlink_escape": False,
        "size": None,
        "mode": None,
        "attribution": [],
        "source": "inotify",
        "count": 1,
        "flood": False,
        "quiet": None,
        **event,
    }


def watch_entry(event: Mapping[str, Any]) -> WatchEntry:
    """``event`` (whole or in part) as the WatchEntry the console holds."""
    return msgspec.convert(watch_entry_wire(event), WatchEntry)


def watch_status_wire(**parts: Any) -> dict[str, Any]:
    """A watcher's status as ``watch.status`` answers, with no root unless given; each
    root given in part is made whole (an ok, inotify-watched root)."""
    roots = [
        {
            "root": "",
            "state": "ok",
            "mode": "inotify",
            "reasons": [],
            "watched_dirs": 0,
            "protected_entries": 0,
            "restarts": 0,
            "rescans": 0,
            "missed_by_events": 0,
            **root,
        }
        for root in parts.pop("roots", [])
    ]
    return {
        "ok": all(r["state"] == "ok" for r in roots),
        "roots": roots,
        "fast_lane": "inotify",
        "lineage": "proc connector",
        "open_gate": False,
        "deep_dirs": {},
        "summary": f"{len(roots)} roots",
        "paused_sessions": [],
        "protected_kept": 0,
        "recent_kept": 0,
        **parts,
    }


def status_wire(**parts: Any) -> dict[str, Any]:
    """The operator's ``daemon.status`` as the daemon's JSON, quiet (nothing for the
    header to warn of: the sandbox works, the history is intact); a part given as a dict
    is merged over its quiet default, so a test writes only what it is about."""
    quiet: dict[str, Any] = {
        "pid": 1,
        "version": "0.1.0",
        "protocol": 1,
        "started_at": 0.0,
        "uptime_s": 0.0,
        "state_dir": "/state",
        "runtime_dir": "/run",
        "policy": {"source": "defaults", "error": "", "config": _policy_config()},
        "pending": 0,
        "held": 0,
        "connections": 1,
        "agents": 0,
        "sandbox": {
            "summary": "bubblewrap 0.8.0, network isolated",
            "probe": {
                "available": True,
                "backend": "bubblewrap",
                "path": "/usr/bin/bwrap",
                "version": "0.8.0",
                "user_ns": True,
                "pid_ns": True,
                "net_ns": True,
                "ipc_ns": True,
                "uts_ns": True,
                "network_isolated": True,
                "seccomp": True,
                "disable_userns": False,
                "reason": "",
                "duration_ms": 1.0,
            },
            "running": 0,
            "path": ["/usr/bin"],
            "path_source": "the daemon's PATH",
            "seccomp": "on",
        },
        "egress": {"runs": 0, "allowed": 0, "refused": 0, "asked": 0},
        "sessions": {
            "summary": "0 running, 0 ended; pause by cgroup freeze",
            "running": 0,
            "total": 0,
            "pause_mode": "cgroup freeze",
            "pause_mode_reason": "",
        },
        "watch": watch_status_wire(),
        "workspaces": [],
        "attention": {"waiting": 0, "entries": 0, "transitions": 0},
        "history": {"unaccepted": []},
        "integrity": {
            "state": "intact",
            "checked": 0,
            "total": 0,
            "findings": [],
            "finished_at": 0.0,
            "error": "",
        },
    }
    for name, part in parts.items():
        quiet[name] = {**quiet[name], **part} if isinstance(part, dict) and name != "watch" else part
    return quiet


def daemon_status(**parts: Any) -> DaemonStatusResult:
    """:func:`status_wire` as the Struct the console holds."""
    return msgspec.convert(status_wire(**parts), DaemonStatusResult)


def _policy_config() -> dict[str, Any]:
    from console.policy import PolicyConfig

    return PolicyConfig().to_dict()
