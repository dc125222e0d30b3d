"""The console end to end: a real daemon, agents waiting in threads, keys pressed in the real app.

Each test checks what the agent receives, what the daemon recorded, and what is on screen.
"""

from __future__ import annotations

import pytest
from support.daemon import workspace
from support.tui import Agent, Clock, Notices, make_app, pending_with, screen_text, select, tagged, until

from console.tui.screens.grants import GrantsScreen
from console.tui.screens.history import HistoryScreen
from console.tui.settings.config import Notifications
from console.tui.widgets.entry_view import EntryView
from console.tui.widgets.grants_view import GrantsView
from console.tui.widgets.status_line import StatusLine

SIZE = (130, 42)


DAEMON_POLICY = "approval_timeout_s = 120\n"


@pytest.fixture
def ws():
    return workspace()


@pytest.fixture
def clock():
    return Clock()


def status(app) -> str:
    return app.screen.query_one("#status", StatusLine).message


async def test_approve_once_reaches_the_waiting_agent(daemon, ws, clock):
    op, tag = tagged(ws)
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        await pilot.press("a")
        answer = await agent.answer()
        assert (answer["verdict"], answer["source"], answer["scope"]) == ("allow", "operator", "once")
        assert answer["request_id"] == rid
        await until(pilot, lambda: app.pending.get(rid) is None)
        assert "approved once" in status(app)


async def test_the_guard_ignores_an_approval_typed_ahead(daemon, ws, clock):
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        op, tag = tagged(ws)
        agent = Agent(daemon, op)
        rid = await pending_with(pilot, app, tag)
        assert app.views["queue"].select_request(rid)
        await until(pilot, lambda: app.views["queue"].detail.request_id == rid)
        await pilot.press("a")  # no time on screen yet
        assert "ignored: shown" in status(app)
        await pilot.pause(0.3)
        assert agent.waiting and app.pending.get(rid) is not None
        clock.advance(1)
        await pilot.press("a")
        assert (await agent.answer())["verdict"] == "allow"


async def test_truncated_text_must_be_expanded_before_approving(daemon, ws, clock):
    op, tag = tagged(ws, justification="x" * 16_000)  # the daemon's cap is 16 Ki characters
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        assert "more characters hidden" in screen_text(app) or app.views["queue"].detail.truncated
        await pilot.press("a")
        assert "press x to expand" in status(app)
        assert agent.waiting
        await pilot.press("x")
        await pilot.press("a")  # expanding is a change: the guard waits again
        assert "ignored" in status(app)
        clock.advance(1)
        await pilot.press("a")
        assert (await agent.answer())["verdict"] == "allow"


async def test_deny_with_a_note_tells_the_agent_why(daemon, ws, clock):
    op, tag = tagged(ws)
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        await pilot.press("n")
        await until(pilot, lambda: app.screen.CONTEXT == "modal")
        await pilot.press(*"use the vendored copy")
        await pilot.press("enter")
        answer = await agent.answer()
        assert (answer["verdict"], answer["reason"], answer["note"]) == (
            "deny",
            "operator_denied",
            "use the vendored copy",
        )


async def test_plain_deny_needs_no_wait(daemon, ws, clock):
    op, tag = tagged(ws)
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        assert app.views["queue"].select_request(rid)
        await until(pilot, lambda: app.views["queue"].detail.request_id == rid)
        await pilot.press("d")
        assert (await agent.answer())["verdict"] == "deny"


async def test_approve_for_the_session_settles_the_next_one_and_shows_a_grant(daemon, ws, clock):
    op, tag = tagged(ws, session_id="agent-s1")
    first = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        await pilot.press("s")
        answer = await first.answer()
        assert (answer["verdict"], answer["scope"]) == ("allow", "session")
        # The grant belongs to the agent the daemon identified, not to the label it sent:
        # the same agent reconnecting is allowed, another agent sending the label is not.
        again = await Agent(daemon, op, first.identity).answer()
        assert (again["verdict"], again["source"], again["reason"]) == ("allow", "grant", "grant_session")
        other = Agent(daemon, op)
        rid2 = await pending_with(pilot, app, tag)
        assert other.waiting and rid2 != rid
        with daemon.operator() as operator:
            operator.call("decide", {"target": rid2, "action": "deny"})
        assert (await other.answer())["verdict"] == "deny"

        await pilot.press("3")
        await until(pilot, lambda: isinstance(app.screen, GrantsScreen))
        view = app.screen.query_one(GrantsView)
        grant = await until(
            pilot, lambda: next((g for g in view.rows if g.fingerprint == answer["fingerprint"]), None)
        )
        assert grant.scope == "session" and grant.session_id == first.identity["id"]
        await pilot.pause()
        assert grant.id in screen_text(app)


