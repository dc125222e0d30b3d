"""The history list: decisions and denials newest first, paged in from the daemon.

The daemon's store may hold a million rows; this widget holds only the pages seen so
far and asks for the next (``NeedMore``) when the cursor nears the end of what it has.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.message import Message
from textual.strip import Strip

from console.tui.model.timefmt import clock_time
from console.tui.render.outcome_text import RECORD_KINDS, record_row
from console.tui.render.present import agent_text
from console.tui.widgets.line_list import LineList

PREFETCH = 40  # ask for more when the cursor is this close to the end of what is loaded


class HistoryView(LineList):
    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "history-view--time",
        "history-view--allow",
        "history-view--deny",
        "history-view--source",
        "history-view--tool",
        "history-view--escape",
        "history-view--lookalike",
        "history-view--empty",
    }
    DEFAULT_CSS = """
    HistoryView > .history-view--time { color: $text-muted; }
    HistoryView > .history-view--allow { color: $success; text-style: bold; }
    HistoryView > .history-view--deny { color: $error; text-style: bold; }
    HistoryView > .history-view--source { color: $secondary; }
    HistoryView > .history-view--tool { color: $accent; }
    HistoryView > .history-view--escape { color: $error; text-style: reverse; }
    HistoryView > .history-view--lookalike { color: $warning; text-style: underline reverse; }
    HistoryView > .history-view--empty { color: $text-muted; text-style: italic; }
    """

    class NeedMore(Message):
        """The cursor is near the end of the loaded rows: load the page before ``older``."""

        def __init__(self, older: int) -> None:
            super().__init__()
            self.older = older

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[Mapping[str, Any]] = []
        self.older: int | None = None
        self.fetching = False
        self.empty_message = "Loading…"

    # ------------------------------------------------------------ data

    def set_rows(self, rows: list[Mapping[str, Any]], older: int | None) -> None:
        self.rows = list(rows)
        self.older = older
        self.fetching = False
        self._cache.clear()
        self.set_reactive(LineList.cursor, 0)
        self.scroll_to(y=0, animate=False, immediate=True)
        self.rows_changed(0)
        if self.rows:
            self.post_message(self.Highlighted(self, 0))

    def append_rows(self, rows: list[Mapping[str, Any]], older: int | None) -> None:
        first = len(self.rows)
        self.rows.extend(rows)
        self.older = older
        self.fetching = False
        self.rows_changed(first)

    def prepend_rows(self, rows: list[Mapping[str, Any]]) -> None:
        if not rows:
            return
        self.rows[:0] = rows
        self.set_reactive(
            LineList.cursor, self.cursor + len(rows) if self.cursor or self.scroll_offset.y else 0
        )
        self.rows_changed(0)

    def selected(self) -> Mapping[str, Any] | None:
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
        return self.rows[index].get("seq")

    def render_line(self, y: int) -> Strip:
        if not self.rows and y == 1:
            width = self.scrollable_content_region.width
            text = Text(f"  {self.empty_message}", self.component_style("history-view--empty"))
            return Strip(list(text.render(self.app.console))).adjust_cell_length(width, self.rich_style)
        return super().render_line(y)

    def _styles(self) -> dict[str, Style]:
        get = self.component_style
        return {
            "escape": get("history-view--escape"),
            "lookalike": get("history-view--lookalike"),
            "marker": get("line-list--dim"),
            "dim": get("line-list--dim"),
        }

    def render_row(self, index: int, width: int, selected: bool) -> Strip:
        r = self.rows[index]
        get = self.component_style
        styles = self._styles()
        row = Text(style=self.row_style(selected), no_wrap=True, overflow="crop", end="")
        kind = str(r.get("kind", ""))
        if kind in RECORD_KINDS:
            roles = ("time", "allow", "deny", "source", "tool")
            row.append_text(record_row(r, {**styles, **{k: get(f"history-view--{k}") for k in roles}}))
            return Strip(list(row.render(self.app.console))).crop(0, width)
        row.append(f" {clock_time(r.get('at'))} ", get("history-view--time"))
        verdict = str(r.get("verdict", "")) or kind
        row.append(
            f"{verdict[:8]:<6} ",
            get(
                "history-view--allow"
                if verdict == "allow"
                else "history-view--deny"
                if verdict == "deny"
                else "line-list--dim"
            ),
        )
        source = f"{r.get('source', '')}/{r.get('scope', '')}" if r.get("scope") else str(r.get("source", ""))
        row.append(f"{source[:16]:<16} ", get("history-view--source"))
        reason, _ = agent_text(str(r.get("reason", "")), styles, get("line-list--dim"), limit=22)
        reason.pad_right(23 - reason.cell_len)
        row.append_text(reason)
        tool, _ = agent_text(str(r.get("tool", "")), styles, get("history-view--tool"), limit=16)
        tool.pad_right(17 - tool.cell_len)
        row.append_text(tool)
        room = max(8, width - row.cell_len)
        command, _ = agent_text(str(r.get("command", "")), styles, limit=room)
        row.append_text(command)
        return Strip(list(row.render(self.app.console))).crop(0, width)
