"""Paint a `Screen` onto a real terminal with escape sequences of our own making.

For the places that draw straight to the operator's terminal instead of through the
TUI (`sessions replay`). Only what this module writes reaches that terminal: cursor
moves, SGR and the cells' text with control and format characters (C0, C1, bidi
overrides, zero-width joiners, ...) replaced, so nothing a program printed can move
the cursor, retitle the window, set the clipboard or reorder text there.
"""

from __future__ import annotations

import itertools
import unicodedata
from functools import lru_cache

from console.contract.inert import inert

from .render import DEFAULT_STYLE, Color, Frame, Segment, Style
from .screen import Screen


@lru_cache(maxsize=4096)
def safe_text(text: str) -> str:
    """`text` safe to write to a terminal: format characters (bidi overrides and
    isolates, zero-width joiners and spaces, ...; invisible anyway) dropped, other
    control, surrogate and unassigned characters replaced by U+FFFD. Private use is
    kept: it is how icon fonts draw and cannot move anything."""
    if text.isascii() and text.isprintable():
        return text
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat[0] != "C" or cat == "Co":
            out.append(ch)
        elif cat != "Cf":
            out.append("\ufffd")
    return "".join(out)


def _color(c: Color, base: int) -> str:
    if c is None:
        return ""
    if isinstance(c, int):
        if c < 8:
            return f";{base + c}"
        if c < 16:
            return f";{base + 60 + c - 8}"
        return f";{base + 8};5;{c}"
    r, g, b = c
    return f";{base + 8};2;{r};{g};{b}"


@lru_cache(maxsize=1024)
def sgr(style: Style) -> str:
    """The SGR sequence that sets exactly `style` (starting from a reset)."""
    parts = "0"
    if style.bold:
        parts += ";1"
    if style.faint:
        parts += ";2"
    if style.italic:
        parts += ";3"
    if style.underline:
        parts += ";4" if style.underline == 1 else f";4:{min(style.underline, 5)}"
    if style.blink:
        parts += ";5"
    if style.reverse:
        parts += ";7"
    if style.invisible:
        parts += ";8"
    if style.strikethrough:
        parts += ";9"
    if style.overline:
        parts += ";53"
    parts += _color(style.fg, 30) + _color(style.bg, 40) + _underline_color(style.underline_color)
    return f"\x1b[{parts}m"


def _underline_color(c: Color) -> str:
    """SGR 58 in the colon form (``58:5:n``, ``58:2::r:g:b``) terminals agree on."""
    if c is None:
        return ""
    if isinstance(c, int):
        return f";58:5:{c}"
    r, g, b = c
    return f";58:2::{r}:{g}:{b}"


def paint(frame: Frame, *, top: int = 0) -> str:
    """Escape sequences that draw the rows of `frame` (only those it holds), starting
    at terminal row `top` (0-based), then place the cursor."""
    out: list[str] = []
    for y in sorted(frame.rows):
        out.append(f"\x1b[{top + y + 1};1H")
        for seg in frame.rows[y]:
            out.append(sgr(seg.style))
            out.append(safe_text(seg.text))
        out.append("\x1b[0m\x1b[K")
    c = frame.cursor
    out.append(f"\x1b[{top + c.y + 1};{c.x + 1}H")
    out.append("\x1b[?25h" if c.visible else "\x1b[?25l")
    return "".join(out)


def paint_screen(screen: Screen, *, everything: bool = False, top: int = 0) -> str:
    return paint(screen.render(everything), top=top)


def _joins_emoji(before: str, after: str) -> bool:
    """A joiner between `before` and `after` is part of an emoji ZWJ sequence: an
    emoji (a symbol, category So), maybe with a skin tone or VS16, before it and an
    emoji after it (👩‍💻, 👩🏽‍💻, ❤️‍🔥). Letters never qualify, of any script: a
    joiner between them renders as nothing and could only glue look-alikes."""
    if not before or not after or unicodedata.category(after[0]) != "So":
        return False
    last = before[-1]
    return unicodedata.category(last) == "So" or last == "\ufe0f" or "\U0001f3fb" <= last <= "\U0001f3ff"


def inert_clusters(text: str) -> str:
    """`inert` (every control, bidi and invisible character escaped visibly), except
    a zero-width joiner inside an emoji ZWJ sequence (see `_joins_emoji`), which is
    printed as itself so the sequence shows as the one emoji the program printed.
    Every other joiner (between letters, in Indic or Arabic shaping, at an edge) is
    escaped as ``\\u200d``, failing closed."""
    if "\u200d" not in text:
        return inert(text, keep_newlines=True)
    pieces = text.split("\u200d")
    out = [inert(pieces[0], keep_newlines=True)]
    for before, after in itertools.pairwise(pieces):
        out.append("\u200d" if _joins_emoji(before, after) else "\\u200d")
        out.append(inert(after, keep_newlines=True))
    return "".join(out)


def _row_sgr(segments: list[Segment]) -> str:
    while segments and segments[-1].style is DEFAULT_STYLE and not segments[-1].text.strip(" "):
        segments = segments[:-1]
    if segments and segments[-1].style is DEFAULT_STYLE:
        segments = [*segments[:-1], segments[-1]._replace(text=segments[-1].text.rstrip(" "))]
    out: list[str] = []
    current = DEFAULT_STYLE
    for seg in segments:
        if seg.style is not current:
            out.append(sgr(seg.style))
            current = seg.style
        out.append(inert_clusters(seg.text))
    if current is not DEFAULT_STYLE:
        out.append("\x1b[0m")
    return "".join(out)


def capture(screen: Screen, *, scrollback: bool = False) -> str:
    """The screen's rows as text with SGR attributes, like `tmux capture-pane -e`
    (with `-S -` when `scrollback`): each style change as one SGR from a reset, a
    reset at the end of a styled row, trailing blanks trimmed. Only text and SGR of
    our own making: the cells' format characters are escaped as `inert_clusters` does."""
    total, _, height = screen.viewport
    rows: dict[int, list[Segment]] = {}
    if not scrollback:
        frame = screen.render(everything=True)
        return "\n".join(_row_sgr(frame.rows[y]) for y in range(frame.rows_count)).rstrip("\n")
    try:
        top = 0
        while top < total:
            screen.scroll_to_row(top)
            _, offset, height = screen.viewport
            frame = screen.render(everything=True)
            for y, segments in frame.rows.items():
                rows[offset + y] = segments
            if offset + height >= total:
                break
            top = offset + height
    finally:
        screen.scroll_to_bottom()
    return "\n".join(_row_sgr(rows.get(y, [])) for y in range(total)).rstrip("\n")