async def test_the_queue_shows_who_asked_and_an_anonymous_agent_gets_no_session_grant(daemon, ws, clock):
    op, tag = tagged(ws, session_id="label-x")
    agent = Agent(daemon, op, per_call=True)  # one call that reached no agent process
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        await pilot.pause()
        short = agent.identity["id"][:10]
        assert agent.identity["anonymous"] is True
        shown = screen_text(app)
        row = next(line for line in shown.splitlines() if tag in line and "anonymous" in line)
        assert f"anonymous {short}" in row
        assert f"asked by anonymous {short} — one call that reached no agent process" in shown
        await pilot.press("s")
        await until(pilot, lambda: "anonymous" in status(app))
        assert agent.waiting  # nothing was decided
        await pilot.press("a")
        assert (await agent.answer())["scope"] == "once"


async def test_approve_always_with_an_expiry_then_revoke(daemon, ws, clock):
    op, tag = tagged(ws)
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        await pilot.press("A")
        await until(pilot, lambda: app.screen.CONTEXT == "modal")
        await pilot.press(*"soon", "enter")
        assert "not a duration" in screen_text(app)
        await pilot.press(*["backspace"] * 4, "8", "h", "enter")
        answer = await agent.answer()
        assert (answer["verdict"], answer["scope"]) == ("allow", "always")
        await pilot.press("3")
        await until(pilot, lambda: isinstance(app.screen, GrantsScreen))
        view = app.screen.query_one(GrantsView)
        grant = await until(
            pilot, lambda: next((g for g in view.rows if g.fingerprint == answer["fingerprint"]), None)
        )
        assert 8 * 3600 - 60 < grant.expires_at - grant.created_at <= 8 * 3600
        view.cursor = view.rows.index(grant)
        await pilot.press("r")
        await until(pilot, lambda: app.screen.CONTEXT == "confirm")
        await pilot.press("y")
        await until(pilot, lambda: all(g.id != grant.id for g in view.rows))
        asked = Agent(daemon, op)  # revoked: the operator is asked again
        rid2 = await pending_with(pilot, app, tag)
        assert rid2 != rid and asked.waiting
        app.views["queue"].select_request(rid2)
        await pilot.press("1", "d")
        assert (await asked.answer())["verdict"] == "deny"


async def test_deny_always_adds_a_deny_rule(daemon, ws, clock):
    op, tag = tagged(ws)
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        await pilot.press("D")
        assert (await agent.answer())["verdict"] == "deny"
        again = await Agent(daemon, op).answer()
        assert (again["verdict"], again["reason"]) == ("deny", "deny_rule")


async def test_history_finds_a_decision_and_opens_it(daemon, ws, clock):
    op, tag = tagged(ws, justification="needed for the release")
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        await pilot.press("d")
        await agent.answer()
        await pilot.press("2")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("slash", *tag, "enter")
        screen = app.screen
        await until(pilot, lambda: [r.request_id for r in screen.view.rows] == [rid])
        assert tag in screen_text(app)
        await pilot.press("v")  # verdict:allow hides the denial
        await until(pilot, lambda: screen.view.rows == [] and "verdict:allow" in screen.search_box.value)
        await pilot.press("v")
        await until(pilot, lambda: [r.request_id for r in screen.view.rows] == [rid])
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.CONTEXT == "entry" and app.screen.detail is not None)
        await pilot.pause()
        text = app.screen.query_one(EntryView).plain  # the whole entry, scrolled or not
        assert "DENY" in text and "needed for the release" in text
        # The history tells what was asked, as the queue did: the escalation is kept.
        assert "Escalations (1)" in text and "external_network" in text and "No escalations" not in text
        await pilot.press("escape")
        await until(pilot, lambda: app.screen.CONTEXT == "history")


