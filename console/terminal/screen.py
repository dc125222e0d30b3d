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

from ._native import CELL, check, decoded_copy, ffi, lib, read_bytes, scroll_viewport, sized, union_fn
from .render import Frame, RowRenderer, viewport_cells

# What a scrollback row costs libghostty-vt (measured: 9 bytes a cell plus the row),
# and slack for pages being dropped whole; see `Screen._set_scrollback_caps`.
BYTES_PER_CELL, BYTES_PER_ROW, PAGE_MARGIN_BYTES = 9, 64, 512 * 1024
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

    Scrollback keeps at least `scrollback_lines` rows (typically a fifth more,
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
        # compress()'s, made here: cffi parses a C type the first time it is named (tens of
        # ms), and compress runs on the daemon's event loop once a session goes quiet,
        # where that would hold up every request then waiting.
        self._activity = ffi.new("uint64_t*")
        self._compression = ffi.new("GhosttyTerminalCompressionResult*")
        self._compressed_at: int | None = None
        self._held = b""  # an unfinished DEC private mode set (see `_refuse_deccolm`)
        self._discarding = False

    # -- input -------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Interpret a child's output. DECCOLM is refused, as xterm and tmux do by
        default: the permission for it (mode 40) is never set, so ``CSI ? 3 h`` cannot
        resize the emulated screen away from the PTY's size (see `_refuse_deccolm`)."""
        if self._held or self._discarding or b"\x1b[?" in data or _ends_unfinished(data):
            data = self._refuse_deccolm(data)
        # One-byte scans first (memchr): a flood pays for a regex only when it holds a
        # "Z", and for a flag search only when it holds a byte of a regional indicator.
        if (b"Z" in data and _BACK_TAB.search(data)) or (b"\x87" in data and _FLAG.search(data)):
            self._feed_fixed(data)
        else:
            lib.ghostty_terminal_vt_write(self._h, data, len(data))
        self._term._raise_cb_err()

    def _feed_fixed(self, data: bytes) -> None:
        """Feed `data`, correcting two places where libghostty-vt differs from xterm
        and tmux. Back-tab (CBT, ``CSI Z``) clears a pending wrap: the program's next
        character lands at the previous tab stop, not on the next row. A flag (two
        regional indicators) is one 2-cell cluster, as wcwidth counts it, not two
        2-cell characters: the pair is fed with grapheme clustering (mode 2027) on.
        Each fix applies only where the pair or CBT reaches the parser in the ground
        state (not inside a title or other string); a pair split across two feeds
        stays 4 cells."""
        pos = 0
        for m in _FIXED.finditer(data):
            self._write(data[pos : m.start()])
            pos = m.end()
            piece = m.group()
            if not self._get_bool(lib.GHOSTTY_TERMINAL_DATA_VT_GROUND):
                self._write(piece)
            elif piece.endswith(b"Z"):
                if self._get_bool(lib.GHOSTTY_TERMINAL_DATA_CURSOR_PENDING_WRAP):
                    # CUF at the right edge moves nowhere and clears the pending wrap.
                    self._write(b"\x1b[C")
                self._write(piece)
            elif self._term.mode(2027):
                self._write(piece)
            else:
                self._write(b"\x1b[?2027h" + piece + b"\x1b[?2027l")
        self._write(data[pos:])

    def _write(self, data: bytes) -> None:
        if data:
            lib.ghostty_terminal_vt_write(self._h, data, len(data))

    def _refuse_deccolm(self, data: bytes) -> bytes:
        """`data` with mode 40 (allow 80/132 columns) taken out of every DEC private
        mode set. A set split across two feeds is held back (not interpreted yet)
        until it is complete; one longer than `HELD_MAX_BYTES` is dropped whole."""
        if self._discarding:
            m = _PARAMS_THEN_FINAL.match(data)
            assert m is not None  # every group can match empty
            if m.group(1) is None and m.end() == len(data):  # still inside it
                return b""
            # its final byte is dropped too; any other byte ended it, and counts
            data, self._discarding = data[m.end() :], False
        elif self._held:
            data, self._held = self._held + data, b""
        tail = data.rfind(b"\x1b")
        if tail >= 0 and _UNFINISHED_DECSET.fullmatch(data, tail):
            if len(data) - tail > HELD_MAX_BYTES:
                self._discarding = True
            else:
                self._held = data[tail:]
            data = data[:tail]
        return _DECSET.sub(_without_mode_40, data) if b"\x1b[?" in data else data

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
        """True when no escape sequence or UTF-8 character is half-parsed (or held
        back, see `feed`)."""
        return not self._pending() and self._get_bool(lib.GHOSTTY_TERMINAL_DATA_VT_GROUND)

    def _pending(self) -> bytes:
        """What `feed` holds back, as the bytes that start it again."""
        return b"\x1b[?" if self._discarding else self._held

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
                col = cell_width(line[: m.start()])
                hits.append(Match(row, col, cell_width(m.group())))
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
        is emitted first, so a client sees it again when the program exits.

        The active area comes back cell-exact in text and style: cells the program
        skipped are blank and unstyled (the formatter writes them as spaces in the
        pen of the cell before; they are erased again after), cells holding only a
        background colour keep it. The saved cursor (DECSC, CSI s) comes back with
        its position, attributes and origin mode, so a DECRC by the program after
        the attach lands where it would have. Known losses: the saved cursor's
        charsets and pending wrap; styles of blank cells in scrollback.
        """
        parts: list[bytes] = []
        if self.alternate_screen:
            with decoded_copy(self._h) as copy:
                leave = b"\x1b[?1049l"
                lib.ghostty_terminal_vt_write(copy, leave, len(leave))
                parts.append(_format_screen(copy, _PRIMARY_EXTRAS))
        parts.append(_format_screen(self._h, _ALL_EXTRAS, saved=_saved_cursor(self._h)))
        if self._renderer is not None:
            # Its blank fixups read the cells through a render state of their own,
            # which takes the terminal's dirty marks with it: the painting state
            # would keep stale rows. A new one reads every row at the next frame.
            self._renderer.close()
            self._renderer = None
        title = _printable(self.title)
        if title:
            parts.append(b"\x1b]2;" + title.encode() + b"\x1b\\")
        parts.append(self._continuation())
        return b"".join(parts)

    def _continuation(self) -> bytes:
        return self._parsing() + self._pending()

    def _parsing(self) -> bytes:
        if self._get_bool(lib.GHOSTTY_TERMINAL_DATA_VT_GROUND):
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
        activity = self._activity
        check(lib.ghostty_terminal_compression_activity(self._h, activity), "compression activity")
        if self._compressed_at == activity[0]:
            return True
        res = self._compression
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
        activity = self._activity
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
        dropped whole) and the line cap, at twice the request plus a thousand, is
        only a backstop.
        Its default byte cap (about 10 kB, a thousand rows) is replaced too.
        """
        lines = self._scrollback_lines
        if lines == 0:
            by_lines = 0
        else:
            by_lines = int(lines * (cols * BYTES_PER_CELL + BYTES_PER_ROW) * 1.05) + PAGE_MARGIN_BYTES
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
        return bytes(ffi.buffer(s.ptr, s.len)).decode("utf-8", "replace")


# Back-tab (CBT) and a flag, i.e. a pair of regional indicators (U+1F1E6..U+1F1FF);
# see `Screen._feed_fixed`.
_BACK_TAB = re.compile(rb"\x1b\[[0-9]*Z")
_FLAG = re.compile(rb"\xf0\x9f\x87[\xa6-\xbf]\xf0\x9f\x87[\xa6-\xbf]")
_FIXED = re.compile(_BACK_TAB.pattern + b"|" + _FLAG.pattern)

# DECSET (CSI ? Pm h); its parameters may carry sub-parameters (:) and leading zeros.
_DECSET = re.compile(rb"\x1b\[\?([0-9;:]*)h")
# The end of a feed that may be the start of one: ESC, ESC [, ESC [ ? and parameters.
_UNFINISHED_DECSET = re.compile(rb"\x1b(?:\[(?:\?[0-9;:]*)?)?")
_PARAMS_THEN_FINAL = re.compile(rb"[0-9;:]*([\x40-\x7e])?")
# Longest unfinished DECSET held back between feeds; a longer one is dropped.
HELD_MAX_BYTES = 256
DECCOLM_PERMISSION = 40


def _ends_unfinished(data: bytes) -> bool:
    tail = data.rfind(b"\x1b")
    return tail >= 0 and _UNFINISHED_DECSET.fullmatch(data, tail) is not None


def _without_mode_40(m: re.Match[bytes]) -> bytes:
    params = m.group(1).split(b";")
    kept = [p for p in params if not _is_mode(p, DECCOLM_PERMISSION)]
    if len(kept) == len(params):
        return m.group(0)
    return b"\x1b[?" + b";".join(kept) + b"h" if kept else b""


def _is_mode(param: bytes, mode: int) -> bool:
    head = param.split(b":", 1)[0]
    return head.isdigit() and int(head) == mode


def _check_size(cols: int, rows: int) -> None:
    if not (1 <= cols <= 4096 and 1 <= rows <= 4096):
        raise ValueError(f"terminal size must be 1..4096 x 1..4096, got {cols}x{rows}")


def cell_width(text: str) -> int:
    """How many cells `text` takes by libghostty-vt's own width of each codepoint.

    `Screen.search` gives `Match.col` and `Match.cells` in this measure, and a pane's
    selection and copy mode must count columns the same way, or highlights land beside
    their text. It is public so they need not reach into this module; `wcwidth` and
    Rich's `cell_len` differ from it for some text (an emoji ZWJ sequence is 4 cells
    here, as the emulator draws it, and 2 to Rich). It sums codepoints, so a cluster the
    screen draws narrower than its parts (a regional-indicator flag, which `feed` puts
    in 2 cells) measures wider here.
    """
    return sum(int(lib.ghostty_unicode_codepoint_width(ord(ch))) for ch in text)


def _printable(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch)[0] != "C")


