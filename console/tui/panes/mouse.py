"""The mouse in a terminal pane.

Reported to the program when it asked for mouse events (shift bypasses that);
otherwise the wheel scrolls back and a drag selects text, copied as the copy keys copy
it. The program's own clipboard writes are consumed by the emulator and never reach the
operator's terminal.
"""

from __future__ import annotations

from textual import events

from console.tui.panes.copy import CopySearch
from console.tui.panes.state import Point

WHEEL_LINES = 3
_BUTTONS = {1: "left", 2: "middle", 3: "right"}


class MouseInput(CopySearch):
    """The pane's mouse: to the program, or scrolling back and selecting (then copying)."""

    def _point(self, x: int, y: int) -> Point | None:
        screen = self.link.screen
        if screen is None:
            return None
        row = min(max(0, y + self._top), len(self._rows) - 1)
        return screen.viewport[1] + row, max(0, x)

    def _mouse_for_program(self, event: events.MouseEvent) -> bool:
        screen = self.link.screen
        return (
            screen is not None
            and self.link.writable
            and self.state.copy is None
            and not event.shift
            and screen.modes.mouse_tracking != "none"
        )

    def _report(self, action: str, button: str | None, event: events.MouseEvent) -> None:
        mouse = self.link.mouse
        if mouse is None:
            return
        mods = [m for m, on in (("ctrl", event.ctrl), ("alt", event.meta)) if on]
        data = mouse.encode(action, button, event.x, event.y + self._top, mods)
        if data:
            self.link.send(data)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        event.stop()
        self.focus()
        if self._mouse_for_program(event):
            self._report("press", _BUTTONS.get(event.button), event)
            return
        if event.button == 1:
            self._drag_from = self._point(event.x, event.y)
            if self.state.selection is not None:
                self.state.selection = None
                self.refresh()
            self.capture_mouse()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._drag_from is not None:
            here = self._point(event.x, event.y)
            if here is not None:
                self.state.selection = (self._drag_from, here)
                self.refresh()
            return
        if self._mouse_for_program(event):
            self._report("motion", _BUTTONS.get(event.button), event)

    def on_mouse_up(self, event: events.MouseUp) -> None:
        event.stop()
        if self._drag_from is not None:
            self._drag_from = None
            self.capture_mouse(False)
            if self.state.selection is not None and self.state.selection[0] != self.state.selection[1]:
                self.action_copy()
            else:
                self.state.selection = None
            return
        if self._mouse_for_program(event):
            self._report("release", _BUTTONS.get(event.button), event)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        if self._mouse_for_program(event):
            self._report("press", "wheel_up", event)
            return
        self.action_scroll_lines(-WHEEL_LINES)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        if self._mouse_for_program(event):
            self._report("press", "wheel_down", event)
            return
        screen = self.link.screen
        self._scroll(WHEEL_LINES)
        if screen is not None and self.state.scrolling and not self.state.matches:
            total, offset, rows = screen.viewport
            if offset + rows >= total:
                self.state.scrolling = False
                self._title_changed()
