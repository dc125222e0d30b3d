"""The history list: decisions and denials newest first, paged in from the daemon.

The daemon's store may hold a million rows; this widget holds only the pages seen so
far and asks for the next (``NeedMore``) when the cursor nears the end of what it has.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from rich.text import Text
from textual.message import Message
from textual.strip import Strip

from console.contract.tool_words import line_words
from console.protocol.records import HistoryRow
from console.tui.model.columns import Column, cell, fit
from console.tui.model.timefmt import clock_time
from console.tui.render.outcome_text import RECORD_KINDS, record_row
from console.tui.render.present import agent_text, command_cell
from console.tui.settings.roles import role_class
from console.tui.widgets.line_list import LineList

PREFETCH = 40  # ask for more when the cursor is this close to the end of what is loaded
# The verdict and the command decide a row; at 80 columns the reason and the tool give
# way first, then the source shrinks and the time loses its date.
COLUMNS = (
    Column("TIME", 20, minimum=9, gives_way=3, whole=True),
    Column("VERDICT", 7, minimum=7, gives_way=9),
    Column("SOURCE", 17, minimum=10, gives_way=4),
    Column("REASON", 23, minimum=18, gives_way=1),
    Column("TOOL", 17, gives_way=2),
    Column("COMMAND", flex=True, minimum=24, share=0.3),
)


class HistoryView(LineList):
    # The columns' looks (role text, console/tui/settings/roles.py).
    LOOKS: ClassVar[dict[str, str]] = {
        "time": role_class("muted"),
        "allow": role_class("ok-bold"),
        "deny": role_class("error-bold"),
        "source": role_class("secondary"),
        "tool": role_class("accent"),
    }
    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | set(LOOKS.values())

    class NeedMore(Message):
        """The cursor is near the end of the loaded rows: load the page before ``older``."""

        def __init__(self, older: int) -> None:
            super().__init__()
            self.older = older

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[HistoryRow] = []
        self.older: int | None = None
        self.fetching = False
        self.empty_message = "Loading…"

    # ------------------------------------------------------------ data

    def set_rows(self, rows: list[HistoryRow], older: int | None) -> None:
        self.rows = list(rows)
        self.older = older
        self.fetching = False
        self._cache.clear()
        self.set_reactive(LineList.cursor, 0)
        self.scroll_to(y=0, animate=False, immediate=True)
        self.rows_changed(0)
        if self.rows:
            self.post_message(self.Highlighted(self, 0))

    def append_rows(self, rows: list[HistoryRow], older: int | None) -> None:
        first = len(self.rows)
        self.rows.extend(rows)
        self.older = older
        self.fetching = False
        self.rows_changed(first)

    def prepend_rows(self, rows: list[HistoryRow]) -> None:
        if not rows:
            return
        self.rows[:0] = rows
        self.set_reactive(
            LineList.cursor, self.cursor + len(rows) if self.cursor or self.scroll_offset.y else 0
        )
        self.rows_changed(0)

    def selected(self) -> HistoryRow | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def watch_cursor(self, old: int, new: int) -> None:
        super().watch_cursor(old, new)
        self._maybe_more()

    def _maybe_more(self) -> None:
        if self.older is not None and not self.fetching and self.cursor >= len(self.rows) - PREFETCH:
            self.fetching = True
            self.post_message(self.NeedMore(self.older))

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if (
            self.older is not None
            and not self.fetching
            and new + self.size.height >= len(self.rows) - PREFETCH
        ):
            self.fetching = True
            self.post_message(self.NeedMore(self.older))

    # ------------------------------------------------------------ drawing

    def row_count(self) -> int:
        return len(self.rows)

    def row_key(self, index: int) -> Hashable:
        return self.rows[index].seq

    def render_line(self, y: int) -> Strip:
        if not self.rows and y == 1:
            width = self.scrollable_content_region.width
            text = Text(f"  {self.empty_message}", self.component_style(role_class("note")))
            return Strip(list(text.render(self.app.console))).adjust_cell_length(width, self.rich_style)
        return super().render_line(y)

    def render_row(self, index: int, width: int, selected: bool) -> Strip:
        r = self.rows[index]
        get = self.component_style
        styles = self.agent_styles()
        row = Text(style=self.row_style(selected), no_wrap=True, overflow="crop", end="")
        kind = r.kind
        if kind in RECORD_KINDS:
            row.append_text(record_row(r, {**styles, **{k: get(look) for k, look in self.LOOKS.items()}}))
            return Strip(list(row.render(self.app.console))).crop(0, width)
        w_time, w_verdict, w_source, w_reason, w_tool, _ = fit(COLUMNS, width - 1)
        row.append(" ")
        row.append(cell(clock_time(r.at, with_date=w_time >= 20), w_time), get(self.LOOKS["time"]))
        verdict = r.verdict or kind
        row.append(
            cell(verdict, w_verdict),
            get(
                self.LOOKS["allow"]
                if verdict == "allow"
                else self.LOOKS["deny"]
                if verdict == "deny"
                else role_class("muted")
            ),
        )
        source = f"{r.source}/{r.scope}" if r.scope else r.source
        row.append(cell(source, w_source), get(self.LOOKS["source"]))
        if w_reason:
            reason, _ = agent_text(r.reason, styles, get(role_class("muted")), limit=w_reason - 1)
            reason.pad_right(w_reason - reason.cell_len)
            row.append_text(reason)
        if w_tool:
            tool, _ = agent_text(r.tool, styles, get(self.LOOKS["tool"]), limit=w_tool - 1)
            tool.pad_right(w_tool - tool.cell_len)
            row.append_text(tool)
        room = max(8, width - row.cell_len)
        words = (
            line_words(r.tool, r.command, workspace_root=r.workspace_root, justification=r.justification)
            or r.command
        )
        row.append_text(command_cell(words, styles, room))
        return Strip(list(row.render(self.app.console))).crop(0, width)