# Which extras each formatter pass emits: (palette, modes, scrolling_region, tabstops,
# pwd, keyboard, cursor, style, hyperlink, protection, kitty_keyboard, charsets).
_ALL_EXTRAS = (True,) * 12
# The primary screen under an active alternate one: content and cursor only; the
# alternate pass that follows carries the terminal-wide state.
_PRIMARY_EXTRAS = (False, False, False, False, False, False, True, True, False, False, False, False)
_NO_EXTRAS = (False,) * 12
# What the formatter writes between the content and the cursor position (CUP): the
# scrolling margins, DECSTBM then DECSLRM. Content never holds these.
_MARGINS = re.compile(rb"(?:\x1b\[\d+;\d+r)?(?:\x1b\[\d+;\d+s)?$")
# What the formatter writes first: the palette (OSC 4), then the modes (CSI h/l).
_HEAD = re.compile(
    rb"(?P<palette>(?:\x1b\]4;[^\x1b]*\x1b\\)*)"  # palette: OSC 4 per entry
    rb"(?P<modes>(?:\x1b\[\??\d+[hl])*)"  # modes: CSI [?] n h/l
    rb"(?P<tabs>(?:\x1b\[3g(?:\x1b\[\d+G\x1bH)*\x1b\[H)?)"  # tab stops, then cursor home
)
# Modes that change how text is written: insert (IRM), origin (DECOM), no autowrap.
_ORIGIN_MODE = b"\x1b[?6h"
_DEFERRED_MODES = (b"\x1b[4h", _ORIGIN_MODE, b"\x1b[?7l")
# Print a space to complete a pending soft wrap, then erase it (BS, ECH): the row
# below stays blank and the row above keeps its wrap flag.
_LAND = b"\x1b[0m \x08\x1b[X"
_ALT_SCREEN_MODES = (b"\x1b[?47h", b"\x1b[?1047h", b"\x1b[?1049h")


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
        # One pass into a buffer the library allocates (the size-query form would
        # format everything twice).
        ptr = ffi.new("uint8_t**")
        n = ffi.new("size_t*")
        check(lib.ghostty_formatter_format_alloc(fmt[0], ffi.NULL, ptr, n), "format")
        try:
            return ffi.buffer(ptr[0], n[0])[:] if n[0] else b""
        finally:
            if ptr[0] != ffi.NULL:
                lib.ghostty_free(ffi.NULL, ptr[0], n[0])
    finally:
        lib.ghostty_formatter_free(fmt[0])


