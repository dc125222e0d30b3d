"""The queue model, the typed-ahead guard, badges, notifications and history queries."""

from __future__ import annotations

import pytest
from support.items import pending_item, tripwire_notice

from console.protocol.pending import PendingItem
from console.tui.desktop import clean, osc9, osc777, sequence
from console.tui.model.badges import BadgeKind, badges
from console.tui.model.guard import TypeAheadGuard
from console.tui.model.historyquery import cycle, parse_query, set_token, token_value
from console.tui.model.pending import PendingQueue
from console.tui.model.timefmt import age, age_ago, ago, parse_duration
from console.tui.model.watch_model import TripwireEntry


def item(rid: str, command: str = "ls", escalations: list[dict] | None = None, **extra) -> PendingItem:
    return pending_item(
        {
            "request_id": rid,
            "fingerprint": rid.replace("r-", "ab") + "0" * 50,
            "command": command,
            "session_id": "s1",
            "submitted_at": 0.0,
            "operation": {"tool": "claude-code:Bash", "workspace_root": "/w"},
            "evaluation": {"escalations": escalations or []},
            **extra,
        }
    )


def test_queue_adds_removes_and_reports_rows():
    q = PendingQueue()
    assert q.add(item("r-1")) == 0
    # An escalation is pinned above the ordinary requests, however late it comes.
    assert q.add(item("r-2", "pip install x", [{"kind": "external_network"}])) == 0
    assert q.add(item("r-1")) is None  # duplicate
    assert q.total == 2 and q.escalated() == 1
    assert q.remove("r-1") == 1
    assert q.index_of("r-2") == 0 and q.remove("r-9") is None and q.escalated() == 1


def test_tripwires_then_escalations_then_the_rest_each_in_arrival_order():
    q = PendingQueue()
    q.add(item("r-1", "ls"))
    q.add(item("r-2", "pip install", [{"kind": "external_network"}]))
    q.add(item("r-3", "make"))
    assert q.add(TripwireEntry(tripwire_notice({"id": "t-1", "summary": "tripwire", "session": "s1"}))) == 0
    q.add(item("r-4", "curl x", [{"kind": "external_network"}]))
    assert [e.request_id for e in q] == ["t-1", "r-2", "r-4", "r-1", "r-3"]
    q.set_filter("")
    assert [e.request_id for e in q] == ["t-1", "r-2", "r-4", "r-1", "r-3"]


def test_queue_filter_hides_and_keeps_order():
    q = PendingQueue()
    q.replace(
        [
            item("r-1", "git status"),
            item("r-2", "pip install", [{"kind": "external_network"}]),
            item("r-3", "git push"),
        ]
    )
    q.set_filter("git")
    assert [e.request_id for e in q] == ["r-1", "r-3"]
    assert q.add(item("r-4", "npm i")) is None  # hidden by the filter
    assert q.add(item("r-5", "git log")) == 2
    q.set_filter("net")
    assert [e.request_id for e in q] == ["r-2"]
    assert q.remove("r-1") is None and q.total == 4
    q.set_filter("")
    assert [e.request_id for e in q] == ["r-2", "r-3", "r-4", "r-5"]


def test_queue_scales_to_ten_thousand():
    q = PendingQueue()
    q.replace(item(f"r-{i}") for i in range(10_000))
    assert q.remove("r-5000") == 5000
    assert q.index_of("r-5001") == 5000 and len(q) == 9999


def test_find_fingerprint_prefix():
    q = PendingQueue()
    q.replace([item("r-12"), item("r-13")])
    assert [e.request_id for e in q.find_fingerprint("ab12")] == ["r-12"]
    assert len(q.find_fingerprint("ab1")) == 2


def test_badges_loudest_first():
    found = badges(
        item(
            "r-1",
            escalations=[
                {"kind": "external_network"},
                {"kind": "workspace_write", "scope": "/etc"},
                {"kind": "protected_metadata", "scope": "/w/.git/hooks"},
                {"kind": "unrestricted"},
                {"kind": "environment", "scope": "PATH"},
            ],
        )
    )
    assert [b.kind for b in found] == [
        BadgeKind.UNRESTRICTED,
        BadgeKind.PROTECTED,
        BadgeKind.OUTSIDE,
        BadgeKind.NETWORK,
        BadgeKind.ENVIRONMENT,
    ]
    inside = badges(
        item(
            "r-1",
            escalations=[
                {
                    "kind": "workspace_write",
                    "scope": "/w/sub",
                    "reason": "writes into a protected path (.env)",
                }
            ],
        )
    )
    assert [b.label for b in inside] == ["PROTECTED"]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_guard_waits_for_the_idle_interval():
    clock = Clock()
    guard = TypeAheadGuard(0.5, clock)
    assert not guard.check("r-1:bounded").ok
    guard.shown("r-1:bounded", truncated=False)
    clock.now += 0.2
    verdict = guard.check("r-1:bounded")
    assert not verdict.ok and "0.2 s ago" in verdict.why
    clock.now += 0.4
    assert guard.check("r-1:bounded").ok
    assert not guard.check("r-2:bounded").ok  # a different request than the one shown


