"""A terminal pane: one attached session, painted with the Line API.

The pane's :class:`~console.tui.panes.pane_link.PaneLink` keeps an emulated screen fed
by the daemon's attach stream; the widget paints from that screen, only the rows that
changed and at most once per display frame. While the program can take input every key
goes to it except the prefix and the scroll-back keys; ``prefix [`` is copy mode
(tmux's); the mouse goes to the program when it asked for it, else scrolls back and
selects; a paste that could run or hide something unseen is confirmed first.

The widget is put together from one mixin per concern, each a
:class:`~console.tui.panes.view.PaneView` (:mod:`~console.tui.panes.view`: painting,
title bar, scrolling back, the shared state): :mod:`~console.tui.panes.routing` (keys),
:mod:`~console.tui.panes.copy` (copy mode, search, copying),
:mod:`~console.tui.panes.mouse` and :mod:`~console.tui.panes.paste` (paste
confirmation); their docstrings say how each works. This module adds what makes them
one widget: its bindings, styles, lifecycle and teardown.
"""

from __future__ import annotations

import contextlib
from typing import ClassVar

from textual import events
from textual.binding import BindingType

from console.tui.panes.mouse import MouseInput
from console.tui.panes.pane_link import ENDED, FAILED
from console.tui.panes.paste import PasteConfirm
from console.tui.panes.routing import KeyRouting
from console.tui.settings.bindings import bindings


class TerminalPane(KeyRouting, PasteConfirm, MouseInput, can_focus=True):
    """Paints ``state.link``'s screen and sends it keys, mouse and paste."""

    ALLOW_SELECT = False
    # Shown in the footer; the pane runs them itself (it takes every key first).
    BINDINGS: ClassVar[list[BindingType]] = bindings("root")
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "terminal-pane--cursor",
        "terminal-pane--selection",
        "terminal-pane--match",
        "terminal-pane--current-match",
        "terminal-pane--outside",
        "terminal-pane--notice",
    }
    DEFAULT_CSS = """
    TerminalPane { background: $background; color: $foreground; height: 1fr; width: 1fr; }
    TerminalPane > .terminal-pane--cursor { text-style: reverse; }
    TerminalPane > .terminal-pane--selection { background: $primary 50%; }
    TerminalPane > .terminal-pane--match { background: $warning 40%; }
    TerminalPane > .terminal-pane--current-match { background: $warning; color: $background; }
    TerminalPane > .terminal-pane--outside { background: $panel; color: $text-muted; }
    TerminalPane > .terminal-pane--notice { color: $text-muted; text-style: italic; }
    """

    # ------------------------------------------------------------ lifecycle

    def on_mount(self) -> None:
        self.link.on_update = self.wake
        self.watch(self.app, "theme", lambda _: self.restyle(), init=False)
        self._paint()

    def on_unmount(self) -> None:
        if self.link.on_update == self.wake:
            self.link.on_update = lambda: None
        if self._paint_handle is not None:
            self._paint_handle.cancel()
            self._paint_handle = None

    def on_resize(self, event: events.Resize) -> None:
        self.link.resize(event.size.width, event.size.height)
        self._place()
        self.refresh()

    def on_focus(self) -> None:
        self._repaint_cursor()
        self.link.resize(self.size.width, self.size.height)

    def on_blur(self) -> None:
        self.armed = False
        self._repaint_cursor()

    # ------------------------------------------------------------ teardown

    async def detach(self) -> None:
        with contextlib.suppress(Exception):
            await self.link.close()
        if self.state.task is not None:
            self.state.task.cancel()

    @property
    def ended(self) -> bool:
        return self.link.state in (ENDED, FAILED)