def _format_screen(handle: Any, extras: tuple[bool, ...], *, saved: SavedCursor | None = None) -> bytes:
    """VT bytes that rebuild the active screen of `handle` (with its scrollback) in a
    fresh terminal. Built from formatter pieces, because the formatter's one-pass
    output does not quite round-trip:

    - Rows: the active area is formatted row by row (no unwrapping), so every row,
      blank ones included, lands where it was; a soft-wrapped row is continued by
      letting the terminal wrap (instead of a line break), so the wrap, and with it
      reflow on a later resize, survives. Scrollback is formatted as logical lines.
    - Modes that change how text is written (insert, no autowrap, origin) are
      emitted by the formatter before the content; they are moved after it, and
      with origin mode the final cursor position is made relative to the margins.

    - Blank cells are put right after the content (see `_blank_fixups`), and the
      saved cursor `saved`, if given, is saved again (DECSC) before the modes that
      change how the cursor moves are set.

    `extras` must include the cursor, whose position (CUP) marks the content's end.
    """
    cols = _u16(handle, lib.GHOSTTY_TERMINAL_DATA_COLS)
    rows = _u16(handle, lib.GHOSTTY_TERMINAL_DATA_ROWS)
    x, y = _u16(handle, lib.GHOSTTY_TERMINAL_DATA_CURSOR_X), _u16(handle, lib.GHOSTTY_TERMINAL_DATA_CURSOR_Y)
    full = _format(
        handle, extras, unwrap=False, selection=_selection(handle, lib.GHOSTTY_POINT_TAG_ACTIVE, 0, rows - 1)
    )
    cup = original_cup = b"\x1b[%d;%dH" % (y + 1, x + 1)
    at = full.rfind(cup)
    if at < 0:  # pragma: no cover - a formatter change; keep the bytes as they are
        return full
    head = _HEAD.match(full)
    assert head is not None  # every group can match empty
    modes = head.group("modes")
    if not _is_alternate(handle):
        # Mixed 47/1047/1049 use can leave a flag set on the primary screen; what
        # counts is which screen is active.
        for m in _ALT_SCREEN_MODES:
            modes = modes.replace(m, b"")
    deferred = [m for m in _DEFERRED_MODES if m in modes]
    for m in deferred:
        modes = modes.replace(m, b"")
    margins = _MARGINS.search(full, max(0, at - 32), at)
    end = margins.start() if margins else at
    margin_seqs = full[end:at]
    if _ORIGIN_MODE in deferred:
        top = int(t.group(1)) if (t := re.search(rb"\x1b\[(\d+);\d+r", margin_seqs)) else 1
        left = int(lm.group(1)) if (lm := re.search(rb"\x1b\[(\d+);\d+s", margin_seqs)) else 1
        cup = b"\x1b[%d;%dH" % (max(1, y + 2 - top), max(1, x + 2 - left))

    content: list[bytes] = []
    prev: tuple[bool, bool] | None = None  # (row soft-wrapped, its last cell written)
    history = _size_t(handle, lib.GHOSTTY_TERMINAL_DATA_SCROLLBACK_ROWS)
    if history:
        sel = _selection(handle, lib.GHOSTTY_POINT_TAG_SCREEN, 0, history - 1)
        content.append(_format(handle, _NO_EXTRAS, unwrap=True, selection=sel))
        prev = _row_end(handle, lib.GHOSTTY_POINT_TAG_SCREEN, cols, history - 1)
    active = full[head.end() : end]
    lines = active.split(b"\r\n") if active else []
    lines += [b""] * (rows - len(lines))
    for row, line in enumerate(lines):
        if prev is not None:
            wrapped, last_written = prev
            if not wrapped:
                content.append(b"\r\n")
            elif last_written:
                if not line:  # nothing to print on this row: land the wrap ourselves
                    content.append(_LAND)
            else:
                # The wrapped row ends in a blank cell: print there to reach the
                # wrap, land it, then blank that cell again with an insert (which,
                # unlike an erase, keeps the row's wrap flag).
                content.append(
                    b"\x1b[0m\x1b[%dG " % cols + _LAND + b"\x1b[A\x1b[%dG\x1b[@\x1b[B\x1b[1G" % cols
                )
        content.append(line)
        prev = _row_end(handle, lib.GHOSTTY_POINT_TAG_ACTIVE, cols, row)
    return b"".join(
        (
            head.group("palette"),
            modes,  # entering the alternate screen here saves the primary's pen ...
            b"\x1b[0m",  # ... which the content must not be written in
            head.group("tabs"),
            *content,
            _blank_fixups(handle),
            margin_seqs,
            _decsc(saved, margin_seqs, _ORIGIN_MODE in deferred) if saved is not None else b"",
            *deferred,
            cup,
            full[at + len(original_cup) :],
        )
    )


