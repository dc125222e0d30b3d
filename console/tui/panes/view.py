"""What a terminal pane shows: its link's screen painted with the Line API, its title
bar, and scrolling back; the base the pane's other parts (keys, copy mode, mouse,
paste) build on.

After output the pane asks the emulator for the rows that changed (its render state
tracks them), converts only those (through an LRU cache of strips keyed by row content)
and refreshes only those lines, at most once per display frame however fast output
arrives. The messages are named as :class:`~console.tui.panes.terminal_pane.TerminalPane`'s
(``on_terminal_pane_changed``, ``on_terminal_pane_said``), the widget they come from.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from console.contract.inert import inert
from console.terminal import Segment as Cells
from console.tui.panes.pane_keys import PaneKeys
from console.tui.panes.pane_link import LIVE, PaneLink
from console.tui.panes.pane_paint import RowPainter, overlay
from console.tui.panes.state import PaneState, Point

if TYPE_CHECKING:
    from console.tui.app import ConsoleApp

FRAME_S = 1 / 60  # paint at most this often
# ... and spend at most about this share of the time painting one pane: a flood redraws
# every row each frame, and a frame costs reading the rows out of the emulator plus
# Textual rendering them (the larger part, counted in `render_lines`), so under a flood
# a pane paints less often (about 20 frames a second here) and the event loop keeps
# reading and feeding.
PAINT_SHARE = 0.2
MAX_INTERVAL_S = 0.25  # ... but a busy pane still shows its output a few times a second


class PaneView(Widget):
    """Paints ``state.link``'s screen; holds the state every part of the pane shares."""

    app: ConsoleApp

    class Changed(Message, namespace="terminal_pane"):
        """The pane's title bar has something new to say (state, title, scroll position)."""

        def __init__(self, pane: PaneView) -> None:
            super().__init__()
            self.pane = pane

    class Said(Message, namespace="terminal_pane"):
        """Something for the status line (already inert)."""

        def __init__(self, text: str, severity: str = "info") -> None:
            super().__init__()
            self.text = text
            self.severity = severity

    def __init__(self, state: PaneState, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state = state
        self.armed = False
        self._rows: list[list[Cells]] = []
        self._strips: list[Strip] = []
        self._painter: RowPainter | None = None
        self._painted_screen: object = None
        self._painted_generation = -1
        self._cursor: tuple[int, int, bool] = (0, 0, False)
        self._top = 0
        self._last_paint = 0.0
        self._interval = FRAME_S  # between paints: a frame, longer when painting is costly
        self._render_s = 0.0  # what Textual's last render of this pane's lines took
        self._paint_handle: asyncio.TimerHandle | None = None
        self._keys: PaneKeys | None = None
        self._keys_for: object = None
        self._drag_from: Point | None = None
        self._title_key: object = None
        self._styles: dict[str, Style] = {}
        self.paints = 0  # frames painted (for tests and benchmarks)
        self._text_stale = True

    @property
    def link(self) -> PaneLink:
        return self.state.link

    def component_style(self, name: str) -> Style:
        found = self._styles.get(name)
        if found is None:
            found = self._styles[name] = self.get_component_rich_style(name)
        return found

    def say(self, text: str, severity: str = "info") -> None:
        self.post_message(self.Said(text, severity))

    def copy_table(self) -> str:
        return str(getattr(self.app.config, "copy_mode_keys", "vi"))

    def restyle(self) -> None:
        self._styles.clear()
        self._painter = None
        self._painted_screen = None
        self._paint()

    # ------------------------------------------------------------ painting

    def wake(self) -> None:
        """Something changed: paint soon, but at most once per frame."""
        self._text_stale = True  # copy mode reads the lines again
        self._schedule()

    def _schedule(self) -> None:
        if self._paint_handle is not None or not self.is_attached:
            return
        loop = asyncio.get_running_loop()
        delay = self._last_paint + self._interval - loop.time()
        self._paint_handle = loop.call_later(max(0.0, delay), self._paint)

    def paint_now(self) -> None:
        if self._paint_handle is not None:
            self._paint_handle.cancel()
        self._paint()

    def _paint(self) -> None:
        self._last_paint = asyncio.get_running_loop().time()
        start = time.perf_counter()
        try:
            self._paint_rows()
        finally:
            spent = time.perf_counter() - start + self._render_s
            self._interval = min(MAX_INTERVAL_S, max(FRAME_S, spent / PAINT_SHARE))

    def render_lines(self, crop: Region) -> list[Strip]:
        """Textual's render of the refreshed lines, timed: it is most of what a frame
        of this pane costs, and the paint interval counts it (see `PAINT_SHARE`)."""
        start = time.perf_counter()
        try:
            return super().render_lines(crop)
        finally:
            self._render_s = time.perf_counter() - start

    def _paint_rows(self) -> None:
        self._paint_handle = None
        self.paints += 1
        screen = self.link.screen
        self._title_changed()
        if screen is None:
            if self._rows:
                self._rows, self._strips = [], []
            self.refresh()
            return
        if self._painter is None:
            self._painter = RowPainter(self.rich_style)
        everything = screen is not self._painted_screen or self._painted_generation != self.link.generation
        self._painted_screen = screen
        self._painted_generation = self.link.generation
        frame = screen.render(everything=everything)
        painter = self._painter
        dirty: set[int]
        if frame.full or len(self._rows) != frame.rows_count:
            self._rows = [[] for _ in range(frame.rows_count)]
            self._strips = [Strip.blank(frame.cols) for _ in range(frame.rows_count)]
            dirty = set(range(frame.rows_count))
            everything = True
        else:
            dirty = set()
        for y, cells in frame.rows.items():
            if y < len(self._rows):
                self._rows[y] = cells
                self._strips[y] = painter.strip(cells)
                dirty.add(y)
        c = frame.cursor
        cursor = (c.x, c.y, c.visible)
        if cursor != self._cursor:
            dirty.add(self._cursor[1])
            dirty.add(c.y)
            self._cursor = cursor
        if self._place() or everything:
            self.refresh()
            return
        top, height = self._top, self.size.height
        lines = sorted(y - top for y in dirty if top <= y < top + height)
        while lines:  # consecutive rows as one region
            first = last = lines.pop(0)
            while lines and lines[0] == last + 1:
                last = lines.pop(0)
            self.refresh_lines(first, last - first + 1)

    def refresh_lines(self, y: int, count: int = 1) -> None:
        self.refresh(Region(0, y, self.size.width, count))

    def _place(self) -> bool:
        """Which emulator row is the first line (when the pane is shorter than the
        screen, keep the cursor in view). True when it moved."""
        rows, height = len(self._rows), self.size.height
        top = 0
        if height < rows and height > 0:
            top = min(max(0, self._cursor[1] - height + 1), rows - height)
        moved = top != self._top
        self._top = top
        return moved

    def _repaint_cursor(self) -> None:
        y = self._cursor[1] - self._top
        if 0 <= y < self.size.height:
            self.refresh_lines(y)

    def render_line(self, y: int) -> Strip:
        width, height = self.size
        row = y + self._top
        outside = self.component_style("terminal-pane--outside")
        if row >= len(self._strips):
            if not self._strips and y == height // 2:
                text = Text(f"  {self.link.message}", self.component_style("terminal-pane--notice"))
                return Strip(list(text.render(self.app.console))).adjust_cell_length(width, self.rich_style)
            return Strip.blank(width, outside if self._strips else self.rich_style)
        strip = self._decorate(row, self._strips[row])
        return strip.adjust_cell_length(width, outside) if strip.cell_length != width else strip

    def _decorate(self, row: int, strip: Strip) -> Strip:
        state = self.state
        screen = self.link.screen
        if state.matches or state.selection is not None:
            offset = screen.viewport[1] if screen is not None else 0
            absolute = offset + row
            if state.matches:
                current = (
                    state.matches[state.match_index] if 0 <= state.match_index < len(state.matches) else None
                )
                match_style = self.component_style("terminal-pane--match")
                current_style = self.component_style("terminal-pane--current-match")
                for m in state.matches:
                    if m.row == absolute:
                        look = current_style if m == current else match_style
                        strip = overlay(strip, m.col, m.col + m.cells, look)
            chosen = state.ordered_selection()
            if chosen is not None and chosen[0][0] <= absolute <= chosen[1][0]:
                (r0, c0), (r1, c1) = chosen
                first = c0 if absolute == r0 else 0
                last = c1 + 1 if absolute == r1 else strip.cell_length
                look = self.component_style("terminal-pane--selection")
                strip = overlay(strip, first, last, look)
        copy = state.copy
        if copy is not None:
            offset = screen.viewport[1] if screen is not None else 0
            if copy.row == offset + row:
                cells = copy.cursor_cells()
                return overlay(strip, copy.col, copy.col + cells, lambda s: s + Style(reverse=not s.reverse))
            return strip
        x, y, visible = self._cursor
        if visible and y == row and self.link.state == LIVE:
            if self.has_focus:
                strip = overlay(strip, x, x + 1, lambda s: s + Style(reverse=not s.reverse))
            else:
                strip = overlay(strip, x, x + 1, lambda s: s + Style(underline=True))
        return strip

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return container.height

    # ------------------------------------------------------------ title bar

    def title_parts(self) -> dict[str, Any]:
        link = self.link
        screen = link.screen
        info = link.info
        scrolled = 0
        if screen is not None:
            total, offset, rows = screen.viewport
            scrolled = max(0, total - offset - rows)
        return {
            "id": link.session_id,
            "title": inert((info.title or " ".join(info.argv)) if info is not None else "")[:120],
            "terminal_title": inert(screen.title)[:120] if screen is not None else "",
            "state": link.state,
            "message": link.message,
            "read_only": link.read_only,
            "paused": self.paused,
            "scrolled": scrolled,
            "scrolling": self.state.scrolling,
            "armed": self.armed,
            "size": screen.size if screen is not None else None,
            "match": (self.state.match_index + 1, len(self.state.matches)) if self.state.needle else None,
            "copy": self._copy_flag(),
        }

    @property
    def paused(self) -> bool:
        """The tripwire stopped this session: typing would only queue up behind the freeze."""
        info = self.link.info
        return info is not None and info.status_text.startswith("paused by tripwire")

    PAUSED_SAY = "the tripwire paused this session: resume it first (R in the list, r in the queue)"

    def _title_changed(self) -> None:
        parts = self.title_parts()
        key = tuple(parts.values())
        if key != self._title_key:
            self._title_key = key
            self.post_message(self.Changed(self))
            if self.is_mounted:
                self.refresh_bindings()  # which keys the footer shows depends on the state

    def _copy_flag(self) -> str | None:
        copy = self.state.copy
        if copy is None:
            return None
        flag = f"copy {copy.row + 1}/{len(copy.lines)}"
        if copy.anchor is not None:
            flag += " lines" if copy.line_mode else " selecting"
        return flag

    # ------------------------------------------------------------ scrolling back

    def _scroll(self, delta: int) -> None:
        screen = self.link.screen
        if screen is None:
            return
        screen.scroll(delta)
        total, offset, rows = screen.viewport
        at_bottom = offset + rows >= total
        self.state.scrolling = not at_bottom or self.state.scrolling
        self.wake()

    def action_scroll_lines(self, delta: int) -> None:
        self.state.scrolling = True
        self._scroll(delta)

    def action_scroll_pages(self, pages: int) -> None:
        self.state.scrolling = True
        rows = self.link.screen.size[1] if self.link.screen is not None else self.size.height
        self._scroll(pages * max(1, rows - 1))

    def action_scroll_top(self) -> None:
        self.state.scrolling = True
        if self.link.screen is not None:
            self.link.screen.scroll_to_row(0)
        self.wake()

    def action_scroll_bottom(self) -> None:
        if self.link.screen is not None:
            self.link.screen.scroll_to_bottom()
        self.wake()

    def leave_scroll(self) -> None:
        state = self.state
        state.scrolling = False
        state.matches, state.match_index, state.needle = [], -1, ""
        if self.link.screen is not None:
            self.link.screen.scroll_to_bottom()
        self.wake()

    def action_leave_scroll(self) -> None:
        self.leave_scroll()
