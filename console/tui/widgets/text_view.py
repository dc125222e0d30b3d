"""Read-only rich text drawn with the Line API: only the lines a frame shows are drawn.

The request detail and the history entry are long, change often (every new selection)
and may hold 100,000 characters once expanded. A new text is split into its logical
lines. A line that fits the width is one row and is drawn only when a frame shows it; a
longer one is wrapped at once, since its row count sets the scroll size. Drawn lines are
kept in an LRU cache by what they depend on (content, width, base style), so the lines
that come back in the next request's detail (its labels, the sandbox's limits) are not
drawn again, and only the rows whose line changed are repainted. Sections keep their
first row so a view can jump to one (the outcome of a history entry).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable
from typing import ClassVar, NamedTuple

from rich.cells import cell_len
from rich.console import JustifyMethod, OverflowMethod
from rich.style import Style
from rich.text import Span, Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from console.tui.settings.roles import DETAIL_LOOKS
from console.tui.widgets.line_list import set_virtual_size


class _Key:
    """A line's content as a cache key, hashed once: a frame looks it up for each row it shows."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, _Key) and self._hash == other._hash and self.value == other.value
        )


class _Line(NamedTuple):
    """One logical line of a section: all that its drawn rows depend on but the width and base style.

    The line's Text is made only to draw it: most lines of a new detail are in the cache.
    """

    key: _Key
    plain: str
    spans: list[Span]
    style: str | Style
    settings: tuple[JustifyMethod | None, OverflowMethod | None, bool | None, str, int | None]

    def text(self) -> Text:
        justify, overflow, no_wrap, end, tab_size = self.settings
        return Text(
            self.plain,
            self.style,
            justify=justify,
            overflow=overflow,
            no_wrap=no_wrap,
            end=end,
            tab_size=tab_size,
            spans=list(self.spans),
        )


