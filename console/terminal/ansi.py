"""Paint a `Screen` onto a real terminal with escape sequences of our own making.

For the places that draw straight to the operator's terminal instead of through the
TUI (`sessions replay`). Only what this module writes reaches that terminal: cursor
moves, SGR and the cells' text with control and format characters (C0, C1, bidi
overrides, zero-width joiners, ...) replaced, so nothing a program printed can move
the cursor, retitle the window, set the clipboard or reorder text there.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from .render import Color, Frame, Style
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
    parts += _color(style.fg, 30) + _color(style.bg, 40)
    return f"\x1b[{parts}m"


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
