"""A list's header row, laid out by the same column plan as the list's rows.

The plan depends on the width (console/tui/model/columns.py): at 80 columns some
columns give way so the deciding one keeps its room, and the titles must move with them.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.css.query import NoMatches
from textual.widget import Widget

from console.tui.model.columns import Column, fit, header
from console.tui.widgets.line_list import LineList


class ColumnHeader(Widget):
    def __init__(
        self, columns: Sequence[Column], follows: str, *, lead: str = " ", id: str | None = None
    ) -> None:
        """``follows``: the id of the list whose rows it titles (its width decides the plan)."""
        super().__init__(id=id)
        self.columns = tuple(columns)
        self.follows = follows
        self.lead = lead

    def plan_width(self) -> int:
        try:
            view = self.screen.query_one(f"#{self.follows}", LineList)
        except NoMatches:
            return self.size.width
        return view.scrollable_content_region.width or self.size.width

    def render(self) -> Text:
        width = self.plan_width()
        widths = fit(self.columns, width - len(self.lead))
        return Text(self.lead + header(self.columns, widths), no_wrap=True, overflow="crop")