class SavedCursor(NamedTuple):
    """What DECRC would restore now: position (0-based, active area), origin mode,
    the pen as SGR bytes, and, when a wrap was pending, the bytes that print the
    cell under it again (which sets the pending wrap)."""

    x: int
    y: int
    origin: bool
    sgr: bytes
    reprint: bytes = b""
    erase: bytes = b""  # after saving: blank the reprinted cell again (the saved wrap stays)


def _saved_cursor(handle: Any) -> SavedCursor:
    """Read the saved cursor by restoring it (DECRC) in a private copy."""
    with decoded_copy(handle) as copy:
        lib.ghostty_terminal_vt_write(copy, b"\x1b8", 2)
        style = sized("GhosttyStyle")
        check(lib.ghostty_terminal_get(copy, lib.GHOSTTY_TERMINAL_DATA_CURSOR_STYLE, style), "cursor style")
        origin = ffi.new("GhosttyTerminalModeConfig*")
        origin.mode = 6  # DECOM; ghostty_mode_new's packing (DEC private: no ANSI bit)
        check(lib.ghostty_terminal_get(copy, lib.GHOSTTY_TERMINAL_DATA_MODE, origin), "origin mode")
        x, y = _u16(copy, lib.GHOSTTY_TERMINAL_DATA_CURSOR_X), _u16(copy, lib.GHOSTTY_TERMINAL_DATA_CURSOR_Y)
        reprint = erase = b""
        pending = ffi.new("bool*")
        check(lib.ghostty_terminal_get(copy, lib.GHOSTTY_TERMINAL_DATA_CURSOR_PENDING_WRAP, pending), "wrap")
        if pending[0]:
            ref = _grid_ref(copy, lib.GHOSTTY_POINT_TAG_ACTIVE, x, y)
            cell = ffi.new("GhosttyCell*")
            check(lib.ghostty_grid_ref_cell(ref, cell), "grid_ref_cell")
            has_text = ffi.new("bool*")
            check(lib.ghostty_cell_get(cell[0], lib.GHOSTTY_CELL_DATA_HAS_TEXT, has_text), "cell text")
            if has_text[0]:
                sel = sized("GhosttySelection")
                sel.start = sel.end = ref[0]
                reprint = _format(copy, _NO_EXTRAS, unwrap=False, selection=sel)
            else:  # a blank (perhaps only a background colour): a space, erased after
                reprint = b"\x1b[0m "
                erase = b"\x1b[0%sm\x1b[X" % _cell_bg(int(cell[0]))
        return SavedCursor(x, y, bool(origin.value), _sgr(style), reprint, erase)