async def test_a_denial_in_the_history_becomes_a_grant(daemon, ws, clock):
    op, tag = tagged(ws)
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        await pilot.press("d")
        await agent.answer()
        await pilot.press("2")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("slash", *tag, "enter")
        await until(pilot, lambda: [r.request_id for r in app.screen.view.rows] == [rid])
        await pilot.press("g")
        await until(pilot, lambda: app.screen.CONTEXT == "confirm")
        await pilot.press("y")
        again = await Agent(daemon, op).answer()
        assert (again["verdict"], again["source"], again["reason"]) == ("allow", "grant", "grant_always")


async def test_queue_filter_and_palette_jump(daemon, ws, clock):
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        op1, tag1 = tagged(ws)
        op2, tag2 = tagged(ws, args=["--other"])
        a1, a2 = Agent(daemon, op1), Agent(daemon, op2)
        rid1 = await pending_with(pilot, app, tag1)
        rid2 = await pending_with(pilot, app, tag2)
        await pilot.press("slash", *tag2)
        await until(pilot, lambda: [e.request_id for e in app.pending] == [rid2])
        await pilot.press("escape")
        await until(pilot, lambda: app.pending.index_of(rid1) is not None)
        fp = app.pending.get(rid1).fingerprint
        await pilot.press("ctrl+p")
        await until(pilot, lambda: app.screen.id == "--command-palette")
        await pilot.press(*fp[:10])
        await pilot.pause(0.5)
        await pilot.press("enter")
        queue = app.views["queue"]
        await until(pilot, lambda: queue.detail.request_id == rid1)
        await pilot.press("d")
        await pilot.press("down")
        if queue.detail.request_id != rid2:
            queue.select_request(rid2)
        await pilot.pause()
        await pilot.press("d")
        assert (await a1.answer())["verdict"] == "deny"
        assert (await a2.answer())["verdict"] == "deny"


async def test_help_shows_the_keys_of_the_keymap_in_force(daemon, clock):
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await until(pilot, lambda: app.screen.CONTEXT == "help")
        assert "keymap 'default'" in screen_text(app)
        await pilot.press("escape")
        app.use_keymap("vim")
        await pilot.press("question_mark")
        await until(pilot, lambda: app.screen.CONTEXT == "help")
        text = screen_text(app)
        assert "keymap 'vim'" in text and "cursor-first" in text
        await pilot.press("escape")
        assert app.keys_in_force["cursor-last"].startswith("G")


async def test_switching_theme_and_keymap_from_the_palette(daemon, clock):
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await until(pilot, lambda: app.screen.id == "--command-palette")
        await pilot.press(*"Theme: light")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await until(pilot, lambda: app.theme == "light")
        await pilot.press("ctrl+p")
        await until(pilot, lambda: app.screen.id == "--command-palette")
        await pilot.press(*"Keymap: emacs")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await until(pilot, lambda: app.keymap_name == "emacs")
        await pilot.press("alt+x")  # emacs moved the palette
        await until(pilot, lambda: app.screen.id == "--command-palette")


async def test_notifications_when_the_operator_is_elsewhere(daemon, ws, clock):
    app = make_app(daemon, clock, notifications=Notifications(toast=True, bell=True, desktop="osc777"))
    rang, escapes = [], []
    app.bell = lambda: rang.append(1)  # type: ignore[method-assign]
    app.write_escape = escapes.append  # type: ignore[method-assign]
    seen = Notices()
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        await pilot.press("2")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        op, tag = tagged(ws, justification="x", args=["\x1b]52;c;evil\x07"])
        agent = Agent(daemon, op)
        await pending_with(pilot, app, tag)
        await until(pilot, lambda: escapes)
        assert rang
        assert escapes[0].startswith("\x1b]777;notify;agent-console;new request: ")
        assert "\x07" not in escapes[0] and escapes[0].count("\x1b") == 2  # its own start and end only
        assert any("new request" in n.message for n in seen.raised)
        # on the queue itself nothing is announced
        rang.clear()
        await pilot.press("1")
        op2, tag2 = tagged(ws)
        agent2 = Agent(daemon, op2)
        await pending_with(pilot, app, tag2)
        await pilot.pause(0.6)
        assert rang == []
        for a in (agent, agent2):
            rid = next(e.request_id for e in app.pending if e.item.operation.args == a.op["args"])
            await select(pilot, app, rid, clock)
            await pilot.press("d")
            await a.answer()