def test_guard_restarts_when_what_is_shown_changes_or_hides():
    clock = Clock()
    guard = TypeAheadGuard(0.5, clock)
    guard.shown("r-1:bounded", truncated=False)
    clock.now += 1
    guard.shown("r-2:bounded", truncated=False)
    assert not guard.check("r-2:bounded").ok
    clock.now += 1
    guard.hidden()
    guard.shown("r-2:bounded", truncated=False)
    assert not guard.check("r-2:bounded").ok


def test_guard_refuses_truncated_until_expanded():
    clock = Clock()
    guard = TypeAheadGuard(0.5, clock)
    guard.shown("r-1:bounded", truncated=True)
    clock.now += 5
    verdict = guard.check("r-1:bounded")
    assert not verdict.ok and "expand" in verdict.why
    guard.shown("r-1:expanded", truncated=False)
    assert not guard.check("r-1:expanded").ok  # expanding is a change: wait again
    clock.now += 0.5
    assert guard.check("r-1:expanded").ok


def test_desktop_notifications_cannot_carry_escapes():
    body = "pip \x1b]52;c;x\x07 install; \u202eevil \x9b"
    for seq in (osc777("agent-console", body), osc9("agent-console", body)):
        inner = seq[2:-2]
        assert "\x1b" not in inner and "\x07" not in inner and "\x9b" not in inner and "\u202e" not in inner
    assert osc777("t", "a;b").count(";") == 3  # the body cannot add a field
    assert clean("x" * 500) == "x" * 200
    assert sequence("off", "t", "b") == ""


def test_history_query_line():
    parsed = parse_query(
        "pip install verdict:deny source:timeout tool:claude-code:Bash session:a1 since:2h", now=10_000.0
    )
    assert parsed.errors == []
    assert parsed.params == {
        "verdict": "deny",
        "source": "timeout",
        "tool": "claude-code:Bash",
        "session_id": "a1",
        "since": 10_000.0 - 7200,
        "search": "pip install",
        "kinds": [
            "decision",
            "file_event",
            "tripwire",
            "tripwire_resolved",
            "tripwire_reverted",
            "tripwire_thawed",
            "connection",
        ],
    }
    assert parse_query("verdict:maybe", 0).errors == ["verdict: 'maybe' is not one of allow, deny"]
    assert parse_query("since:", 0).errors[0].startswith("since: needs a value")
    assert parse_query("http://x.example", 0).params["search"] == "http://x.example"


def test_the_history_summary_names_what_it_shows():
    """The "everything" filter is everything, and a filter says what it keeps."""
    everything = parse_query("", 0)
    assert everything.params["kinds"] == [
        "decision",
        "file_event",
        "tripwire",
        "tripwire_resolved",
        "tripwire_reverted",
        "tripwire_thawed",
        "connection",
    ]
    assert (
        everything.describe() == "everything"
    )  # and it is: decisions, protected changes, tripwires, connections
    assert parse_query("kind:decision", 0).describe() == "decisions"
    assert parse_query("kind:tripwire pip", 0).describe() == "text contains 'pip' (tripwires)"
    assert parse_query("pip", 0).describe() == "text contains 'pip'"
    assert parse_query("kind:grant", 0).describe() == "events of kind grant"


def test_history_filter_tokens():
    assert set_token("pip verdict:allow", "verdict", "deny") == "pip verdict:deny "
    assert set_token("pip verdict:allow", "verdict", None) == "pip "
    assert token_value("a verdict:deny", "verdict") == "deny"
    assert cycle(("allow", "deny"), None) == "allow"
    assert cycle(("allow", "deny"), "allow") == "deny"
    assert cycle(("allow", "deny"), "deny") is None


def test_time_formats():
    assert (age(5), age(125), age(7200), age(90000)) == ("5s", "2m", "2h", "1d")
    assert ago(720) == "12 min ago"
    assert ago(0.4) == "just now" and ago(0) == "just now"  # never "0 s ago"
    assert age_ago(0.2) == "just now" and age_ago(90) == "1m ago"
    assert parse_duration("8h") == 28800 and parse_duration("90") == 90
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("soon")


def test_the_logic_modules_do_not_load_textual():
    import subprocess
    import sys

    modules = [
        "settings.actions",
        "model.argdiff",
        "model.badges",
        "settings.config",
        "desktop",
        "model.guard",
        "model.historyquery",
        "settings.keymaps",
        "model.pending",
        "settings.resources",
        "model.shellsplit",
        "settings.themefiles",
        "model.timefmt",
        "render.untrusted",
    ]
    code = (
        "import sys\n"
        + "".join(f"import console.tui.{m}\n" for m in modules)
        + "print(','.join(m for m in ('textual', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