def _decsc(saved: SavedCursor, margin_seqs: bytes, origin_now: bool) -> bytes:
    """Put the cursor and pen where `saved` says, DECSC, then leave origin mode as
    the (deferred) modes expect it: off."""
    if saved.origin:
        top = int(m.group(1)) if (m := re.search(rb"\x1b\[(\d+);\d+r", margin_seqs)) else 1
        left = int(m.group(1)) if (m := re.search(rb"\x1b\[(\d+);\d+s", margin_seqs)) else 1
        cup = b"\x1b[?6h\x1b[%d;%dH" % (max(1, saved.y + 2 - top), max(1, saved.x + 2 - left))
    else:
        cup = b"\x1b[%d;%dH" % (saved.y + 1, saved.x + 1)
    # autowrap is still on here (a "no autowrap" mode is deferred), so a reprint
    # at the last column leaves the wrap pending, as it was
    restore = cup + saved.reprint + saved.sgr + b"\x1b7" + saved.erase
    return restore + (b"\x1b[?6l" if saved.origin else b"") + b"\x1b[0m"


def _sgr_color(base: int, c: Any) -> bytes:
    if c.tag == lib.GHOSTTY_STYLE_COLOR_PALETTE:
        return b";%d;5;%d" % (base, c.value.palette)
    if c.tag == lib.GHOSTTY_STYLE_COLOR_RGB:
        return b";%d;2;%d;%d;%d" % (base, c.value.rgb.r, c.value.rgb.g, c.value.rgb.b)
    return b""


