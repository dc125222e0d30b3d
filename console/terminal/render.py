"""Styled rows for painting, from libghostty-vt's render state.

A pane repaints only rows that changed, so the render state's dirty tracking decides
what to read. Each row is read as one bulk view of packed cells (one FFI call) and
decoded here; a style is fetched once per style id per row, not per cell. The result
is plain Python data (`Segment` runs of text with a `Style`), so the TUI converts it
to its own types and nothing here knows about Rich or Textual.

Text in a segment is what the cells hold: printable characters only, since the
emulator consumed every control and escape sequence. It may still hold format
characters (bidi, zero-width) that arrived as printable codepoints; a renderer that
writes to a real terminal must drop or escape those (see `ansi.py`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from ._native import CELL, check, ffi, lib, sized

Color = None | int | tuple[int, int, int]
"""No colour (the default), a palette index 0-255, or true colour (r, g, b)."""


@dataclass(frozen=True, slots=True)
class Style:
    fg: Color = None
    bg: Color = None
    bold: bool = False
    faint: bool = False
    italic: bool = False
    underline: int = 0  # 0 none, 1 single, 2 double, 3 curly, 4 dotted, 5 dashed
    underline_color: Color = None  # SGR 58 (59 resets); None: the text's colour
    blink: bool = False
    reverse: bool = False
    invisible: bool = False
    strikethrough: bool = False
    overline: bool = False


DEFAULT_STYLE = Style()

# One object per distinct style, so runs split by identity and the TUI can cache
# its converted styles by it.
_INTERNED: dict[Style, Style] = {DEFAULT_STYLE: DEFAULT_STYLE}


def _interned(style: Style) -> Style:
    found = _INTERNED.get(style)
    if found is None:
        if len(_INTERNED) > 65536:
            _INTERNED.clear()
            _INTERNED[DEFAULT_STYLE] = DEFAULT_STYLE
        found = _INTERNED[style] = style
    return found


class Segment(NamedTuple):
    """A run of cells sharing one style. `cells` is the number of columns it covers
    (a wide character's text is one character over two cells)."""

    text: str
    cells: int
    style: Style


class Cursor(NamedTuple):
    x: int
    y: int
    visible: bool  # the program wants it shown (DECTCEM) and it is inside the viewport
    blinking: bool
    shape: str  # "block", "bar", "underline", "block_hollow"


class Frame(NamedTuple):
    """What changed since the previous frame. `rows` maps viewport row index to its
    segments; with `full` every row is present."""

    cols: int
    rows_count: int
    full: bool
    rows: dict[int, list[Segment]]
    cursor: Cursor


_SHAPES = {
    lib.GHOSTTY_RENDER_STATE_CURSOR_VISUAL_STYLE_BAR: "bar",
    lib.GHOSTTY_RENDER_STATE_CURSOR_VISUAL_STYLE_BLOCK: "block",
    lib.GHOSTTY_RENDER_STATE_CURSOR_VISUAL_STYLE_UNDERLINE: "underline",
    lib.GHOSTTY_RENDER_STATE_CURSOR_VISUAL_STYLE_BLOCK_HOLLOW: "block_hollow",
}


def _color(c: Any) -> Color:
    if c.tag == lib.GHOSTTY_STYLE_COLOR_PALETTE:
        return int(c.value.palette)
    if c.tag == lib.GHOSTTY_STYLE_COLOR_RGB:
        return (c.value.rgb.r, c.value.rgb.g, c.value.rgb.b)
    return None


# The row fast path reads a whole row as one integer (a cell is a 64-bit lane of it)
# and pulls every cell's codepoint and style id out with a few big-integer operations
# and one UTF-32 decode, instead of a Python loop over the cells. It applies to rows of
# narrow codepoint cells only (the common case: a flood of text); a row with a wide
# character, a grapheme or a background-only cell takes the cell-by-cell loop. The
# layout must have those as the zero values (the manifest says so today) and the cells
# must be little-endian in memory (x86-64, arm64).
_FAST_ROWS = (
    sys.byteorder == "little"
    and ffi.sizeof("GhosttyCell") == 8
    and CELL.TAG_CODEPOINT == 0
    and 0 not in (CELL.WIDE_WIDE, CELL.WIDE_SPACER_TAIL, CELL.WIDE_SPACER_HEAD)
)


@lru_cache(maxsize=16)
def _lanes(n: int) -> tuple[int, int, int]:
    """Masks over a row of `n` cells: (tag and wide bits, codepoint, style id)."""
    ones = sum(1 << (64 * i) for i in range(n))
    slow = ones * ((CELL.tag_mask << CELL.tag_shift) | (CELL.wide_mask << CELL.wide_shift))
    return slow, ones * CELL.cp_mask, ones * CELL.style_mask


def viewport_cells(handle: Any) -> list[list[int]]:
    """The packed cells (`GhosttyCell`, see `_native.CELL`) of every viewport row of
    `handle`, read through a render state of its own (one bulk read a row). Updating
    that state clears the terminal's dirty marks, which a painting render state relies
    on: a caller that also paints needs a new painting state (`Screen.snapshot` sees
    to it)."""
    state = ffi.new("GhosttyRenderState*")
    check(lib.ghostty_render_state_new(ffi.NULL, state), "render_state_new")
    it = ffi.new("GhosttyRenderStateRowIterator*")
    try:
        check(lib.ghostty_render_state_row_iterator_new(ffi.NULL, it), "row_iterator_new")
        try:
            check(lib.ghostty_render_state_update(state[0], handle), "render_state_update")
            check(
                lib.ghostty_render_state_get(state[0], lib.GHOSTTY_RENDER_STATE_DATA_ROW_ITERATOR, it), "rows"
            )
            view = ffi.new("GhosttyCellsView*")
            rows: list[list[int]] = []
            while lib.ghostty_render_state_row_iterator_next(it[0]):
                check(
                    lib.ghostty_render_state_row_get(
                        it[0], lib.GHOSTTY_RENDER_STATE_ROW_DATA_CELLS_RAW, view
                    ),
                    "cells raw",
                )
                rows.append(ffi.unpack(view.ptr, view.len))
            return rows
        finally:
            lib.ghostty_render_state_row_iterator_free(it[0])
    finally:
        lib.ghostty_render_state_free(state[0])


class RowRenderer:
    """Owns a render state for one terminal. Created lazily by `Screen.render`, so a
    screen that is never painted (the daemon's) carries none of this."""

    def __init__(self) -> None:
        self._state = ffi.new("GhosttyRenderState*")
        check(lib.ghostty_render_state_new(ffi.NULL, self._state), "render_state_new")
        self._iter = ffi.new("GhosttyRenderStateRowIterator*")
        check(lib.ghostty_render_state_row_iterator_new(ffi.NULL, self._iter), "row_iterator_new")
        self._cells = ffi.new("GhosttyRenderStateRowCells*")
        check(lib.ghostty_render_state_row_cells_new(ffi.NULL, self._cells), "row_cells_new")
        self._view = ffi.new("GhosttyCellsView*")
        self._style = sized("GhosttyStyle")
        self._style_bytes = ffi.buffer(self._style)
        self._utf8 = ffi.new("GhosttyBuffer*")
        self._utf8_store = ffi.new("uint8_t[]", 256)
        self._cursor = sized("GhosttyRenderStateCursor")
        self._y = ffi.new("uint16_t*")
        self._dirty = ffi.new("GhosttyRenderStateDirty*")
        self._u16 = ffi.new("uint16_t*")
        self._styles: dict[bytes, Style] = {}

    def close(self) -> None:
        lib.ghostty_render_state_row_cells_free(self._cells[0])
        lib.ghostty_render_state_row_iterator_free(self._iter[0])
        lib.ghostty_render_state_free(self._state[0])

    def frame(self, handle: Any, everything: bool) -> Frame:
        state = self._state[0]
        check(lib.ghostty_render_state_update(state, handle), "render_state_update")
        check(lib.ghostty_render_state_get(state, lib.GHOSTTY_RENDER_STATE_DATA_DIRTY, self._dirty), "dirty")
        full = everything or self._dirty[0] == lib.GHOSTTY_RENDER_STATE_DIRTY_FULL
        check(lib.ghostty_render_state_get(state, lib.GHOSTTY_RENDER_STATE_DATA_COLS, self._u16), "cols")
        cols = self._u16[0]
        check(lib.ghostty_render_state_get(state, lib.GHOSTTY_RENDER_STATE_DATA_ROWS, self._u16), "rows")
        nrows = self._u16[0]
        check(
            lib.ghostty_render_state_get(state, lib.GHOSTTY_RENDER_STATE_DATA_ROW_ITERATOR, self._iter),
            "rows",
        )
        rows: dict[int, list[Segment]] = {}
        it = self._iter[0]
        if full:
            y = 0
            while lib.ghostty_render_state_row_iterator_next(it):
                rows[y] = self._row(it)
                y += 1
        else:
            while lib.ghostty_render_state_row_iterator_next_dirty(it, self._y):
                rows[self._y[0]] = self._row(it)
        c = self._cursor
        check(lib.ghostty_render_state_get(state, lib.GHOSTTY_RENDER_STATE_DATA_CURSOR, c), "cursor")
        inside = bool(c.viewport_has_value)
        cursor = Cursor(
            x=c.viewport_x if inside else 0,
            y=c.viewport_y if inside else 0,
            visible=inside and bool(c.visible),
            blinking=bool(c.blinking),
            shape=_SHAPES.get(c.visual_style, "block"),
        )
        check(lib.ghostty_render_state_clean(state), "render_state_clean")
        return Frame(cols, nrows, full, rows, cursor)

    def _row(self, it: Any) -> list[Segment]:
        view = self._view
        check(
            lib.ghostty_render_state_row_get(it, lib.GHOSTTY_RENDER_STATE_ROW_DATA_CELLS_RAW, view),
            "cells raw",
        )
        n = view.len
        if _FAST_ROWS and n:
            fast = self._fast_row(it, ffi.buffer(view.ptr, n * 8), n)
            if fast is not None:
                return fast
        raw = ffi.unpack(view.ptr, n)
        cells_loaded = False
        L = CELL
        row_styles: dict[int, Style] = {}
        segments: list[Segment] = []
        run: list[str] = []
        run_cells = 0
        run_style: Style | None = None
        for x, cell in enumerate(raw):
            wide = (cell >> L.wide_shift) & L.wide_mask
            if wide == L.WIDE_SPACER_TAIL:
                continue
            tag = (cell >> L.tag_shift) & L.tag_mask
            width = 2 if wide == L.WIDE_WIDE else 1
            if tag == L.TAG_CODEPOINT or tag == L.TAG_GRAPHEME:
                if wide == L.WIDE_SPACER_HEAD:
                    ch = " "
                elif tag == L.TAG_GRAPHEME:
                    if not cells_loaded:
                        self._load_cells(it)
                        cells_loaded = True
                    ch = self._grapheme(x)
                else:
                    cp = (cell >> L.cp_shift) & L.cp_mask
                    ch = chr(cp) if cp else " "
                sid = (cell >> L.style_shift) & L.style_mask
                if sid == 0:
                    style = DEFAULT_STYLE
                else:
                    cached = row_styles.get(sid)
                    if cached is None:
                        if not cells_loaded:
                            self._load_cells(it)
                            cells_loaded = True
                        cached = row_styles[sid] = self._style_at(x)
                    style = cached
            else:
                # A blank cell carrying only a background colour (erase with a
                # coloured background): keep it, the VT formatter would drop it.
                ch = " "
                if tag == L.TAG_BG_PALETTE:
                    bg: Color = (cell >> L.pal_shift) & L.pal_mask
                else:
                    bg = ((cell >> L.r_shift) & 0xFF, (cell >> L.g_shift) & 0xFF, (cell >> L.b_shift) & 0xFF)
                style = _interned(Style(bg=bg))
            if style is not run_style:
                if run:
                    segments.append(Segment("".join(run), run_cells, run_style or DEFAULT_STYLE))
                run, run_cells, run_style = [], 0, style
            run.append(ch)
            run_cells += width
        if run:
            segments.append(Segment("".join(run), run_cells, run_style or DEFAULT_STYLE))
        return segments

    def _fast_row(self, it: Any, buf: Any, n: int) -> list[Segment] | None:
        """The row's segments when every cell is a narrow codepoint cell, else None
        (see `_FAST_ROWS`). Same segments as the loop in `_row`: runs split where the
        style changes, empty cells as spaces."""
        slow, cp_lanes, sid_lanes = _lanes(n)
        row = int.from_bytes(buf, "little")
        if row & slow:
            return None
        L = CELL
        cps = ((row >> L.cp_shift) & cp_lanes).to_bytes(n * 8, "little")
        # A codepoint fits the low half of its lane: keep every other 32-bit word.
        text = memoryview(cps).cast("I")[::2].tobytes().decode("utf-32-le", "replace").replace("\x00", " ")
        sids = (row >> L.style_shift) & sid_lanes
        # Lane x of `changed` is non-zero where cell x + 1 has another style id than
        # cell x; its set lanes, highest first, are where runs start.
        changed = (sids ^ (sids >> 64)) & sid_lanes & ((1 << (64 * (n - 1))) - 1)
        starts = [n]
        while changed:
            lane = (changed.bit_length() - 1) >> 6
            starts.append(lane + 1)
            changed &= (1 << (64 * lane)) - 1
        starts.append(0)
        starts.reverse()
        segments: list[Segment] = []
        row_styles: dict[int, Style] = {}
        cells_loaded = False
        run_start, run_style = 0, None
        for i in range(len(starts) - 1):
            x = starts[i]
            sid = (sids >> (64 * x)) & L.style_mask
            if sid == 0:
                style = DEFAULT_STYLE
            else:
                found = row_styles.get(sid)
                if found is None:
                    if not cells_loaded:
                        self._load_cells(it)
                        cells_loaded = True
                    found = row_styles[sid] = self._style_at(x)
                style = found
            if style is not run_style:
                if run_style is not None:
                    segments.append(Segment(text[run_start:x], x - run_start, run_style))
                run_start, run_style = x, style
        if run_style is not None:
            segments.append(Segment(text[run_start:n], n - run_start, run_style))
        return segments

    def _load_cells(self, it: Any) -> None:
        check(
            lib.ghostty_render_state_row_get(it, lib.GHOSTTY_RENDER_STATE_ROW_DATA_CELLS, self._cells),
            "cells",
        )

    def _grapheme(self, x: int) -> str:
        cells = self._cells[0]
        check(lib.ghostty_render_state_row_cells_select(cells, x), "cell select")
        buf = self._utf8
        buf.ptr, buf.cap, buf.len = self._utf8_store, len(self._utf8_store), 0
        res = lib.ghostty_render_state_row_cells_get(
            cells, lib.GHOSTTY_RENDER_STATE_ROW_CELLS_DATA_GRAPHEMES_UTF8, buf
        )
        if res == lib.GHOSTTY_OUT_OF_SPACE:
            self._utf8_store = ffi.new("uint8_t[]", buf.len)
            buf.ptr, buf.cap, buf.len = self._utf8_store, len(self._utf8_store), 0
            res = lib.ghostty_render_state_row_cells_get(
                cells, lib.GHOSTTY_RENDER_STATE_ROW_CELLS_DATA_GRAPHEMES_UTF8, buf
            )
        check(res, "grapheme")
        return ffi.buffer(buf.ptr, buf.len)[:].decode("utf-8", "replace") or " "

    def _style_at(self, x: int) -> Style:
        cells = self._cells[0]
        check(lib.ghostty_render_state_row_cells_select(cells, x), "cell select")
        st = self._style
        check(
            lib.ghostty_render_state_row_cells_get(cells, lib.GHOSTTY_RENDER_STATE_ROW_CELLS_DATA_STYLE, st),
            "style",
        )
        key = self._style_bytes[:]
        found = self._styles.get(key)
        if found is None:
            found = Style(
                fg=_color(st.fg_color),
                bg=_color(st.bg_color),
                bold=bool(st.bold),
                faint=bool(st.faint),
                italic=bool(st.italic),
                underline=int(st.underline),
                underline_color=_color(st.underline_color),
                blink=bool(st.blink),
                reverse=bool(st.inverse),
                invisible=bool(st.invisible),
                strikethrough=bool(st.strikethrough),
                overline=bool(st.overline),
            )
            found = _interned(found)
            if len(self._styles) > 4096:
                self._styles.clear()
            self._styles[key] = found
        return found