async def test_the_remaining_keys(daemon, ws, clock):
    op, tag = tagged(ws)
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        fp = app.pending.get(rid).fingerprint
        detail = app.views["queue"].detail
        assert fp not in detail.plain and fp[:16] in detail.plain
        await pilot.press("f")
        await pilot.pause()
        assert fp in detail.plain
        await pilot.press("s")  # a session grant, to revoke and find again below
        await agent.answer()

        await pilot.press("2")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("o")
        await until(pilot, lambda: "source:operator" in app.screen.search_box.value)
        await pilot.press("slash", *tag, "enter")
        await until(pilot, lambda: [r.request_id for r in app.screen.view.rows] == [rid])
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.CONTEXT == "entry" and app.screen.detail is not None)
        await pilot.pause()
        entry = app.screen.query_one("EntryView")
        await pilot.press("o")
        await pilot.pause()
        assert entry.scroll_offset.y == min(entry.anchor_line("outcome"), entry.max_scroll_y)
        assert "Outcome" in screen_text(app)
        await pilot.press("escape")

        await pilot.press("3")
        await until(pilot, lambda: isinstance(app.screen, GrantsScreen))
        view = app.screen.query_one(GrantsView)
        grant = await until(pilot, lambda: next((g for g in view.rows if g.fingerprint == fp), None))
        view.cursor = view.rows.index(grant)
        await pilot.press("r")
        await until(pilot, lambda: app.screen.CONTEXT == "confirm")
        await pilot.press("y")
        await until(pilot, lambda: all(g.id != grant.id for g in view.rows))
        await pilot.press("i")  # inactive ones too
        await until(pilot, lambda: any(g.id == grant.id and g.revoked_at for g in view.rows))
        assert "revoked" in screen_text(app)

        theme, keymap = app.theme, app.keymap_name
        await pilot.press("f7")
        assert app.theme != theme
        await pilot.press("f8")
        assert app.keymap_name != keymap


async def test_requests_decided_elsewhere_or_timed_out_leave_the_queue(daemon, ws, clock):
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        op, tag = tagged(ws)
        agent = Agent(daemon, op)
        rid = await pending_with(pilot, app, tag)
        with daemon.operator() as other:  # a second operator, e.g. `agent-console deny` over SSH
            other.call("decide", {"target": rid, "action": "deny"})
        await until(pilot, lambda: app.pending.get(rid) is None)
        assert (await agent.answer())["verdict"] == "deny"

        op2, tag2 = tagged(ws)
        late = Agent(daemon, op2, timeout_s=1)
        rid2 = await pending_with(pilot, app, tag2)
        await until(pilot, lambda: app.pending.get(rid2) is None)
        assert (await late.answer())["reason"] == "approval_timeout"
        await pilot.press("2")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("slash", *f"{tag2} source:timeout", "enter")
        await until(pilot, lambda: [r.request_id for r in app.screen.view.rows] == [rid2])


async def test_the_queue_filter_shows_one_kind_of_agent(daemon, ws, clock):
    """Every agent's requests share one queue; `agent:KIND` in the filter shows one kind."""
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        codex_op, codex_tag = tagged(ws, tool="codex:Bash", session_id="codex-session")
        gemini_op, gemini_tag = tagged(ws, tool="gemini:run_shell_command", session_id="gemini-session")
        codex, gemini = Agent(daemon, codex_op), Agent(daemon, gemini_op)
        codex_rid = await pending_with(pilot, app, codex_tag)
        gemini_rid = await pending_with(pilot, app, gemini_tag)
        await pilot.press("slash", *"agent:gemini")
        await until(pilot, lambda: [e.request_id for e in app.pending] == [gemini_rid])
        assert gemini_tag in screen_text(app) and codex_tag not in screen_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: app.pending.index_of(codex_rid) is not None)
        for rid in (codex_rid, gemini_rid):
            app.views["queue"].select_request(rid)
            await until(pilot, lambda rid=rid: app.views["queue"].detail.request_id == rid)
            await pilot.press("d")
        assert (await codex.answer())["verdict"] == "deny"
        assert (await gemini.answer())["verdict"] == "deny"