def _sgr(st: Any) -> bytes:
    """SGR that sets exactly the pen `st` (a GhosttyStyle)."""
    out = b"\x1b[0"
    for flag, code in (
        (st.bold, b";1"),
        (st.faint, b";2"),
        (st.italic, b";3"),
        (st.blink, b";5"),
        (st.inverse, b";7"),
        (st.invisible, b";8"),
        (st.strikethrough, b";9"),
        (st.overline, b";53"),
    ):
        if flag:
            out += code
    if st.underline:
        out += b";4:%d" % st.underline
    out += _sgr_color(38, st.fg_color) + _sgr_color(48, st.bg_color) + _sgr_color(58, st.underline_color)
    return out + b"m"


def _blank_fixups(handle: Any) -> bytes:
    """Erase again the blank cells the formatter wrote in a pen, and give cells that
    hold only a background colour that colour: per run, CUP, SGR, ECH (an erase
    that moves nothing and keeps the row's wrap flag). Needs the viewport at the
    bottom (a daemon's screen never scrolls back); otherwise nothing is fixed."""
    total, offset, length = _scrollbar(handle)
    if offset + length != total:
        return b""
    L = CELL
    out: list[bytes] = []
    for y, row in enumerate(viewport_cells(handle)):
        pen = False  # whether the formatter's pen may be non-default here
        x, n = 0, len(row)
        while x < n:
            cell = row[x]
            tag = (cell >> L.tag_shift) & L.tag_mask
            if tag == L.TAG_BG_PALETTE or tag == L.TAG_BG_RGB:
                end = x + 1
                while end < n and row[end] == cell:
                    end += 1
                out.append(b"\x1b[%d;%dH\x1b[0%sm\x1b[%dX" % (y + 1, x + 1, _cell_bg(cell), end - x))
                pen, x = True, end
                continue
            if cell & ~(L.wide_mask << L.wide_shift) == 0 and (cell >> L.wide_shift) & L.wide_mask == 0:
                end = x + 1
                while end < n and row[end] == 0:
                    end += 1
                if pen:
                    out.append(b"\x1b[%d;%dH\x1b[0m\x1b[%dX" % (y + 1, x + 1, end - x))
                x = end
                continue
            pen = (cell >> L.style_shift) & L.style_mask != 0
            x += 1
    if not out:
        return b""
    return b"".join(out) + b"\x1b[0m"


