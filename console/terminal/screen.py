"""One emulated terminal screen: the only place a child's bytes are interpreted.

Both the daemon (one per session) and the TUI pane (one per attached pane) use this
class, so a snapshot made by one reproduces in the other with the same engine. The
screen is also the sanitizer: clients paint from its cells and never pass a child's
bytes through to the operator's terminal.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from pyghostty import Terminal

from ._native import check, decoded_copy, ffi, lib, read_bytes, scroll_viewport, sized, union_fn
from .render import Frame, RowRenderer

# What a scrollback row costs libghostty-vt (measured: 9 bytes a cell plus the row),
# and slack for pages being dropped whole; see `Screen._set_scrollback_caps`.
BYTES_PER_CELL, BYTES_PER_ROW, PAGE_MARGIN_BYTES = 9, 64, 2 * 1024 * 1024
# Longest unfinished escape sequence a snapshot can carry across (see `snapshot`).
CONTINUATION_MAX_BYTES = 256 * 1024
# Pixel cell size reported to programs that ask (CSI 14/16 t); only ratios matter.
CELL_WIDTH_PX, CELL_HEIGHT_PX = 8, 16

_MOUSE_TRACKING = ((1003, "any"), (1002, "button"), (1000, "normal"), (9, "x10"))
_MOUSE_FORMAT = ((1016, "sgr_pixels"), (1006, "sgr"), (1015, "urxvt"), (1005, "utf8"))


class CursorState(NamedTuple):
    """Cursor in active-area coordinates (0-based), as the program left it."""

    x: int
    y: int
    visible: bool


@dataclass(frozen=True, slots=True)
class Modes:
    """The terminal modes a client needs to encode input and to render."""

    alternate_screen: bool
    bracketed_paste: bool  # DEC 2004
    mouse_tracking: str  # "none", "x10", "normal", "button", "any"
    mouse_format: str  # "x10", "utf8", "sgr", "urxvt", "sgr_pixels"
    application_cursor: bool  # DECCKM (1)
    application_keypad: bool  # DECNKM (66)
    focus_events: bool  # 1004
    kitty_keyboard: int  # current kitty keyboard flags, 0 when off
    cursor_visible: bool  # DECTCEM (25)
    synchronized_output: bool  # 2026


class Match(NamedTuple):
    """A search hit: `row` counts screen rows from the oldest scrollback row (the
    coordinate `Screen.scroll_to_row` takes); `col` and `cells` are in cells."""

    row: int
    col: int
    cells: int


class Screen:
    """A libghostty-vt terminal behind the small interface the console needs.

    Scrollback keeps at least about `scrollback_lines` rows (up to a tenth more,
    since memory is released a page at a time) and, when `scrollback_bytes` is
    given, no more than that much emulator memory.

    `on_reply` receives what the terminal answers to the program (cursor position
    reports, device attributes, ...); the daemon writes it to the PTY, a TUI pane
    leaves it unset because the daemon already answered.
    """

    def __init__(
        self,
        cols: int,
        rows: int,
        *,
        scrollback_lines: int = 10_000,
        scrollback_bytes: int | None = None,
        on_reply: Callable[[bytes], None] | None = None,
    ) -> None:
        _check_size(cols, rows)
        if scrollback_lines < 0:
            raise ValueError("scrollback_lines must be >= 0")
        self._term = Terminal(cols, rows, scrollback_lines)
        self._h = self._term._t[0]
        self._scrollback_lines = scrollback_lines
        self._scrollback_bytes = scrollback_bytes
        self._set_scrollback_caps(cols)
        self._set_size_t(lib.GHOSTTY_TERMINAL_OPT_CONTINUATION_MAX_BYTES, CONTINUATION_MAX_BYTES)
        self._size_cb = ffi.callback("GhosttyTerminalSizeFn", self._report_size)
        check(lib.ghostty_terminal_set(self._h, lib.GHOSTTY_TERMINAL_OPT_SIZE, self._size_cb), "set size cb")
        if on_reply is not None:
            self._term.on_reply(on_reply)
        self._renderer: RowRenderer | None = None
        self._u8 = ffi.new("uint8_t*")
        self._u16 = ffi.new("uint16_t*")
        self._bool = ffi.new("bool*")
        self._size_t = ffi.new("size_t*")
        self._str = ffi.new("GhosttyString*")
        self._compressed_at: int | None = None

    # -- input -------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        lib.ghostty_terminal_vt_write(self._h, data, len(data))
        self._term._raise_cb_err()

    def resize(self, cols: int, rows: int) -> None:
        """Resize, reflowing soft-wrapped lines of the primary screen."""
        _check_size(cols, rows)
        self._term.resize(cols, rows, CELL_WIDTH_PX, CELL_HEIGHT_PX)
        self._set_scrollback_caps(cols)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self._term.close()

    # -- state -------------------------------------------------------------------

    @property
    def size(self) -> tuple[int, int]:
        """(cols, rows)."""
        return self._get_u16(lib.GHOSTTY_TERMINAL_DATA_COLS), self._get_u16(lib.GHOSTTY_TERMINAL_DATA_ROWS)

    @property
    def cursor(self) -> CursorState:
        return CursorState(
            self._get_u16(lib.GHOSTTY_TERMINAL_DATA_CURSOR_X),
            self._get_u16(lib.GHOSTTY_TERMINAL_DATA_CURSOR_Y),
            self._get_bool(lib.GHOSTTY_TERMINAL_DATA_CURSOR_VISIBLE),
        )

    @property
    def modes(self) -> Modes:
        mode = self._term.mode
        tracking = next((name for n, name in _MOUSE_TRACKING if mode(n)), "none")
        fmt = next((name for n, name in _MOUSE_FORMAT if mode(n)), "x10")
        check(
            lib.ghostty_terminal_get(self._h, lib.GHOSTTY_TERMINAL_DATA_KITTY_KEYBOARD_FLAGS, self._u8),
            "kitty",
        )
        return Modes(
            alternate_screen=self.alternate_screen,
            bracketed_paste=mode(2004),
            mouse_tracking=tracking,
            mouse_format=fmt,
            application_cursor=mode(1),
            application_keypad=mode(66),
            focus_events=mode(1004),
            kitty_keyboard=int(self._u8[0]),
            cursor_visible=mode(25),
            synchronized_output=mode(2026),
        )

    @property
    def alternate_screen(self) -> bool:
        out = ffi.new("GhosttyTerminalScreen*")
        check(
            lib.ghostty_terminal_get(self._h, lib.GHOSTTY_TERMINAL_DATA_ACTIVE_SCREEN, out), "active screen"
        )
        return bool(out[0] == lib.GHOSTTY_TERMINAL_SCREEN_ALTERNATE)

    @property
    def title(self) -> str:
        """The window title the program set (OSC 0/2); untrusted text."""
        return self._get_str(lib.GHOSTTY_TERMINAL_DATA_TITLE)

    @property
    def pwd(self) -> str:
        """The working directory the program reported (OSC 7); untrusted text."""
        return self._get_str(lib.GHOSTTY_TERMINAL_DATA_PWD)

    @property
    def scrollback_rows(self) -> int:
        return self._get_size_t(lib.GHOSTTY_TERMINAL_DATA_SCROLLBACK_ROWS)

    @property
    def total_rows(self) -> int:
        """Scrollback plus active rows."""
        return self._get_size_t(lib.GHOSTTY_TERMINAL_DATA_TOTAL_ROWS)

    @property
    def at_ground(self) -> bool:
        """True when no escape sequence or UTF-8 character is half-parsed."""
        return self._get_bool(lib.GHOSTTY_TERMINAL_DATA_VT_GROUND)

    # -- text --------------------------------------------------------------------

    def text(self, scrollback: bool = False) -> str:
        """Plain text, rows as displayed (soft wraps kept), trailing blanks trimmed,
        like `tmux capture-pane` (with `-S -` when `scrollback`)."""
        if not scrollback:
            return self._term.text()
        cols, _ = self.size
        last = self.total_rows - 1
        sel = sized("GhosttySelection")
        sel.start = self._term.ref(0, 0, "screen")[0]
        sel.end = self._term.ref(cols - 1, last, "screen")[0]
        return self._term._format_sel(sel)

    def search(self, needle: str, *, case_sensitive: bool = False) -> list[Match]:
        """Every occurrence of `needle` in scrollback and screen, oldest first. A hit
        that spans a soft wrap is not found (rows are searched one by one)."""
        if not needle:
            return []
        flags = 0 if case_sensitive else re.IGNORECASE
        pattern = re.compile(re.escape(needle), flags)
        hits: list[Match] = []
        for row, line in enumerate(self.text(scrollback=True).split("\n")):
            for m in pattern.finditer(line):
                col = _cells(line[: m.start()])
                hits.append(Match(row, col, _cells(m.group())))
        return hits

    # -- viewport (scrolling back in a pane) ---------------------------------------

    def scroll(self, delta: int) -> None:
        """Move the viewport by `delta` rows (negative = back into scrollback)."""
        scroll_viewport(self._h, lib.GHOSTTY_SCROLL_VIEWPORT_DELTA, delta)

    def scroll_to_row(self, row: int) -> None:
        """Put screen row `row` (as in `Match.row`) at the top of the viewport."""
        scroll_viewport(self._h, lib.GHOSTTY_SCROLL_VIEWPORT_ROW, max(0, row))

    def scroll_to_bottom(self) -> None:
        scroll_viewport(self._h, lib.GHOSTTY_SCROLL_VIEWPORT_BOTTOM)

    @property
    def viewport(self) -> tuple[int, int, int]:
        """(total rows, offset of the viewport's top row, viewport rows)."""
        sb = ffi.new("GhosttyTerminalScrollbar*")
        check(lib.ghostty_terminal_get(self._h, lib.GHOSTTY_TERMINAL_DATA_SCROLLBAR, sb), "scrollbar")
        return int(sb.total), int(sb.offset), int(sb.len)

    # -- painting ----------------------------------------------------------------

    def render(self, everything: bool = False) -> Frame:
        """Rows of the viewport that changed since the last call (all of them with
        `everything`), as styled segments, plus the cursor."""
        if self._renderer is None:
            self._renderer = RowRenderer()
            everything = True
        return self._renderer.frame(self._h, everything)

    # -- snapshot ----------------------------------------------------------------

    def snapshot(self) -> bytes:
        """VT bytes that rebuild this screen in a fresh `Screen` of the same size:
        palette, modes, tab stops, scrollback and screen text with styles, scrolling
        region, cursor and its style, title, and the half-parsed sequence at the end
        of the input so far (so the live stream can continue from here).

        While the alternate screen is active the primary screen (with its scrollback)
        is emitted first, so a client sees it again when the program exits. Known
        loss: rows holding only background colour (an erase with a coloured
        background) come back as default blanks; a repaint by the program fixes it.
        """
        parts: list[bytes] = []
        if self.alternate_screen:
            with decoded_copy(self._h) as copy:
                leave = b"\x1b[?1049l"
                lib.ghostty_terminal_vt_write(copy, leave, len(leave))
                parts.append(_format_padded(copy, _PRIMARY_EXTRAS))
        parts.append(_format_padded(self._h, _ALL_EXTRAS))
        title = _printable(self.title)
        if title:
            parts.append(b"\x1b]2;" + title.encode() + b"\x1b\\")
        parts.append(self._continuation())
        return b"".join(parts)

    def _continuation(self) -> bytes:
        if self.at_ground:
            return b""
        try:
            return read_bytes(
                lambda b, n, out: lib.ghostty_terminal_continuation_buf(self._h, b, n, out), "continuation"
            )
        except Exception:
            # Longer than CONTINUATION_MAX_BYTES: the client misparses the tail of
            # that one sequence; everything after it is right again.
            return b""

    # -- memory ------------------------------------------------------------------

    def compress(self, steps: int = 8) -> bool:
        """Compress idle scrollback a little (libghostty-vt packs old pages to about
        a third). Returns True when nothing is left to do. Call it from a periodic
        task; it does nothing when the scrollback has not changed since it finished."""
        activity = ffi.new("uint64_t*")
        check(lib.ghostty_terminal_compression_activity(self._h, activity), "compression activity")
        if self._compressed_at == activity[0]:
            return True
        res = ffi.new("GhosttyTerminalCompressionResult*")
        for _ in range(steps):
            check(
                lib.ghostty_terminal_compress(
                    self._h, lib.GHOSTTY_TERMINAL_COMPRESSION_MODE_INCREMENTAL, res
                ),
                "compress",
            )
            if res[0] != lib.GHOSTTY_TERMINAL_COMPRESSION_RESULT_PENDING:
                check(lib.ghostty_terminal_compression_activity(self._h, activity), "compression activity")
                self._compressed_at = activity[0]
                return True
        return False

    @property
    def compression_activity(self) -> int:
        activity = ffi.new("uint64_t*")
        check(lib.ghostty_terminal_compression_activity(self._h, activity), "compression activity")
        return int(activity[0])

    # -- internals ---------------------------------------------------------------

    @property
    def _handle(self) -> Any:
        return self._h

    def _set_scrollback_caps(self, cols: int) -> None:
        """Cap scrollback by bytes, sized for `scrollback_lines` rows of `cols` cells.

        libghostty-vt can cap both ways, but once its line cap binds it prunes on
        every new row and feeding slows to a quarter (about 45 against 180 MB/s here,
        120 columns); a byte cap drops whole pages and keeps the fast path. So the
        byte cap does the work (a little over the requested lines, since pages are
        dropped whole) and the line cap, at twice the request, is only a backstop.
        Its default byte cap (about 10 kB, a thousand rows) is replaced too.
        """
        lines = self._scrollback_lines
        if lines == 0:
            by_lines = 0
        else:
            by_lines = int(lines * (cols * BYTES_PER_CELL + BYTES_PER_ROW) * 1.1) + PAGE_MARGIN_BYTES
        cap = by_lines if self._scrollback_bytes is None else min(self._scrollback_bytes, by_lines)
        self._set_size_t(lib.GHOSTTY_TERMINAL_OPT_SCROLLBACK_MAX_LINES, lines * 2 + 1000 if lines else 0)
        self._set_size_t(lib.GHOSTTY_TERMINAL_OPT_SCROLLBACK_MAX_BYTES, cap)

    def _report_size(self, term: Any, userdata: Any, out: Any) -> bool:
        cols, rows = self.size
        out.rows, out.columns = rows, cols
        out.cell_width, out.cell_height = CELL_WIDTH_PX, CELL_HEIGHT_PX
        return True

    def _set_size_t(self, opt: int, value: int) -> None:
        check(lib.ghostty_terminal_set(self._h, opt, ffi.new("size_t*", value)), "terminal_set")

    def _get_u16(self, key: int) -> int:
        check(lib.ghostty_terminal_get(self._h, key, self._u16), "terminal_get")
        return int(self._u16[0])

    def _get_bool(self, key: int) -> bool:
        check(lib.ghostty_terminal_get(self._h, key, self._bool), "terminal_get")
        return bool(self._bool[0])

    def _get_size_t(self, key: int) -> int:
        check(lib.ghostty_terminal_get(self._h, key, self._size_t), "terminal_get")
        return int(self._size_t[0])

    def _get_str(self, key: int) -> str:
        s = self._str
        check(lib.ghostty_terminal_get(self._h, key, s), "terminal_get")
        if not s.len:
            return ""
        return ffi.buffer(s.ptr, s.len)[:].decode("utf-8", "replace")


def _check_size(cols: int, rows: int) -> None:
    if not (1 <= cols <= 4096 and 1 <= rows <= 4096):
        raise ValueError(f"terminal size must be 1..4096 x 1..4096, got {cols}x{rows}")


def _cells(text: str) -> int:
    return sum(int(lib.ghostty_unicode_codepoint_width(ord(ch))) for ch in text)


def _printable(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch)[0] != "C")


