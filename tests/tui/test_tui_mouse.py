"""The mouse works everywhere: rows, footer keys, header badges, dialogs, the wheel.

Uses the recorded daemon answers of the snapshot tests (support/snapshot_data.py): what is tested
here is the console's handling of clicks, not the daemon.
"""

from __future__ import annotations

from test_tui_snapshots import loaded, make
from textual import events

from console.tui.screens.history import HistoryScreen
from console.tui.widgets.history_view import HistoryView
from console.tui.widgets.queue_view import QueueView
from console.tui.widgets.status_pills import StatusPills

SIZE = (120, 40)


async def test_clicking_a_row_selects_it_and_shows_its_detail():
    app = make()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.click(QueueView, offset=(10, 3))
        await pilot.pause(0.1)
        queue = app.views["queue"]
        assert queue.view.cursor == 3
        assert queue.detail.request_id == app.pending.entry(3).request_id


async def test_footer_keys_and_badges_are_clickable():
    app = make()
    async with app.run_test(size=(220, 40)) as pilot:  # wide enough for every footer key
        await loaded(pilot)
        footer_key = next(k for k in app.screen.query("FooterKey") if k.action == "show('history')")
        await pilot.click(footer_key)
        await pilot.pause(0.2)
        assert isinstance(app.screen, HistoryScreen)
        bar = app.screen.query_one(StatusPills)
        start = next(s for s, _e, key in bar._spans if key == "pending")
        await pilot.click(StatusPills, offset=(start + 1, 0))
        await pilot.pause(0.2)
        assert app.current_mode == "queue"


async def wheel(pilot, widget, kind: type[events.MouseEvent], offset: tuple[int, int]) -> None:
    """One turn of the wheel over ``widget``: posted to the app as the terminal driver posts it."""
    x, y = widget.region.offset + offset
    pilot.app.post_message(kind(widget, x, y, 0, 0, 0, False, False, False, screen_x=x, screen_y=y))
    await pilot.pause()


async def test_double_click_opens_a_history_entry_and_the_wheel_scrolls():
    app = make()
    async with app.run_test(size=(120, 20)) as pilot:
        await loaded(pilot)
        await pilot.press("2")
        await pilot.pause(0.3)
        view = app.screen.query_one(HistoryView)
        assert len(view.rows) > view.size.height
        await wheel(pilot, view, events.MouseScrollDown, offset=(10, 2))
        await pilot.pause(0.1)
        assert view.scroll_offset.y > 0
        await wheel(pilot, view, events.MouseScrollUp, offset=(10, 2))
        await pilot.pause(0.1)
        assert view.scroll_offset.y == 0
        await pilot.click(HistoryView, offset=(10, 1), times=2)
        await pilot.pause(0.3)
        assert app.screen.CONTEXT == "entry"


async def test_dialog_buttons_answer():
    app = make()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("3")
        await pilot.pause(0.3)
        await pilot.press("r")
        await pilot.pause(0.2)
        assert app.screen.CONTEXT == "confirm"
        await pilot.click("#no")
        await pilot.pause(0.2)
        assert app.screen.CONTEXT == "grants"
