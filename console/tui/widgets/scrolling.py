"""Changing a Line-API view's scrollable size without relaying out the whole screen.

``virtual_size`` is a layout reactive in Textual: assigning it re-arranges every widget
on the screen, which costs more than drawing the rows that changed. A view whose rows
come and go many times a second sets it quietly and updates its own scrollbars instead;
Textual still lays out if a scrollbar has to appear or disappear.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget


def set_virtual_size(view: ScrollView, size: Size) -> None:
    if size == view.virtual_size:
        return
    view.set_reactive(Widget.virtual_size, size)
    view._scroll_update(size)