# Which extras each formatter pass emits: (palette, modes, scrolling_region, tabstops,
# pwd, keyboard, cursor, style, hyperlink, protection, kitty_keyboard, charsets).
_ALL_EXTRAS = (True,) * 12
# The primary screen under an active alternate one: content and cursor only; the
# alternate pass that follows carries the terminal-wide state.
_PRIMARY_EXTRAS = (False, False, False, False, False, False, True, False, False, False, False, False)
_NO_EXTRAS = (False,) * 12
# What the formatter writes between the content and the cursor position (CUP): the
# scrolling margins, DECSTBM then DECSLRM. Content never holds these.
_MARGINS = re.compile(rb"(?:\x1b\[\d+;\d+r)?(?:\x1b\[\d+;\d+s)?$")


def _format(handle: Any, extras: tuple[bool, ...], *, unwrap: bool, selection: Any = None) -> bytes:
    opts = sized("GhosttyFormatterTerminalOptions")
    opts.emit = lib.GHOSTTY_FORMATTER_FORMAT_VT
    opts.unwrap = unwrap
    opts.trim = False
    e, s = opts.extra, opts.extra.screen
    (e.palette, e.modes, e.scrolling_region, e.tabstops, e.pwd, e.keyboard) = extras[:6]
    (s.cursor, s.style, s.hyperlink, s.protection, s.kitty_keyboard, s.charsets) = extras[6:]
    opts.selection = selection if selection is not None else ffi.NULL
    fmt = ffi.new("GhosttyFormatter*")
    check(lib.ghostty_formatter_terminal_new(ffi.NULL, fmt, handle, opts[0]), "formatter_new")
    try:
        return read_bytes(lambda b, n, out: lib.ghostty_formatter_format_buf(fmt[0], b, n, out), "format")
    finally:
        lib.ghostty_formatter_free(fmt[0])


