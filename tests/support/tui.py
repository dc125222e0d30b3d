"""Driving the real console against a real daemon: agents in threads, a hand-wound clock, frames."""

from __future__ import annotations

import asyncio
import re
import threading
import uuid
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.errors import NoWidget
from textual.geometry import Region
from textual.message import Message
from textual.notifications import Notification, Notify
from textual.strip import Strip
from textual.widget import Widget

from console.tui.app import ConsoleApp
from console.tui.settings.config import Config, Notifications
from console.tui.settings.prepared import prepare
from support.daemon import DaemonProcess, operation


class Clock:
    """The typed-ahead guard's clock, advanced by the test instead of by sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = 1.0) -> None:
        self.now += seconds


class Agent:
    """One submission from its own thread and connection, as a real agent makes it."""

    def __init__(
        self,
        daemon: DaemonProcess,
        op: dict[str, Any],
        identity: dict[str, Any] | None = None,
        *,
        per_call: bool = False,
        **kw: Any,
    ) -> None:
        self.op = op
        self.box: dict[str, Any] = {}
        self.identity: dict[str, Any] = {}  # the daemon-issued agent identity, once connected

        def run() -> None:
            try:
                with daemon.agent(per_call=per_call) as agent:
                    if identity is not None:  # the same agent as an earlier connection
                        agent.hello = agent.call(
                            "hello", {"agent_id": identity["id"], "agent_secret": identity["secret"]}
                        )
                    self.identity = agent.hello["agent"]
                    self.box["answer"] = agent.submit(op, **kw)
            except Exception as exc:
                self.box["error"] = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    @property
    def waiting(self) -> bool:
        return self.thread.is_alive()

    async def answer(self, timeout: float = 20) -> dict[str, Any]:
        await asyncio.to_thread(self.thread.join, timeout)
        assert not self.thread.is_alive(), "the agent is still waiting for a decision"
        if "error" in self.box:
            raise self.box["error"]
        return self.box["answer"]


def tagged(ws, **fields: Any) -> tuple[dict[str, Any], str]:
    """An escalating operation with a unique argument to find it by."""
    tag = "t" + uuid.uuid4().hex[:10]
    fields.setdefault("network", "any")
    fields.setdefault("args", [])
    fields["args"] = [*fields["args"], f"--tag={tag}"]
    return operation(ws, **fields), tag


class Notices:
    """The notifications an app raised, in order: pass it as ``app.run_test(message_hook=...)``.

    Textual delivers each ``notify`` as a Notify message, and run_test's public hook sees every
    message dispatched.
    """

    def __init__(self) -> None:
        self.raised: list[Notification] = []

    def __call__(self, message: Message) -> None:
        if isinstance(message, Notify):
            self.raised.append(message.notification)


def make_app(daemon: DaemonProcess, clock: Clock, **config: Any) -> ConsoleApp:
    config.setdefault("notifications", Notifications(toast=True, bell=False, desktop="off"))
    settings = prepare(Config(**config))
    return ConsoleApp(settings, state_dir=str(daemon.state_dir), monotonic=clock)


async def until(pilot, predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        value = predicate()
        if value:
            return value
        await pilot.pause(0.02)
    raise AssertionError("condition not met in time")


async def pending_with(pilot, app: ConsoleApp, tag: str) -> str:
    """Wait until the request carrying ``tag`` is in the console's queue; its request id."""

    def find() -> str | None:
        for entry in app.pending:
            if tag in entry.item.command:
                return entry.request_id
        return None

    return await until(pilot, find)


async def select(pilot, app: ConsoleApp, rid: str, clock: Clock) -> None:
    """Select a request and let it be on screen long enough for the guard."""
    await pilot.press("1")
    await until(pilot, lambda: app.current_mode == "queue")
    assert app.views["queue"].select_request(rid)
    await until(pilot, lambda: app.views["queue"].detail.request_id == rid)
    await pilot.pause()
    clock.advance(5)


def screen_strips(app: App[Any]) -> list[Strip]:
    """The current screen, line by line, as Textual composes it, through public API only.

    Each cell comes from the widget on top there (``Screen.get_widget_at``), rendered by
    the widget itself (``Widget.render_lines``), so overlays, scrollbars and borders come
    out as drawn.
    """
    screen = app.screen
    width, height = screen.size
    lines: list[Strip] = []
    for y in range(height):
        owners: list[tuple[Widget, Region] | None] = []
        for x in range(width):
            try:
                owners.append(screen.get_widget_at(x, y))
            except NoWidget:
                owners.append(None)
        parts: list[Strip] = []
        x = 0
        while x < width:
            owner = owners[x]
            end = x + 1
            while (
                end < width and owners[end] is not None and owner is not None and owners[end][0] is owner[0]
            ):
                end += 1
            if owner is None:
                parts.append(Strip.blank(end - x))
            else:
                widget, region = owner
                row = widget.render_lines(Region(0, y - region.y, region.width, 1))[0]
                parts.append(row.crop(x - region.x, end - region.x))
            x = end
        lines.append(Strip.join(parts))
    return lines


def frame(app: ConsoleApp) -> str:
    """What would be written to the terminal for the current screen: its lines, cursor-addressed."""
    out = []
    for y, line in enumerate(screen_strips(app)):
        out.append(f"\x1b[{y + 1};1H")
        out.append(line.render(app.console))
    return "".join(out)


_OURS = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\d+;\d+H|\x1b\[\?[0-9;]*[hl]")


def foreign_controls(raw: str) -> str:
    """What is left of a frame once Textual's own SGR and cursor moves are removed: must be empty."""
    rest = _OURS.sub("", raw)
    bad = re.findall(
        r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]", rest
    )
    return "".join(bad)


def screen_text(app: ConsoleApp) -> str:
    """The frame as plain text lines."""
    return "\n".join(strip.text for strip in screen_strips(app))
