"""The watch panel's logic without Textual: the event model, badges, escaping, diffs, history rows."""

from __future__ import annotations

from support.items import (
    daemon_status,
    history_row,
    status_wire,
    tripwire_notice,
    watch_entry,
    watch_status_wire,
)

from console.protocol.watch import WatchEntry, WatchStatus
from console.tui.model.watch_model import (
    TripwireEntry,
    WatchEvents,
    degraded_roots,
    sandbox_pill,
)
from console.tui.render.outcome_text import record_row, render_outcome
from console.tui.render.present import PLAIN
from console.tui.render.watch_text import diff_text, path_text, raw_path_shown

STYLES = {
    **PLAIN,
    **dict.fromkeys(("time", "source", "tool", "pattern", "flag", "protected", "modified"), PLAIN["dim"]),
}


def ev(seq: int, protected: str | None = None) -> WatchEntry:
    return watch_entry(
        {"seq": seq, "display_path": f"f{seq}", "path": f"f{seq}", "protected": protected, "kind": "added"}
    )


def test_events_are_kept_newest_first_with_a_protected_view_in_step():
    model = WatchEvents(keep=5)
    assert model.add([ev(1), ev(2, ".env"), ev(3)]) == (3, 1)
    assert [model[i].seq for i in range(len(model))] == [3, 2, 1]
    model.protected_only = True
    assert [model[i].seq for i in range(len(model))] == [2]
    model.protected_only = False
    assert model.add([ev(3), ev(4)]) == (1, 0)  # a repeated event is not added twice
    model.add([ev(5), ev(6), ev(7, ".git/hooks/**")])
    assert model.total == 5 and [model[i].seq for i in range(5)] == [7, 6, 5, 4, 3]
    assert model.protected_total == 2  # the bound applies to the whole list, not to protected ones first


def test_a_reload_keeps_what_arrived_live_while_it_was_on_its_way():
    model = WatchEvents()
    model.add([ev(10), ev(11)])
    model.replace([ev(9), ev(8)])  # newest first, as watch.recent answers; 10 and 11 are newer
    assert [model[i].seq for i in range(len(model))] == [11, 10, 9, 8]


def test_sandbox_and_degraded_badges():
    probing = daemon_status(sandbox={"summary": "probing", "probe": None})
    assert sandbox_pill(probing) == ("sandbox: probing", "muted")
    ok = daemon_status(sandbox={"summary": "bubblewrap 0.8.0, network isolated"})
    assert sandbox_pill(ok) == ("sandbox: bubblewrap 0.8.0, network isolated", "muted")
    probe = status_wire()["sandbox"]["probe"]
    leaky = daemon_status(
        sandbox={
            "summary": "bubblewrap 0.8.0, network NOT isolated",
            "probe": {**probe, "network_isolated": False},
        }
    )
    assert sandbox_pill(leaky)[1] == "warning"
    gone = daemon_status(
        sandbox={
            "summary": "UNAVAILABLE: no bwrap",
            "probe": {**probe, "available": False, "reason": "no bwrap"},
        }
    )
    assert sandbox_pill(gone) == ("SANDBOX UNAVAILABLE: no bwrap", "error")
    reasons = [{"code": "watch_limit", "message": "m", "since": 0.0}]
    status = daemon_status(
        watch=watch_status_wire(
            roots=[
                {"root": "/a", "state": "ok"},
                {"root": "/b", "state": "degraded", "reasons": reasons},
                {"root": "/c", "state": "starting"},
            ]
        )
    ).watch
    assert isinstance(status, WatchStatus)
    assert [(d.root, d.codes) for d in degraded_roots(status)] == [("/b", ("watch_limit",))]


def test_a_tripwire_item_becomes_a_queue_item_of_its_own_kind():
    entry = TripwireEntry(
        tripwire_notice({"id": "t-1", "summary": "session s modified .env", "session": "s", "at": 5.0})
    )
    assert entry.request_id == "t-1" and entry.command == "session s modified .env"
    assert isinstance(entry, TripwireEntry) and not isinstance({"request_id": "r-1"}, TripwireEntry)


def test_paths_are_escaped_unambiguously():
    shown = path_text("a\\\\b\\x1bc\\u202e", STYLES).plain
    assert shown == "a\\\\b\\x1bc\\u202e"
    assert raw_path_shown("a\\e\x1b") == "a\\\\e\\e"  # a literal backslash never passes for an escape
    assert path_text("x" * 50, STYLES, limit=10).plain == "x" * 9 + "…"


def test_diffs_are_escaped_and_bounded():
    diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\x1b[2J\n" + "+more\n" * 300
    text, cut = diff_text(diff, STYLES, max_lines=10)
    assert cut and "\x1b" not in text.plain and "+new\\e[2J" in text.plain
    assert "more diff lines" in text.plain
    text, cut = diff_text(diff, STYLES, max_lines=10, expanded=True)
    assert not cut and text.plain.count("+more") == 300


def test_history_rows_and_outcomes_read_well():
    file_row = {
        "kind": "file_event",
        "at": 1.0,
        "session_id": "s1",
        "reason": ".env",
        "command": ".env",
        "body": {"change": "modified"},
    }
    assert "modified s1" in " ".join(record_row(history_row(file_row), STYLES).plain.split())
    nobody = {**file_row, "session_id": ""}
    assert "unattributed" in record_row(history_row(nobody), STYLES).plain
    outcome = {
        "kind": "outcome",
        "at": 1.0,
        "request_id": "r-1",
        "body": {
            "status": "signaled",
            "exit_code": None,
            "signal": "SIGKILL",
            "outcome": {
                "state": "failed",
                "kind": "timed_out",
                "changes": [{"path": ".env", "kind": "modified", "protected": True}],
            },
            "enforcement": {
                "backend": "none",
                "level": "unsandboxed",
                "degraded": True,
                "downgrade_reason": "no bwrap",
            },
            "stdout": {"head": "a" * 10, "tail": "z" * 10, "total_bytes": 5000, "truncated": True},
            "denials": [
                {
                    "capability": {"kind": "external_network"},
                    "source": "platform_sandbox",
                    "reason": "Network is unreachable",
                    "recoverable": True,
                    "next_action": "request_approval",
                }
            ],
        },
    }
    assert "1 sandbox denial" in record_row(history_row(outcome), STYLES).plain
    plain = render_outcome(history_row(outcome), STYLES, 2000).plain
    assert "SIGNALED" in plain and "signal SIGKILL" in plain
    assert "⚠ DEGRADED (none, unsandboxed): no bwrap" in plain
    assert "✖ external_network — Network is unreachable" in plain
    assert "in between not kept" in plain
    assert "modified .env PROTECTED" in " ".join(plain.split())


def test_a_sessions_changes_count_files_not_events():
    """A file created then written is one change, however the watcher split it."""
    from console.tui.render.watch_text import changes_warning, render_session_changes

    root = "/w/project"
    events = [
        watch_entry(e)
        for e in (
            {"path": ".env", "workspace_root": root, "kind": "modified", "protected": ".env", "at": 0},
            {"path": ".env", "workspace_root": root, "kind": "modified", "protected": ".env", "at": 0},
            {"path": "notes.txt", "workspace_root": root, "kind": "added", "protected": None, "at": 0},
            {"path": "notes.txt", "workspace_root": root, "kind": "modified", "protected": None, "at": 0},
        )
    ]
    assert "1 protected, 1 other" in render_session_changes("agent-1", events, STYLES).plain
    warning = changes_warning(events, STYLES)
    assert warning is not None and "changed 1 protected path while" in warning.plain