def _format_padded(handle: Any, extras: tuple[bool, ...]) -> bytes:
    """The formatter's output with blank rows put back after the content.

    The formatter drops trailing blank rows, so fed to a fresh terminal the content
    would sit lower (or, with scrollback, push fewer rows into history) than in the
    original. Line feeds for the active area's blank rows below its last emitted row,
    inserted between the content and the margins/cursor that follow it, restore the
    alignment. `extras` must include the cursor, which marks where content ends.
    """
    full = _format(handle, extras, unwrap=True)
    rows = _u16(handle, lib.GHOSTTY_TERMINAL_DATA_ROWS)
    x, y = _u16(handle, lib.GHOSTTY_TERMINAL_DATA_CURSOR_X), _u16(handle, lib.GHOSTTY_TERMINAL_DATA_CURSOR_Y)
    cup = full.rfind(b"\x1b[%d;%dH" % (y + 1, x + 1))
    if cup < 0:  # pragma: no cover - a formatter change; keep the unpadded bytes
        return full
    window = max(0, cup - 32)
    margins = _MARGINS.search(full, window, cup)
    end = margins.start() if margins else cup
    active = _format(handle, _NO_EXTRAS, unwrap=False, selection=_active_selection(handle))
    if not active and not _size_t(handle, lib.GHOSTTY_TERMINAL_DATA_SCROLLBACK_ROWS):
        return full
    last_row = active.count(b"\r\n") if active else -1
    return full[:end] + b"\r\n" * (rows - 1 - last_row) + full[end:]


