"""Copy mode, search and copying in a terminal pane: the widget's side of
:mod:`console.tui.model.copy_mode`.

``prefix [`` is copy mode as tmux has it: a cursor over the scrollback, a selection, a
search, a yank, with the vi or emacs table from the keymap; the program gets no key
until it is left. Outside copy mode, ``/`` searches the scrollback and a selection (a
mouse drag) or the visible screen is copied. Copies go to the clipboard with the
console's own OSC 52 (Textual's ``copy_to_clipboard``), inside tmux also to its paste
buffer (:func:`console.tui.clipboard.deliver`), and the status line says where.
"""

from __future__ import annotations

from collections.abc import Sequence

from console.contract.inert import inert
from console.terminal import Match, cell_width
from console.tui.clipboard import deliver
from console.tui.model.copy_mode import CopyModel, Hit, extract
from console.tui.panes.state import Point
from console.tui.panes.view import PaneView


def selected_text(lines: list[str], start: Point, end: Point) -> str:
    """The text between two cells (inclusive), as a terminal copies a selection."""
    return extract(lines, start, end, cell_width)


class CopySearch(PaneView):
    """The pane's copy mode, scrollback search and copying."""

    def action_scroll_mode(self) -> None:
        """Prefix [: copy mode, which scrolls back as well (see :meth:`enter_copy`)."""
        self.enter_copy()

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

    # ------------------------------------------------------------ copying

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
