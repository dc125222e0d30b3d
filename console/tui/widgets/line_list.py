"""A list drawn with the Line API: any number of rows, only the visible ones rendered.

The queue (10,000 pending), the history (a million rows, paged in) and the grants all
derive from it. A subclass says how many rows there are and how to draw one; this base
owns the cursor, movement keys (ids from the action table), mouse selection, and an LRU
cache of rendered strips so an unchanged row is never drawn twice. A subclass that
changes rows calls :meth:`rows_changed` with the first index that moved, and only the
visible lines from there down are repainted.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from console.tui.settings.bindings import bindings
from console.tui.settings.roles import role_class, roles


def set_virtual_size(view: ScrollView, size: Size) -> None:
    """Change a Line-API view's scrollable size without relaying out the whole screen.

    ``virtual_size`` is a layout reactive in Textual: assigning it re-arranges every
    widget on the screen, which costs more than drawing the rows that changed. A view
    whose rows come and go many times a second (this list, :class:`TextView`) sets it
    quietly and updates its own scrollbars instead; Textual still lays out if a
    scrollbar has to appear or disappear.
    """
    if size == view.virtual_size:
        return
    view.set_reactive(Widget.virtual_size, size)
    view._scroll_update(size)


class LineList(ScrollView, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = bindings("list")
    # The list's own parts (the cursor row), then the role text (settings/roles.py, styled
    # in console/tui/console.tcss) every list draws: muted, an empty list's note, and the
    # marks of hostile text. A subclass adds the looks of its columns.
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "line-list--cursor",
        "line-list--row",
        "line-list--cursor-blurred",
        *roles("muted", "note", "escape", "lookalike"),
    }
    # A reusable widget's own defaults: how it scrolls, and a cursor that shows in any theme.
    DEFAULT_CSS = """
    LineList {
        background: $surface;
        scrollbar-size-vertical: 1;
        overflow-x: hidden;
    }
    LineList > .line-list--cursor { background: $primary; color: $background; text-style: bold; }
    LineList > .line-list--cursor-blurred { background: $primary 40%; text-style: bold; }
    LineList > .line-list--row { }
    """

    # No repaint of its own: a cursor move repaints the two rows it touches (watch_cursor),
    # and a scroll the whole view. A repaint of every visible row for each key press was
    # most of a frame's work in a long queue.
    cursor: reactive[int] = reactive(0, init=False, always_update=True, repaint=False)

    class Highlighted(Message):
        def __init__(self, source: LineList, index: int) -> None:
            super().__init__()
            self.source = source
            self.index = index

        @property
        def control(self) -> LineList:
            return self.source

    class Opened(Message):
        def __init__(self, source: LineList, index: int) -> None:
            super().__init__()
            self.source = source
            self.index = index

        @property
        def control(self) -> LineList:
            return self.source

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._cache: LRUCache[Hashable, Strip] = LRUCache(4096)
        self._style_generation = 0
        self._style_lookup: dict[str, Style] = {}

    # ------------------------------------------------------------ for subclasses

    def row_count(self) -> int:
        raise NotImplementedError

    def row_key(self, index: int) -> Hashable:
        """What a row's strip depends on besides width and selection (e.g. its id and age)."""
        raise NotImplementedError

    def render_row(self, index: int, width: int, selected: bool) -> Strip:
        raise NotImplementedError

    def component_style(self, name: str) -> Style:
        """A component class's style, looked up once per theme (it is asked for every cell of every row)."""
        style = self._style_lookup.get(name)
        if style is None:
            style = self._style_lookup[name] = self.get_component_rich_style(name)
        return style

    def agent_styles(self) -> dict[str, Style]:
        """What :func:`console.tui.render.present.agent_text` needs to mark hostile text
        in a row: escapes, look-alikes, and its muted markers."""
        get = self.component_style
        muted = get(role_class("muted"))
        return {
            "escape": get(role_class("escape")),
            "lookalike": get(role_class("lookalike")),
            "marker": muted,
            "dim": muted,
        }

    def row_style(self, selected: bool) -> Style:
        if not selected:
            return self.component_style("line-list--row")
        return self.component_style("line-list--cursor" if self.has_focus else "line-list--cursor-blurred")

    # ------------------------------------------------------------ Line API

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if index >= self.row_count():
            return Strip.blank(width, self.rich_style)
        selected = index == self.cursor
        key = (self.row_key(index), width, selected, selected and self.has_focus, self._style_generation)
        strip = self._cache.get(key)
        if strip is None:
            # The selection is the whole row, padding included: one cell of colour is easy to miss.
            pad = self.rich_style + self.row_style(True) if selected else self.rich_style
            strip = self.render_row(index, width, selected).adjust_cell_length(width, pad)
            self._cache[key] = strip
        return strip

    def rows_changed(self, first: int = 0) -> None:
        """Rows from ``first`` on may differ (added, removed, re-filtered): repaint what shows."""
        count = self.row_count()
        set_virtual_size(self, Size(self.scrollable_content_region.width, count))
        if count and self.cursor >= count:
            self.cursor = count - 1
        top = self.scroll_offset.y
        start = max(first, top)
        end = top + self.size.height
        if start < end:
            self.refresh_lines(start, end - start)

    def row_changed(self, index: int) -> None:
        if self.scroll_offset.y <= index < self.scroll_offset.y + self.size.height:
            self.refresh_lines(index)

    def restyle(self) -> None:
        """The theme changed: every cached strip is stale."""
        self._style_generation += 1
        self._cache.clear()
        self._style_lookup.clear()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        set_virtual_size(self, Size(self.scrollable_content_region.width, self.row_count()))

    def on_mount(self) -> None:
        set_virtual_size(self, Size(self.scrollable_content_region.width, self.row_count()))
        self.watch(self.app, "theme", lambda _: self.restyle(), init=False)

    def on_focus(self) -> None:
        self.row_changed(self.cursor)

    def on_blur(self) -> None:
        self.row_changed(self.cursor)

    # ------------------------------------------------------------ cursor

    def watch_cursor(self, old: int, new: int) -> None:
        count = self.row_count()
        if count == 0:
            return
        if new != old:
            self.row_changed(old)
            self.row_changed(new)
        self.scroll_to_region(Region(0, new, 1, 1), animate=False, force=True, immediate=True)
        self.post_message(self.Highlighted(self, new))

    def validate_cursor(self, value: int) -> int:
        count = self.row_count()
        return 0 if count == 0 else max(0, min(value, count - 1))

    def action_cursor_down(self) -> None:
        self.cursor += 1

    def action_cursor_up(self) -> None:
        self.cursor -= 1

    def action_page_down(self) -> None:
        self.cursor += max(1, self.size.height - 1)

    def action_page_up(self) -> None:
        self.cursor -= max(1, self.size.height - 1)

    def action_cursor_first(self) -> None:
        self.cursor = 0

    def action_cursor_last(self) -> None:
        self.cursor = self.row_count() - 1

    def action_open(self) -> None:
        if self.row_count():
            self.post_message(self.Opened(self, self.cursor))

    # ------------------------------------------------------------ mouse

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y
        if index < self.row_count():
            self.cursor = index
            if event.chain >= 2:
                self.post_message(self.Opened(self, index))


def segments(*parts: tuple[str, Style]) -> list[Segment]:
    return [Segment(text, style) for text, style in parts if text]