def _size_t(handle: Any, key: int) -> int:
    out = ffi.new("size_t*")
    check(lib.ghostty_terminal_get(handle, key, out), "terminal_get")
    return int(out[0])


def _u16(handle: Any, key: int) -> int:
    out = ffi.new("uint16_t*")
    check(lib.ghostty_terminal_get(handle, key, out), "terminal_get")
    return int(out[0])


def _active_selection(handle: Any) -> Any:
    fn = union_fn(
        "ghostty_terminal_grid_ref", "GhosttyResult(*)(GhosttyTerminal, GhosttyPointS, GhosttyGridRef*)"
    )
    cols, rows = _u16(handle, lib.GHOSTTY_TERMINAL_DATA_COLS), _u16(handle, lib.GHOSTTY_TERMINAL_DATA_ROWS)
    sel = sized("GhosttySelection")
    for field, (x, y) in (("start", (0, 0)), ("end", (cols - 1, rows - 1))):
        pt = ffi.new("GhosttyPointS*")
        pt.tag = lib.GHOSTTY_POINT_TAG_ACTIVE
        pt.value.x, pt.value.y = x, y
        ref = sized("GhosttyGridRef")
        check(fn(handle, pt[0], ref), "grid_ref")
        setattr(sel, field, ref[0])
    return sel
