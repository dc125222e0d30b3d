"""Finding 10 in the console: an uncertain split warns loudly, shows the raw script, holds the keys.

A real daemon, an agent waiting in a thread, the real app driven by Pilot. The requests
carry the hiding tricks of tests/escapes/test_chain_view_hiding.py; what the operator
sees must name the hidden ``touch``, and approval waits until the raw script has been on
screen in full.
"""

from __future__ import annotations

import re

import pytest
from support.daemon import workspace
from support.items import pending_item
from support.tui import Agent, Clock, make_app, pending_with, screen_text, select, tagged, until

from console.tui.widgets.status_line import StatusLine

SIZE = (130, 46)
WARNING = "the command split below may be incomplete"


DAEMON_POLICY = "approval_timeout_s = 120\n"


@pytest.fixture
def ws():
    return workspace()


@pytest.fixture
def clock():
    return Clock()


def status(app) -> str:
    return app.screen.query_one("#status", StatusLine).message


def warning_is_styled(detail) -> bool:
    """The uncertainty line is drawn in the theme's warning style, not as plain text."""
    style = detail.styles_map()["warning"]
    for _, text in detail._sections:
        for span in text.spans:
            if WARNING in text.plain[span.start : span.end] and span.style == style:
                return True
    return False


@pytest.mark.parametrize(
    "script",
    [
        'cat <<E"O"F\nharmless\nEOF\ntouch MARK\nE"O"F\n',
        "echo $'\\'' ; touch MARK #'",
        "echo $((true); touch MARK)",
    ],
    ids=["heredoc-delimiter", "ansi-c", "arithmetic-lookalike"],
)
async def test_a_hidden_touch_is_shown_with_a_loud_warning_and_the_raw_script(daemon, ws, clock, script):
    op, tag = tagged(ws, executable="/usr/bin/bash", args=["-c", script])
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        detail = app.views["queue"].detail
        seen = screen_text(app)
        assert WARNING in seen and "read the raw script" in seen
        assert "Raw script (bash -c)" in seen
        assert warning_is_styled(detail)
        # The touch is on screen as a numbered command of the split.
        assert re.search(r"^\s*[│▊]?\s*\d+ touch MARK", seen, re.MULTILINE), seen
        # The raw script fits, so it is shown in full: approval works after the idle wait.
        await pilot.press("a")
        assert (await agent.answer())["verdict"] == "allow"


async def test_a_cut_raw_script_must_be_expanded_before_approval(daemon, ws, clock):
    filler = "".join(f"echo line {n}\n" for n in range(80))
    script = filler + "echo $'\\'' ; touch MARK #'\n"
    op, tag = tagged(ws, executable="/usr/bin/bash", args=["-c", script])
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        detail = app.views["queue"].detail
        assert WARNING in screen_text(app)
        assert detail.truncated  # the raw script is longer than the detail shows unexpanded
        await pilot.press("a")
        assert "press x to expand" in status(app)
        assert agent.waiting
        await pilot.press("x")
        await until(pilot, lambda: not detail.truncated)
        assert "echo line 79" in detail.plain
        await pilot.press("a")  # expanding is a change: the guard waits again
        assert "ignored" in status(app)
        clock.advance(1)
        await pilot.press("a")
        assert (await agent.answer())["verdict"] == "allow"


async def test_a_plain_chain_has_no_warning(daemon, ws, clock):
    op, tag = tagged(ws, executable="/usr/bin/bash", args=["-c", "git fetch && make test | tail -5"])
    agent = Agent(daemon, op)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        seen = screen_text(app)
        assert "Shell chain (bash -c)" in seen
        assert WARNING not in seen and "Raw script" not in seen
        await pilot.press("d")
        assert (await agent.answer())["verdict"] == "deny"


def test_the_detail_puts_the_warning_first_and_the_raw_script_before_the_split():
    from console.tui.render.present import PLAIN, DetailOptions, render_request

    script = "echo $'\\'' ; touch MARK #'"
    item = {
        "request_id": "r1",
        "operation": {
            "executable": "/usr/bin/bash",
            "args": ["-c", script],
            "cwd": "/w",
            "workspace_root": "/w",
        },
        "evaluation": {},
    }
    plain = render_request(pending_item(item), [], PLAIN, DetailOptions(), previous=[]).text.plain
    lines = plain.splitlines()
    assert WARNING in "\n".join(lines[:3])  # in the head, above everything else
    assert plain.index("Raw script (bash -c)") < plain.index("Shell chain (bash -c)")
    assert "  " + script in lines  # the raw script, whole, on a line of its own
    long = "\n".join(["echo filler"] * 60 + [script])
    item["operation"]["args"] = ["-c", long]
    cut = render_request(pending_item(item), [], PLAIN, DetailOptions(), previous=[])
    assert cut.truncated  # the guard holds until it is expanded
    full = render_request(pending_item(item), [], PLAIN, DetailOptions(expanded=True), previous=[])
    assert not full.truncated and "  " + script in full.text.plain.splitlines()
