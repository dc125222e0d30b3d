"""Emulator rows to Textual strips, for the terminal pane.

The emulator hands over rows as runs of plain text with a style of its own
(:class:`console.terminal.Segment`); here they become Rich segments. Text is passed
through :func:`console.terminal.ansi.safe_text` (the emulator has consumed every
escape sequence, but a program can still print bidi overrides and zero-width
characters, which never reach the operator's terminal). Styles are converted once
each; rows are cached by their content, so a row that scrolls back into view, or the
thousand blank rows of a fresh screen, cost one conversion.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from rich.cells import cell_len
from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.strip import Strip

from console.terminal import Segment as Cells
from console.terminal import Style as CellStyle
from console.terminal.ansi import safe_text
from console.terminal.render import Color as CellColor

CACHE_ROWS = 4096


def _color(c: CellColor) -> Color | None:
    if c is None:
        return None
    if isinstance(c, int):
        return Color.from_ansi(c)
    return Color.from_rgb(*c)


def rich_style(style: CellStyle) -> Style:
    return Style(
        color=_color(style.fg),
        bgcolor=_color(style.bg),
        bold=style.bold or None,
        dim=style.faint or None,
        italic=style.italic or None,
        underline=style.underline in (1, 3, 4, 5) or None,
        underline2=style.underline == 2 or None,
        blink=style.blink or None,
        reverse=style.reverse or None,
        conceal=style.invisible or None,
        strike=style.strikethrough or None,
        overline=style.overline or None,
    )


class RowPainter:
    """Converts rows to strips over a base style (the pane's own colours)."""

    def __init__(self, base: Style) -> None:
        self.base = base
        self._styles: dict[CellStyle, Style] = {}
        self._rows: LRUCache[Hashable, Strip] = LRUCache(CACHE_ROWS)

    def style(self, style: CellStyle) -> Style:
        found = self._styles.get(style)
        if found is None:
            if len(self._styles) > 4096:
                self._styles.clear()
            found = self._styles[style] = self.base + rich_style(style)
        return found

    def strip(self, cells: Sequence[Cells]) -> Strip:
        key = tuple(cells)
        found = self._rows.get(key)
        if found is None:
            found = self._rows[key] = self._convert(cells)
        return found

    def _convert(self, cells: Sequence[Cells]) -> Strip:
        segments: list[Segment] = []
        length = 0  # passed on, so the strip need not measure its text again
        for run in cells:
            text = run.text
            if text.isascii() and text.isprintable():
                length += len(text)
            else:
                text = safe_text(text)
                width = cell_len(text)
                if width < run.cells:  # Rich thinks it narrower than the emulator does
                    text += " " * (run.cells - width)
                length += max(width, run.cells)
            segments.append(Segment(text, self.style(run.style)))
        return Strip(segments, length)


def overlay(strip: Strip, start: int, end: int, change: Style | Callable[[Style], Style]) -> Strip:
    """``strip`` with the cells ``start``..``end`` restyled: ``change`` added on top of
    their style, or called with it."""
    if isinstance(change, Style):
        added = change

        def change(style: Style) -> Style:
            return style + added

    length = strip.cell_length
    start, end = max(0, start), min(end, length)
    if start >= end:
        return strip
    pieces = list(strip.divide([start, end, length]))
    if len(pieces) < 2:
        return strip
    head, middle, *tail = pieces
    middle = Strip([Segment(s.text, change(s.style or Style())) for s in middle], middle.cell_length)
    return Strip.join([head, middle, *tail])
