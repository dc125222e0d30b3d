"""Keys typed right after "/" land in the search box even when the list is busy.

Textual hands a key to the widget focused when the key arrives. A list still busy with
earlier work (a slow machine, a big page) had "/" queued behind that work, and the
letters typed after it queued behind "/", still addressed to the list: "/python3" on a
loaded machine searched for nothing. The keys that move the focus are priority bindings,
so the focus moves as the key arrives and the letters after it follow it.
"""

from __future__ import annotations

import asyncio

from support.snapshot_data import NOW, ReplayClient
from textual import events
from textual.widgets import Input

from console.tui.app import ConsoleApp
from console.tui.settings.config import Config, Notifications
from console.tui.settings.prepared import prepare


def make() -> ConsoleApp:
    settings = prepare(Config(notifications=Notifications(toast=False, bell=False, desktop="off")))

    async def connect() -> ReplayClient:
        return ReplayClient()

    return ConsoleApp(settings, connect=connect, clock=lambda: NOW, monotonic=lambda: 0.0)  # type: ignore[arg-type]


def typed(app: ConsoleApp, text: str) -> None:
    """Keys as the terminal sends them: all at once, none waiting for the one before."""
    for ch in text:
        key = "slash" if ch == "/" else ch
        app.post_message(events.Key(key, ch))


async def busy(widget) -> None:
    widget.call_later(asyncio.sleep, 0.3)  # the focused list is behind on its own work


async def until(pilot, predicate, tries: int = 300) -> None:
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause(0.01)
    raise AssertionError("never happened")


async def test_keys_typed_after_slash_reach_the_history_search_while_the_list_is_busy():
    app = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.pending.total > 0)
        await pilot.press("2")
        screen = app.views["history"]
        await until(pilot, lambda: app.screen is screen and screen.view.has_focus)
        await busy(screen.view)
        typed(app, "/python3")
        box = screen.query_one("#history-search", Input)
        await until(pilot, lambda: box.value == "python3")
        typed(app, "/x")  # "/" in the box is text, not the search key again
        await until(pilot, lambda: box.value == "python3/x")


async def test_keys_typed_after_slash_reach_the_queue_filter_while_the_list_is_busy():
    app = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.pending.total > 0)
        queue = app.views["queue"]
        await until(pilot, lambda: queue.view.has_focus)
        await busy(queue.view)
        typed(app, "/git")
        box = queue.query_one("#queue-filter", Input)
        await until(pilot, lambda: box.value == "git")
        typed(app, "/a")
        await until(pilot, lambda: box.value == "git/a")
