"""A terminal pane: one attached session, painted with the Line API.

The pane's :class:`~console.tui.widgets.pane_link.PaneLink` keeps an emulated screen
fed by the daemon's attach stream. The widget paints from that screen: after output it
asks the emulator for the rows that changed (its render state tracks them), converts
only those (through an LRU cache of strips keyed by row content) and refreshes only
those lines, at most once per display frame however fast output arrives.

Keys: while the program can take input, every key goes to it, encoded for its modes
(application cursor keys, kitty keyboard, ...), except the prefix (``pane-prefix``) and
the scroll-back keys. The key after the prefix is a console command: pane commands
(split, zoom, detach, search, copy ...), then the sessions view's, then the app's (so
``prefix q`` quits and ``prefix 1`` shows the queue). Pressing the prefix twice sends it.
``prefix [`` is copy mode (tmux's): the model in :mod:`console.tui.copy_mode`, the vi or
emacs table (``copy_mode_keys``) from the keymap; no key reaches the program meanwhile.

Mouse: reported to the program when it asked for mouse events (shift bypasses that);
otherwise the wheel scrolls back and a drag selects text, copied to the clipboard with
the console's own OSC 52 (Textual's ``copy_to_clipboard``) — the program's clipboard
writes are consumed by the emulator and never reach the operator's terminal.

Paste arrives as bracketed paste from the operator's terminal; text that could run or
hide something unseen is shown, escaped, and confirmed first: any line break (CR as
tmux and most terminals send it, CRLF, LF) where the program does not use bracketed
paste, any other control character (ESC included, so an embedded bracketed-paste end
marker), bidi controls and invisible characters (``console.terminal.paste_concerns``).
If the program switches bracketed paste while the question is open, nothing is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.worker import Worker

from console.contract.inert import inert
from console.terminal import Match, cell_width, encode_paste, paste_concerns
from console.terminal import Segment as Cells
from console.tui.actions import ActionSpec
from console.tui.bindings import bindings
from console.tui.clipboard import deliver
from console.tui.copy_mode import CopyModel, Hit, extract
from console.tui.widgets.pane_keys import PaneKeys, key_bytes
from console.tui.widgets.pane_link import ENDED, FAILED, LIVE, PaneLink
from console.tui.widgets.pane_paint import RowPainter, overlay

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
WHEEL_LINES = 3
PASTE_SHOWN_CHARS = 1500
_BREAK = re.compile("(\r\n|[\r\n\u2028\u2029])")
_BUTTONS = {1: "left", 2: "middle", 3: "right"}
_ids = itertools.count(1)
# Keys Textual names otherwise than a keymap file does (ctrl+space arrives as NUL).
_KEY_NAMES = {"ctrl+@": "ctrl+at"}

# (absolute row, column) — rows count from the oldest scrollback row, as Screen.search does.
Point = tuple[int, int]


@dataclass
class PaneState:
    """What a pane is, apart from its widget (which is rebuilt when the layout changes)."""

    link: PaneLink
    pane_id: int = field(default_factory=lambda: next(_ids))
    scrolling: bool = False
    needle: str = ""
    matches: list[Match] = field(default_factory=list)
    match_index: int = -1
    selection: tuple[Point, Point] | None = None
    copy: CopyModel | None = None  # in copy mode (prefix [): its cursor and selection
    task: Worker[None] | None = None

    @property
    def session_id(self) -> str:
        return self.link.session_id

    def ordered_selection(self) -> tuple[Point, Point] | None:
        if self.selection is None:
            return None
        a, b = self.selection
        return (a, b) if a <= b else (b, a)


def selected_text(lines: list[str], start: Point, end: Point) -> str:
    """The text between two cells (inclusive), as a terminal copies a selection."""
    return extract(lines, start, end, cell_width)


class TerminalPane(Widget, can_focus=True):
    """Paints ``state.link``'s screen and sends it keys, mouse and paste."""

    ALLOW_SELECT = False
    # Shown in the footer; the pane runs them itself (it takes every key first).
    BINDINGS: ClassVar[list[BindingType]] = bindings("pane-live")
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "terminal-pane--cursor",
        "terminal-pane--selection",
        "terminal-pane--match",
        "terminal-pane--current-match",
        "terminal-pane--outside",
        "terminal-pane--notice",
    }
    DEFAULT_CSS = """
    TerminalPane { background: $background; color: $foreground; height: 1fr; width: 1fr; }
    TerminalPane > .terminal-pane--cursor { text-style: reverse; }
    TerminalPane > .terminal-pane--selection { background: $primary 50%; }
    TerminalPane > .terminal-pane--match { background: $warning 40%; }
    TerminalPane > .terminal-pane--current-match { background: $warning; color: $background; }
    TerminalPane > .terminal-pane--outside { background: $panel; color: $text-muted; }
    TerminalPane > .terminal-pane--notice { color: $text-muted; text-style: italic; }
    """

    app: ConsoleApp

    class Changed(Message):
        """The pane's title bar has something new to say (state, title, scroll position)."""

        def __init__(self, pane: TerminalPane) -> None:
            super().__init__()
            self.pane = pane

    class Said(Message):
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

    # ------------------------------------------------------------ properties

    @property
    def link(self) -> PaneLink:
        return self.state.link

    @property
    def takes_every_key(self) -> bool:
        """The program gets every key, the app's priority bindings included (see
        ``ConsoleApp.check_action``); not while the prefix is armed, nor when nothing can
        be typed (read-only, ended) — except in copy mode, whose keys are all its own."""
        return (self.link.writable or self.state.copy is not None) and not self.armed

    def pane_keys(self) -> PaneKeys:
        keys_in_force = self.app.keys_in_force
        if self._keys is None or self._keys_for is not keys_in_force:
            self._keys = PaneKeys.from_keys(keys_in_force)
            self._keys_for = keys_in_force
        return self._keys

    def component_style(self, name: str) -> Style:
        found = self._styles.get(name)
        if found is None:
            found = self._styles[name] = self.get_component_rich_style(name)
        return found

    # ------------------------------------------------------------ lifecycle

    def on_mount(self) -> None:
        self.link.on_update = self.wake
        self.watch(self.app, "theme", lambda _: self.restyle(), init=False)
        self._paint()

    def on_unmount(self) -> None:
        if self.link.on_update == self.wake:
            self.link.on_update = lambda: None
        if self._paint_handle is not None:
            self._paint_handle.cancel()
            self._paint_handle = None

    def restyle(self) -> None:
        self._styles.clear()
        self._painter = None
        self._painted_screen = None
        self._paint()

    def on_resize(self, event: events.Resize) -> None:
        self.link.resize(event.size.width, event.size.height)
        self._place()
        self.refresh()

    def on_focus(self) -> None:
        self._repaint_cursor()
        self.link.resize(self.size.width, self.size.height)

    def on_blur(self) -> None:
        self.armed = False
        self._repaint_cursor()

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
            "title": inert(str(info.get("title") or " ".join(map(str, info.get("argv") or []))))[:120],
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
        return self.link.info.get("status_text") == "paused by tripwire"

    PAUSED_SAY = "the tripwire paused this session: resume it first (R in the list, r in the queue)"

    def _title_changed(self) -> None:
        parts = self.title_parts()
        key = tuple(parts.values())
        if key != self._title_key:
            self._title_key = key
            self.post_message(self.Changed(self))
            if self.is_mounted:
                self.refresh_bindings()  # which keys the footer shows depends on the state

    # ------------------------------------------------------------ keys

    async def on_key(self, event: events.Key) -> None:
        keys = self.pane_keys()
        key = event.key
        if self.armed:
            event.stop()
            event.prevent_default()
            try:
                if key in keys.prefix:
                    self._type(key, event.character)
                else:
                    spec = keys.after_prefix.get(key)
                    if spec is not None:
                        await self.run_spec(spec)
                    else:
                        self.say(f"{key}: not a pane command (prefix ? lists the keys)", "warning")
            finally:
                self.armed = False
                self._title_changed()
            return
        if self.state.copy is not None:
            # Copy mode's table first, then the prefix; nothing reaches the program.
            event.stop()
            event.prevent_default()
            table = keys.copying.get(self.copy_table(), {})
            for name in (key, *event.aliases, _KEY_NAMES.get(key, key)):
                spec = table.get(name)
                if spec is not None:
                    await self.run_spec(spec)
                    return
            if key in keys.prefix:
                self.action_prefix()
            return
        if key in keys.prefix:
            event.stop()
            event.prevent_default()
            self.action_prefix()
            return
        if self.state.scrolling:
            spec = keys.scrolling.get(key)
            if spec is not None:
                event.stop()
                event.prevent_default()
                await self.run_spec(spec)
                return
        spec = keys.live.get(key)
        if spec is not None:
            event.stop()
            event.prevent_default()
            await self.run_spec(spec)
            return
        if not self.link.writable:
            # Nothing can be typed here: pane commands still work without the prefix,
            # everything else is the console's (q, 1-5, ?, the sessions keys).
            spec = keys.after_prefix.get(key)
            if spec is not None and spec.scope == "pane":
                event.stop()
                event.prevent_default()
                await self.run_spec(spec)
            return
        event.stop()
        event.prevent_default()
        self._type(key, event.character)

    def action_prefix(self) -> None:
        self.armed = True
        self._title_changed()
        self.say(self.prefix_help(self.pane_keys()))

    def _type(self, key: str, character: str | None) -> None:
        encoder = self.link.keys
        if encoder is None:
            return
        data = key_bytes(encoder, key, character)
        if not data:
            return
        if self.paused:
            self.say(self.PAUSED_SAY, "warning")
            return
        if self.state.scrolling:
            self.leave_scroll()
        elif (
            self.link.screen is not None
            and self.link.screen.viewport[1] + self.link.screen.viewport[2] < self.link.screen.viewport[0]
        ):
            self.link.screen.scroll_to_bottom()
            self.wake()
        if not self.link.send(data):
            self.say(
                "this pane is read-only" if self.link.read_only else "the session is not running", "warning"
            )

    async def run_spec(self, spec: ActionSpec) -> None:
        """Run a table action: pane actions here (or on the sessions screen when they
        are about the layout), the view's on the screen, the app's on the app."""
        name = spec.action.split("(", 1)[0]
        if spec.scope == "app":
            await self.app.run_action(spec.action)
        elif (
            spec.scope in ("pane", "pane-live", "pane-scroll") or spec.scope.startswith("copy-")
        ) and hasattr(self, f"action_{name}"):
            await self.app.run_action(spec.action, self)
        else:
            await self.app.run_action(spec.action, self.screen)

    def prefix_help(self, keys: PaneKeys) -> str:
        seen: dict[str, list[str]] = {}
        for k, spec in keys.after_prefix.items():
            if spec.scope == "pane":
                seen.setdefault(spec.label or spec.description.split(" (")[0], []).append(k)
        shown = " · ".join(
            f"{self.app.get_key_display(Binding(ks[0], ''))} {label}" for label, ks in seen.items()
        )
        return f"prefix: {shown} · again: send it"

    def say(self, text: str, severity: str = "info") -> None:
        self.post_message(self.Said(text, severity))

    # ------------------------------------------------------------ paste

    async def on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()
        self.paste(event.text)

    def paste(self, text: str) -> None:
        """Paste ``text`` into the program, after asking when it could run or hide
        something unseen (see :func:`console.terminal.paste_concerns`)."""
        if not text:
            return
        if self.state.copy is not None:
            self.say("in copy mode nothing is sent: leave it first (q)", "warning")
            return
        if self.paused:
            self.say(self.PAUSED_SAY, "warning")
            return
        if not self.link.writable:
            self.say(
                "this pane is read-only" if self.link.read_only else "the session is not running", "warning"
            )
            return
        bracketed = self._bracketed()
        concerns = paste_concerns(text, bracketed)
        if not concerns:
            self._send_paste(text, bracketed)
            return
        from console.tui.screens.prompts import ConfirmPrompt

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            if self._bracketed() != bracketed:
                # What was shown no longer holds (a program that stopped bracketing
                # would run every line): ask again rather than send.
                self.say("the program changed its paste mode meanwhile; paste again", "warning")
                return
            self._send_paste(text, bracketed)

        self.app.push_screen(
            ConfirmPrompt(
                "Paste this into the session?", paste_preview(text, bracketed, concerns), yes="Paste"
            ),
            answered,
        )

    def _bracketed(self) -> bool:
        screen = self.link.screen
        return screen is not None and screen.modes.bracketed_paste

    def _send_paste(self, text: str, bracketed: bool) -> None:
        if self.state.scrolling:
            self.leave_scroll()
        self.link.send(encode_paste(text, bracketed))

    def action_paste_copied(self) -> None:
        text = self.app.clipboard
        if not text:
            self.say("nothing copied yet", "warning")
            return
        self.paste(text)

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

    def action_scroll_mode(self) -> None:
        """Prefix [: copy mode, which scrolls back as well (see :meth:`enter_copy`)."""
        self.enter_copy()

    def leave_scroll(self) -> None:
        state = self.state
        state.scrolling = False
        state.matches, state.match_index, state.needle = [], -1, ""
        if self.link.screen is not None:
            self.link.screen.scroll_to_bottom()
        self.wake()

    def action_leave_scroll(self) -> None:
        self.leave_scroll()

    # ------------------------------------------------------------ copy mode

    def copy_table(self) -> str:
        return str(getattr(self.app.config, "copy_mode_keys", "vi"))

    def _copy_lines(self) -> Sequence[str]:
        """The rows, read again only after output (about 40 ms for 10,000 rows)."""
        screen = self.link.screen
        if screen is None:
            return [""]
        if self.state.copy is not None and not self._text_stale:
            return self.state.copy.lines
        self._text_stale = False
        lines = screen.text(scrollback=True).split("\n")
        total = screen.viewport[0]
        return lines + [""] * (total - len(lines))

    def enter_copy(self) -> None:
        """Copy mode as tmux has it: a cursor over the scrollback, a selection, a search,
        a yank; the program gets no key until it is left."""
        screen = self.link.screen
        if screen is None:
            self.say("nothing to copy yet", "warning")
            return
        state = self.state
        total, offset, rows = screen.viewport
        if offset + rows >= total:  # at the bottom: start where the program's cursor is
            cursor = screen.cursor
            start = (total - screen.size[1] + cursor.y, cursor.x)
        else:
            start = (offset + rows - 1, 0)
        state.copy = CopyModel(self._copy_lines(), start, cell_width)
        state.scrolling = True
        state.selection = None
        state.matches, state.match_index, state.needle = [], -1, ""
        keys = (
            "v select, y yank, / ? search, q leave"
            if self.copy_table() == "vi"
            else ("C-space select, M-w yank, C-s C-r search, q leave")
        )
        self.say(f"copy mode: {keys}")
        self._copy_shown()

    def _copy_flag(self) -> str | None:
        copy = self.state.copy
        if copy is None:
            return None
        flag = f"copy {copy.row + 1}/{len(copy.lines)}"
        if copy.anchor is not None:
            flag += " lines" if copy.line_mode else " selecting"
        return flag

    def _copy_shown(self) -> None:
        """Scroll so the cursor is in view, show the selection, repaint."""
        copy, screen = self.state.copy, self.link.screen
        if copy is None or screen is None:
            return
        _, offset, rows = screen.viewport
        height = max(1, min(self.size.height or rows, rows - self._top))
        first = offset + self._top
        if copy.row < first:
            screen.scroll_to_row(copy.row - self._top)
        elif copy.row >= first + height:
            screen.scroll_to_row(copy.row - height + 1 - self._top)
        self.state.selection = copy.selection()
        self._title_changed()
        self.refresh()
        self._schedule()

    def action_copy_do(self, op: str) -> None:
        copy = self.state.copy
        if copy is None:
            return
        copy.update(self._copy_lines())
        half = max(1, self.size.height // 2)
        page = max(1, self.size.height - 1)
        moves = {
            "down": lambda: copy.vertical(1),
            "up": lambda: copy.vertical(-1),
            "half_down": lambda: copy.vertical(half),
            "half_up": lambda: copy.vertical(-half),
            "page_down": lambda: copy.vertical(page),
            "page_up": lambda: copy.vertical(-page),
            "select": lambda: copy.start_selection(),
            "select_line": lambda: copy.start_selection(lines=True),
            "next_match": lambda: self._copy_found(*copy.search()),
            "previous_match": lambda: self._copy_again_reversed(copy),
        }
        move = moves.get(op) or getattr(copy, op, None)
        if move is None:
            return
        move()
        self._copy_shown()

    def _copy_again_reversed(self, copy: CopyModel) -> None:
        forward = copy.forward
        found = copy.search(forward=not forward)
        copy.forward = forward
        self._copy_found(*found)

    def _copy_found(self, hit: Hit | None, wrapped: bool) -> None:
        copy, state = self.state.copy, self.state
        if copy is None:
            return
        if not copy.needle:
            self.say("no search yet (/ or ? to search)", "warning")
            return
        hits = copy.hits(copy.needle)
        state.needle = copy.needle
        state.matches = [Match(h.row, h.col, h.cells) for h in hits]
        if hit is None:
            state.match_index = -1
            self.say(f"not found: {inert(copy.needle)[:80]}", "warning")
            return
        state.match_index = hits.index(hit)
        note = " (wrapped around)" if wrapped else ""
        self.say(f"match {state.match_index + 1} of {len(hits)}{note}: {inert(copy.needle)[:80]}")

    def action_copy_search(self, forward: bool) -> None:
        from console.tui.screens.prompts import TextPrompt

        def answered(needle: str | None) -> None:
            copy = self.state.copy
            if needle and copy is not None:
                copy.update(self._copy_lines())
                self._copy_found(*copy.search(needle, forward=forward))
                self._copy_shown()
            self.focus()

        self.app.push_screen(
            TextPrompt(
                "Search forward (newer)" if forward else "Search backward (older)",
                "Text to find (not case-sensitive), from the cursor, wrapping around. n: again, N: back.",
                value=self.state.needle,
            ),
            answered,
        )

    def action_copy_yank(self) -> None:
        copy = self.state.copy
        if copy is None:
            return
        copy.update(self._copy_lines())
        text = copy.selected()
        what = "selection" if copy.anchor is not None else "line"
        self.leave_copy()
        if not text:
            self.say("nothing to copy", "warning")
            return
        self.app.copy_to_clipboard(text)
        self.run_worker(self._report_copy(text, what), group="copy", exclusive=True)

    def action_copy_leave(self) -> None:
        self.leave_copy()

    def leave_copy(self) -> None:
        self.state.copy = None
        self.state.selection = None
        self.leave_scroll()
        self._title_changed()
        self.refresh()

    # ------------------------------------------------------------ search

    def action_search(self) -> None:
        from console.tui.screens.prompts import TextPrompt

        def answered(needle: str | None) -> None:
            if needle:
                self.search(needle)
            self.focus()

        self.app.push_screen(
            TextPrompt(
                "Search the scrollback",
                "Text to find (not case-sensitive). n: next (older), N: previous (newer), escape: back.",
                value=self.state.needle,
            ),
            answered,
        )

    def search(self, needle: str) -> int:
        """Find ``needle`` in the scrollback and screen and show the newest hit; the number of hits."""
        screen = self.link.screen
        state = self.state
        if screen is None:
            return 0
        state.needle = needle
        state.matches = screen.search(needle)
        if not state.matches:
            state.match_index = -1
            self.say(f"not found: {inert(needle)[:80]}", "warning")
            self.wake()
            return 0
        state.scrolling = True
        state.match_index = len(state.matches) - 1
        self._show_match()
        return len(state.matches)

    def _show_match(self) -> None:
        screen = self.link.screen
        state = self.state
        if screen is None or not (0 <= state.match_index < len(state.matches)):
            return
        match = state.matches[state.match_index]
        _, offset, rows = screen.viewport
        if not (offset <= match.row < offset + rows):
            screen.scroll_to_row(max(0, match.row - rows // 2))
        self.say(f"match {state.match_index + 1} of {len(state.matches)}: {inert(state.needle)[:80]}")
        self.wake()

    def action_search_next(self, step: int) -> None:
        """``step`` -1: the next older match, 1: the next newer one."""
        state = self.state
        if not state.matches:
            self.say("no search (/ to search)", "warning")
            return
        state.match_index = (state.match_index + step) % len(state.matches)
        self._show_match()

    # ------------------------------------------------------------ copy and selection

    def copy_text(self) -> str:
        """The selection, or the visible screen when nothing is selected."""
        screen = self.link.screen
        if screen is None:
            return ""
        chosen = self.state.ordered_selection()
        if chosen is None:
            _, offset, rows = screen.viewport
            lines = screen.text(scrollback=True).split("\n")
            return "\n".join(line.rstrip() for line in lines[offset : offset + rows]).rstrip("\n")
        return selected_text(screen.text(scrollback=True).split("\n"), *chosen)

    def action_copy(self) -> None:
        text = self.copy_text()
        if not text:
            self.say("nothing to copy", "warning")
            return
        self.app.copy_to_clipboard(text)
        what = "selection" if self.state.selection is not None else "screen"
        self.run_worker(self._report_copy(text, what), group="copy", exclusive=True)

    async def _report_copy(self, text: str, what: str) -> None:
        delivery = await deliver(text, osc52_sent=True)
        if delivery.ok:
            self.say(f"copied the {what} ({len(text)} characters) to {delivery.where}", "ok")
        else:
            self.say(f"the {what} was not copied: {delivery.where}", "warning")

    def _point(self, x: int, y: int) -> Point | None:
        screen = self.link.screen
        if screen is None:
            return None
        row = min(max(0, y + self._top), len(self._rows) - 1)
        return screen.viewport[1] + row, max(0, x)

    def _mouse_for_program(self, event: events.MouseEvent) -> bool:
        screen = self.link.screen
        return (
            screen is not None
            and self.link.writable
            and self.state.copy is None
            and not event.shift
            and screen.modes.mouse_tracking != "none"
        )

    def _report(self, action: str, button: str | None, event: events.MouseEvent) -> None:
        mouse = self.link.mouse
        if mouse is None:
            return
        mods = [m for m, on in (("ctrl", event.ctrl), ("alt", event.meta)) if on]
        data = mouse.encode(action, button, event.x, event.y + self._top, mods)
        if data:
            self.link.send(data)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        event.stop()
        self.focus()
        if self._mouse_for_program(event):
            self._report("press", _BUTTONS.get(event.button), event)
            return
        if event.button == 1:
            self._drag_from = self._point(event.x, event.y)
            if self.state.selection is not None:
                self.state.selection = None
                self.refresh()
            self.capture_mouse()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._drag_from is not None:
            here = self._point(event.x, event.y)
            if here is not None:
                self.state.selection = (self._drag_from, here)
                self.refresh()
            return
        if self._mouse_for_program(event):
            self._report("motion", _BUTTONS.get(event.button), event)

    def on_mouse_up(self, event: events.MouseUp) -> None:
        event.stop()
        if self._drag_from is not None:
            self._drag_from = None
            self.capture_mouse(False)
            if self.state.selection is not None and self.state.selection[0] != self.state.selection[1]:
                self.action_copy()
            else:
                self.state.selection = None
            return
        if self._mouse_for_program(event):
            self._report("release", _BUTTONS.get(event.button), event)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        if self._mouse_for_program(event):
            self._report("press", "wheel_up", event)
            return
        self.action_scroll_lines(-WHEEL_LINES)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        if self._mouse_for_program(event):
            self._report("press", "wheel_down", event)
            return
        screen = self.link.screen
        self._scroll(WHEEL_LINES)
        if screen is not None and self.state.scrolling and not self.state.matches:
            total, offset, rows = screen.viewport
            if offset + rows >= total:
                self.state.scrolling = False
                self._title_changed()

    # ------------------------------------------------------------ teardown

    async def detach(self) -> None:
        with contextlib.suppress(Exception):
            await self.link.close()
        if self.state.task is not None:
            self.state.task.cancel()

    @property
    def ended(self) -> bool:
        return self.link.state in (ENDED, FAILED)


def paste_preview(text: str, bracketed: bool, concerns: list[str]) -> Text:
    """The confirmation's body: why it asks, then the paste with every control and
    invisible character escaped (a line break shows as its escape, then breaks the
    line). Plain ``Text``: nothing in the paste is ever read as markup."""
    breaks = len(_BREAK.findall(text))
    shown = Text(
        f"{len(text)} characters, {breaks} line break{'s' if breaks != 1 else ''}; the program "
        f"{'uses' if bracketed else 'does not use'} bracketed paste.\n"
    )
    for concern in concerns:
        shown.append(f"• {concern}\n", "italic")
    shown.append("\n")
    for piece in _BREAK.split(text[:PASTE_SHOWN_CHARS]):
        if _BREAK.fullmatch(piece):
            shown.append(inert(piece), "reverse")
            shown.append("\n")
        elif piece:
            shown.append(inert(piece), "bold")
    if len(text) > PASTE_SHOWN_CHARS:
        shown.append(f"\n… {len(text) - PASTE_SHOWN_CHARS} more characters")
    return shown