def _cell_bg(cell: int) -> bytes:
    """SGR parameters (with a leading ;) for the colour of a background-only cell."""
    L = CELL
    tag = (cell >> L.tag_shift) & L.tag_mask
    if tag == L.TAG_BG_PALETTE:
        return b";48;5;%d" % ((cell >> L.pal_shift) & L.pal_mask)
    if tag == L.TAG_BG_RGB:
        return b";48;2;%d;%d;%d" % (
            (cell >> L.r_shift) & 0xFF,
            (cell >> L.g_shift) & 0xFF,
            (cell >> L.b_shift) & 0xFF,
        )
    return b""


def _scrollbar(handle: Any) -> tuple[int, int, int]:
    sb = ffi.new("GhosttyTerminalScrollbar*")
    check(lib.ghostty_terminal_get(handle, lib.GHOSTTY_TERMINAL_DATA_SCROLLBAR, sb), "scrollbar")
    return int(sb.total), int(sb.offset), int(sb.len)


def _is_alternate(handle: Any) -> bool:
    out = ffi.new("GhosttyTerminalScreen*")
    check(lib.ghostty_terminal_get(handle, lib.GHOSTTY_TERMINAL_DATA_ACTIVE_SCREEN, out), "active screen")
    return bool(out[0] == lib.GHOSTTY_TERMINAL_SCREEN_ALTERNATE)


def _size_t(handle: Any, key: int) -> int:
    out = ffi.new("size_t*")
    check(lib.ghostty_terminal_get(handle, key, out), "terminal_get")
    return int(out[0])


def _u16(handle: Any, key: int) -> int:
    out = ffi.new("uint16_t*")
    check(lib.ghostty_terminal_get(handle, key, out), "terminal_get")
    return int(out[0])


def _grid_ref(handle: Any, tag: int, x: int, y: int) -> Any:
    fn = union_fn(
        "ghostty_terminal_grid_ref", "GhosttyResult(*)(GhosttyTerminal, GhosttyPointS, GhosttyGridRef*)"
    )
    pt = ffi.new("GhosttyPointS*")
    pt.tag = tag
    pt.value.x, pt.value.y = x, y
    ref = sized("GhosttyGridRef")
    check(fn(handle, pt[0], ref), "grid_ref")
    return ref


def _selection(handle: Any, tag: int, first_row: int, last_row: int) -> Any:
    """Whole rows `first_row`..`last_row` in coordinate system `tag`."""
    cols = _u16(handle, lib.GHOSTTY_TERMINAL_DATA_COLS)
    sel = sized("GhosttySelection")
    sel.start = _grid_ref(handle, tag, 0, first_row)[0]
    sel.end = _grid_ref(handle, tag, cols - 1, last_row)[0]
    return sel


def _row_end(handle: Any, tag: int, cols: int, row: int) -> tuple[bool, bool]:
    """(row is soft-wrapped, its last cell holds something the formatter wrote)."""
    ref = _grid_ref(handle, tag, cols - 1, row)
    raw_row = ffi.new("GhosttyRow*")
    check(lib.ghostty_grid_ref_row(ref, raw_row), "grid_ref_row")
    flag = ffi.new("bool*")
    check(lib.ghostty_row_get(raw_row[0], lib.GHOSTTY_ROW_DATA_WRAP, flag), "row wrap")
    if not flag[0]:
        return False, False
    cell = ffi.new("GhosttyCell*")
    check(lib.ghostty_grid_ref_cell(ref, cell), "grid_ref_cell")
    wide = (cell[0] >> CELL.wide_shift) & CELL.wide_mask
    has_text = ffi.new("bool*")
    check(lib.ghostty_cell_get(cell[0], lib.GHOSTTY_CELL_DATA_HAS_TEXT, has_text), "cell text")
    return True, bool(has_text[0]) or wide == CELL.WIDE_SPACER_TAIL
