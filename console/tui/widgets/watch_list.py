"""The watch panel's list: file events newest first, protected ones in the theme's error colour.

A Line-API list over :class:`~console.tui.model.watch_model.WatchEvents` (10,000 rows
kept): only visible rows are drawn, each once per width and theme. New batches go on
top; the cursor stays on the event the operator selected, unless it was on the newest
row, which then follows the newest event.
"""

from __future__ import annotations

from collections.abc import Hashable

from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from console.tui.model.watch_model import WatchEvents
from console.tui.render.watch_text import event_row
from console.tui.settings.roles import role_class
from console.tui.widgets.line_list import LineList

# The roles of a row (render/watch_text.py's event_row) and their looks (settings/roles.py).
ROW_LOOKS = {
    "time": role_class("muted"),
    "protected": role_class("error-bold"),
    "pattern": role_class("alarm"),
    "flag": role_class("warning-bold"),
    "added": role_class("ok"),
    "removed": role_class("warning"),
    "modified": role_class("accent"),
    "label": role_class("muted"),
    "escape": role_class("escape"),
    "lookalike": role_class("lookalike"),
}


def _foreground(style: Style) -> Style:
    """A component style without its background, so the cursor row's background shows through."""
    return Style(color=style.color, bold=style.bold, italic=style.italic, underline=style.underline)


class WatchList(LineList):
    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | set(ROW_LOOKS.values())

    def __init__(self, model: WatchEvents, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self.degraded: set[str] = set()
        self.empty_message = "No file changes yet. They appear here as they happen."

    def row_count(self) -> int:
        return len(self.model)

    def row_key(self, index: int) -> Hashable:
        event = self.model[index]
        return event.seq, event.workspace_root in self.degraded

    def _styles(self) -> dict[str, Style]:
        get = self.component_style
        styles = {role: _foreground(get(look)) for role, look in ROW_LOOKS.items()}
        for role in ("pattern", "escape", "lookalike"):  # badges keep their background
            styles[role] = get(ROW_LOOKS[role])
        muted = _foreground(get(role_class("muted")))
        styles.update(marker=muted, dim=muted)
        return styles

    def render_line(self, y: int) -> Strip:
        if self.row_count() == 0 and y == 1:
            width = self.scrollable_content_region.width
            text = Text(f"  {self.empty_message}", self.component_style(role_class("note")))
            return Strip(list(text.render(self.app.console))).adjust_cell_length(width, self.rich_style)
        return super().render_line(y)

    def render_row(self, index: int, width: int, selected: bool) -> Strip:
        row = event_row(self.model[index], self._styles(), width, self.degraded)
        base = Text(style=self.row_style(selected), no_wrap=True, overflow="crop", end="")
        base.append_text(row)
        return Strip(list(base.render(self.app.console))).crop(0, width)

    def added(self, on_top: int) -> None:
        """``on_top`` rows were put above the others: keep the selection where it was."""
        if on_top and (self.cursor or self.scroll_offset.y):
            self.set_reactive(LineList.cursor, self.cursor + on_top)
            self.scroll_to(y=self.scroll_offset.y + on_top, animate=False, immediate=True)
        self.rows_changed(0)

    def reset(self) -> None:
        """The rows were replaced (reload, filter toggled)."""
        self._cache.clear()
        self.set_reactive(LineList.cursor, 0)
        self.scroll_to(y=0, animate=False, immediate=True)
        self.rows_changed(0)
        if self.row_count():
            self.post_message(self.Highlighted(self, 0))
