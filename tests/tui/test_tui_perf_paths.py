"""The short cuts behind the key-press and submit benchmarks still draw the truth.

A cursor move repaints only the two rows it touches, and the detail keeps the wrapped
lines of a section that comes back unchanged. These tests read the frame the terminal
would get (the compositor's cached lines included), so a stale row or section shows.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from support.daemon import workspace
from support.tui import (
    Agent,
    Clock,
    make_app,
    pending_with,
    screen_strips,
    screen_text,
    select,
    tagged,
    until,
)
from textual.app import App, ComposeResult

from console.tui.widgets.text_view import TextView

SIZE = (130, 42)


DAEMON_POLICY = "approval_timeout_s = 120\n"


def _row(app, tag: str):
    """The frame's line that shows ``tag`` in the queue (the top of the screen)."""
    region = app.views["queue"].view.region
    for line in screen_strips(app)[region.y : region.bottom]:
        segments = list(line)
        if tag in "".join(segment.text for segment in segments):
            return segments
    raise AssertionError(f"{tag} not in the queue")


def _selected(app, tag: str) -> bool:
    cursor = app.views["queue"].view.component_style("line-list--cursor")
    return any(seg.style is not None and seg.style.bgcolor == cursor.bgcolor for seg in _row(app, tag))


async def test_the_cursor_moves_off_one_row_and_onto_the_next(daemon):
    ws, clock = workspace(), Clock()
    tagged_ops = [tagged(ws) for _ in range(3)]
    agents = [Agent(daemon, op) for op, _ in tagged_ops]
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        tag_of = {await pending_with(pilot, app, tag): tag for _, tag in tagged_ops}
        rids = [entry.request_id for entry in app.pending]  # the agents' threads race: queue order
        await select(pilot, app, rids[0], clock)
        first, second = tag_of[rids[0]], tag_of[rids[1]]
        await until(pilot, lambda: _selected(app, first))
        assert not _selected(app, second)
        await pilot.press("down")
        await until(pilot, lambda: app.views["queue"].detail.request_id == rids[1])
        await pilot.pause()
        assert _selected(app, second) and not _selected(app, first)
        await pilot.press("up")
        await until(pilot, lambda: app.views["queue"].detail.request_id == rids[0])
        await pilot.pause()
        assert _selected(app, first) and not _selected(app, second)
        for rid in tag_of:
            with daemon.operator() as other:
                other.call("decide", {"target": rid, "action": "deny"})
        for agent in agents:
            await agent.answer()


async def test_the_detail_shows_the_next_request_and_a_decided_row_leaves(daemon):
    ws, clock = workspace(), Clock()
    (op1, tag1), (op2, tag2) = tagged(ws), tagged(ws)
    a1, a2 = Agent(daemon, op1), Agent(daemon, op2)
    app = make_app(daemon, clock)
    async with app.run_test(size=SIZE) as pilot:
        rid1 = await pending_with(pilot, app, tag1)
        rid2 = await pending_with(pilot, app, tag2)
        await select(pilot, app, rid1, clock)
        detail = app.views["queue"].detail
        await until(pilot, lambda: tag1 in detail.plain)
        with daemon.operator() as other:  # decided elsewhere: the row goes, the detail follows
            other.call("decide", {"target": rid1, "action": "deny"})
        await until(pilot, lambda: detail.request_id == rid2)
        await pilot.pause()
        lines, region = screen_text(app).splitlines(), app.views["queue"].view.region
        queue, below = "\n".join(lines[region.y : region.bottom]), "\n".join(lines[region.bottom :])
        assert tag1 not in queue and tag2 in queue
        assert tag2 in below and tag1 not in below
        assert tag1 not in detail.plain
        assert (await a1.answer())["verdict"] == "deny"
        with daemon.operator() as other:
            other.call("decide", {"target": rid2, "action": "deny"})
        await a2.answer()


class _One(App[None]):
    def compose(self) -> ComposeResult:
        yield TextView(id="view")


def _drawn(app) -> list[tuple[str, Style | None]]:
    return [(seg.text, seg.style) for line in screen_strips(app)[:3] for seg in line if seg.text.strip()]


async def test_a_section_redrawn_with_the_same_words_in_another_style_or_changed_in_place():
    app = _One()
    async with app.run_test(size=(40, 5)) as pilot:
        view = app.query_one(TextView)
        text = Text("same words")
        view.set_sections([("a", text), ("b", Text("other"))])
        await pilot.pause()
        assert any(t.startswith("same words") for t, _ in _drawn(app))
        view.set_sections([("a", Text("same words", style="bold")), ("b", Text("other"))])
        await pilot.pause()
        assert any(
            t.startswith("same words") and style is not None and style.bold for t, style in _drawn(app)
        )
        text.append(" and more")  # the caller changes a Text it gave before, then gives it again
        view.set_sections([("a", text), ("b", Text("other"))])
        await pilot.pause()
        assert "same words and more" in "".join(t for t, _ in _drawn(app))
        assert view.anchor_line("b") == 1


def _view_rows(app, view: TextView) -> list[str]:
    """The frame's rows inside the view's content, as the terminal would get them."""
    region = view.scrollable_content_region
    strips = screen_strips(app)[region.y : region.bottom]
    return [strip.crop(region.x, region.right).text.rstrip() for strip in strips]


def _rich_rows(app, view: TextView, sections: list[tuple[str, Text]]) -> list[str]:
    """Rich's drawing of the whole text at the view's width (every row, not only those shown)."""
    options = app.console.options.update(
        width=view.scrollable_content_region.width, height=None, no_wrap=False, overflow="fold"
    )
    return [
        "".join(segment.text for segment in line).rstrip()
        for _, text in sections
        for line in app.console.render_lines(text, options, pad=False)
    ]


async def test_a_new_text_that_keeps_some_lines_shows_whole_wherever_the_view_is_scrolled():
    long = "a line wider than the view, so that it wraps onto the rows below it"
    texts = [
        Text(f"head\nkept\n{long}\nchanged one\nkept too\n\nlast"),
        Text(f"head\ninserted\nkept\n{long} and more\nchanged two\nkept too\n\nlast"),
        Text("head\nkept\n" + "\n".join(f"row {i}" for i in range(30))),
        Text("head\nkept\n" + "\n".join(f"row {i}" for i in range(1, 30)), style="bold"),
        Text("head\nkept"),
    ]
    app = _One()
    async with app.run_test(size=(40, 8)) as pilot:
        view = app.query_one(TextView)
        for i, text in enumerate(texts):
            sections = [("a", text), ("b", Text("tail\nend"))]
            view.set_sections(sections)
            await pilot.pause()
            if i == 2:  # scrolled down, then the text changes under the view
                view.scroll_to(y=10, animate=False, immediate=True)
                await pilot.pause()
            rows, height, top = (
                _rich_rows(app, view, sections),
                view.scrollable_content_region.height,
                view.scroll_offset.y,
            )
            shown = rows[top : top + height]
            assert _view_rows(app, view) == shown + [""] * (height - len(shown)), i
            assert view.anchor_line("b") == len(_rich_rows(app, view, sections[:1]))