class TextView(ScrollView, can_focus=True):
    # A reusable widget's own defaults: a padded surface that scrolls vertically only.
    DEFAULT_CSS = """
    TextView { background: $surface; padding: 0 1; overflow-x: hidden; overflow-y: auto; scrollbar-size-vertical: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._sections: list[tuple[str, Text]] = []
        # Each section's logical lines as last split, by its place and name: a new
        # selection's detail is set two or three times in a row (the request, then its
        # previous decisions, then the session's changes) and most sections come back unchanged.
        self._split: dict[tuple[int, str], tuple[Hashable, list[_Line]]] = {}
        self._logical: list[_Line] = []
        self._starts: list[tuple[str, int]] = []  # each named section's first logical line
        self._rows: list[tuple[int, int]] = []  # each row: (its logical line, its row within it)
        self._anchors: dict[str, int] = {}
        self._laid_width = -1  # the width _rows were laid out for (-1: not laid out)
        self._drawn: LRUCache[tuple[_Key, int, Style], list[Strip]] = LRUCache(2048)
        self._frame: tuple[int, Style] | None = None  # width and base style while a frame renders

    def set_sections(self, sections: list[tuple[str, Text]]) -> None:
        """Replace the content: named pieces of text, shown one after another."""
        self._sections = sections
        logical: list[_Line] = []
        starts: list[tuple[str, int]] = []
        split: dict[tuple[int, str], tuple[Hashable, list[_Line]]] = {}
        for i, (name, text) in enumerate(sections):
            content = _content(text)
            cached = self._split.get((i, name))
            lines = cached[1] if cached is not None and cached[0] == content else _split_lines(text)
            split[(i, name)] = (content, lines)
            if name:
                starts.append((name, len(logical)))
            logical.extend(lines)
        self._split = split
        before = self._visible_keys()
        was_laid_out = self._laid_width
        self._logical = logical
        self._starts = starts
        self._laid_width = -1
        self._layout()
        if self._laid_width < 0 or self._laid_width != was_laid_out:
            self.refresh()
            return
        # Only the rows whose line changed are drawn again; the others keep their cached frame.
        top, after = self._visible_keys()
        if before[0] != top or len(before[1]) != len(after):
            self.refresh()
            return
        changed = [y for y, (old, new) in enumerate(zip(before[1], after, strict=True)) if old != new]
        if changed:
            width = max(self.virtual_size.width, self.size.width)
            self.refresh(*(Region(0, first, width, count) for first, count in _runs(changed)))

    def set_text(self, text: Text) -> None:
        self.set_sections([("", text)])

    @property
    def plain(self) -> str:
        return "\n".join(text.plain for _, text in self._sections)

    @property
    def _lines(self) -> list[Strip]:
        """Every row of the text, drawn (for a reader of the whole text; a frame draws only what it shows)."""
        width, base = self._width_and_base()
        self._layout()
        return [self._row_strip(index, width, base) for index in range(len(self._rows))]

    def anchor_line(self, name: str) -> int | None:
        return self._anchors.get(name)

    def _width_and_base(self) -> tuple[int, Style]:
        return self._frame or (self.scrollable_content_region.width, self.rich_style)

    def _layout(self) -> None:
        """Give each logical line its rows at the current width (a line that fits takes one)."""
        width, base = self._width_and_base()
        if width <= 0 or width == self._laid_width:
            return
        rows: list[tuple[int, int]] = []
        first_row: list[int] = []
        for number, line in enumerate(self._logical):
            first_row.append(len(rows))
            rows.extend((number, row) for row in range(self._height(line, width, base)))
        self._rows = rows
        self._anchors = {
            name: first_row[start] if start < len(first_row) else len(rows) for name, start in self._starts
        }
        self._laid_width = width
        set_virtual_size(self, Size(width, len(rows)))

    def _height(self, line: _Line, width: int, base: Style) -> int:
        drawn = self._drawn.get((line.key, width, base))
        if drawn is not None:
            return len(drawn)
        if line.settings[3] == "\n" and "\t" not in line.plain and cell_len(line.plain) <= width:
            return 1  # Rich wraps a line only where it is wider than the width
        return len(self._draw(line, width, base))

    def _draw(self, line: _Line, width: int, base: Style) -> list[Strip]:
        key = (line.key, width, base)
        drawn = self._drawn.get(key)
        if drawn is None:
            console = self.app.console
            options = console.options.update(width=width, height=None, no_wrap=False, overflow="fold")
            drawn = [
                Strip(segments)
                for segments in console.render_lines(line.text(), options, style=base, pad=False)
            ]
            self._drawn[key] = drawn
        return drawn

    def _row_strip(self, index: int, width: int, base: Style) -> Strip:
        if index >= len(self._rows):
            return Strip.blank(width, base)
        number, row = self._rows[index]
        drawn = self._draw(self._logical[number], width, base)
        strip = drawn[row] if row < len(drawn) else Strip.blank(width, base)
        return strip.adjust_cell_length(width, base)

    def _visible_keys(self) -> tuple[int, list[tuple[_Key, int] | None]]:
        """What each row on screen shows (its line's content and row within it), from the top."""
        top = self.scroll_offset.y
        keys: list[tuple[_Key, int] | None] = []
        for index in range(top, top + self.scrollable_content_region.height):
            if index < len(self._rows):
                number, row = self._rows[index]
                keys.append((self._logical[number].key, row))
            else:
                keys.append(None)
        return top, keys

    def _layout_at_new_width(self) -> None:
        width = self._width_and_base()[0]
        if width > 0 and width != self._laid_width:
            # Every row moves (a resize, the scrollbar came or went), including those
            # Textual still holds drawn from the previous frame.
            self._layout()
            self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._layout_at_new_width()

    def on_mount(self) -> None:
        self._layout_at_new_width()
        self.watch(self.app, "theme", lambda _: self.rewrap(), init=False)

    def rewrap(self) -> None:
        self._laid_width = -1
        self._drawn.clear()
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        # The width and base style are the same for every row of a frame; looking them up
        # per row (the style walks every ancestor) costs more than a cached row.
        self._frame = (self.scrollable_content_region.width, self.rich_style)
        try:
            self._layout_at_new_width()
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        width, base = self._width_and_base()
        self._layout()
        return self._row_strip(self.scroll_offset.y + y, width, base)

    def scroll_to_anchor(self, name: str) -> None:
        line = self._anchors.get(name)
        if line is not None:
            self.scroll_to(y=line, animate=False, immediate=True)


class DetailView(TextView):
    """A text view of render/'s roles (``render.present.ROLES``) in their looks.

    The request detail, the history entry, the watch detail and a history record all
    draw the same roles; the looks are role text (``settings/roles.py``, styled in
    ``console.tcss``), so the four share one look. A subclass draws its text in
    :meth:`refresh_view` from :meth:`styles_map`; a theme change draws it again.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = set(DETAIL_LOOKS.values())

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._styles: dict[str, Style] | None = None

    def on_mount(self) -> None:
        # Textual runs TextView.on_mount after this one (every class's handler, in MRO
        # order): no super() call, or the view would wrap and watch the theme twice.
        self.watch(self.app, "theme", lambda _: self._restyle(), init=False)

    def _restyle(self) -> None:
        self._styles = None
        self.refresh_view()

    def styles_map(self) -> dict[str, Style]:
        """Each role's style in the current theme."""
        if self._styles is None:
            self._styles = {role: self.get_component_rich_style(look) for role, look in DETAIL_LOOKS.items()}
        return self._styles

    def refresh_view(self) -> None:
        """Draw the text again (a subclass says how)."""


def _content(text: Text) -> Hashable:
    """All that a text's drawn lines depend on but the width and base style, copied (a caller may change ``text`` later)."""
    return (
        text.plain,
        tuple(text.spans),
        text.style,
        (text.justify, text.overflow, text.no_wrap, text.end, text.tab_size),
    )


def _split_lines(text: Text) -> list[_Line]:
    """``text`` as its logical lines, each drawn as Rich draws that line of the whole text.

    Rich wraps a text line by line with the text's own settings, cuts its spans at the
    line ends, and ends only its last line with ``end``; each piece carries those so it
    draws the same on its own. An empty last line with an empty ``end`` is no row at all.
    """
    plain = text.plain
    pieces = plain.split("\n")
    if len(pieces) > 1 and not pieces[-1] and not text.end:
        pieces.pop()
    starts: list[int] = []
    offset = 0
    for piece in pieces:
        starts.append(offset)
        offset += len(piece) + 1
    spans: list[list[Span]] = [[] for _ in pieces]
    for span in text.spans:
        number = max(0, bisect_right(starts, span.start) - 1)
        while number < len(pieces) and starts[number] < span.end:
            first = starts[number]
            start, end = max(span.start, first) - first, min(span.end, first + len(pieces[number])) - first
            if end > start:
                spans[number].append(Span(start, end, span.style))
            number += 1
    last = len(pieces) - 1
    settings = (text.justify, text.overflow, text.no_wrap)
    lines = []
    for number, piece in enumerate(pieces):
        line_settings = (*settings, text.end if number == last else "\n", text.tab_size)
        content = (piece, tuple(spans[number]), text.style, line_settings)
        lines.append(_Line(_Key(content), piece, spans[number], text.style, line_settings))
    return lines


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    """Sorted row numbers as (first, count) runs of consecutive rows."""
    runs: list[tuple[int, int]] = []
    for y in rows:
        if runs and runs[-1][0] + runs[-1][1] == y:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((y, 1))
    return runs
