"""The pending queue: one line per request, oldest first, with age, session, tool,
escalation badges and the command on one line (escaped, cut to the width)."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from console.tui.model.pending import PendingQueue
from console.tui.model.timefmt import age
from console.tui.model.watch_model import is_tripwire
from console.tui.render.present import agent_text, badge_text
from console.tui.render.watch_text import tripwire_row
from console.tui.widgets.line_list import LineList

BADGE_ROLES = ("unrestricted", "protected", "workspace", "outside", "network", "environment", "other")


class QueueView(LineList):
    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {
        "queue-view--age",
        "queue-view--session",
        "queue-view--tool",
        "queue-view--escape",
        "queue-view--lookalike",
        "queue-view--empty",
        *(f"queue-view--badge-{role}" for role in BADGE_ROLES),
    }
    DEFAULT_CSS = """
    QueueView > .queue-view--age { color: $text-muted; }
    QueueView > .queue-view--session { color: $secondary; }
    QueueView > .queue-view--tool { color: $accent; }
    QueueView > .queue-view--escape { color: $error; text-style: reverse; }
    QueueView > .queue-view--lookalike { color: $warning; text-style: underline reverse; }
    QueueView > .queue-view--empty { color: $text-muted; text-style: italic; }
    QueueView > .queue-view--badge-unrestricted { background: $error; color: $background; text-style: bold; }
    QueueView > .queue-view--badge-protected { background: $error; color: $background; text-style: bold; }
    QueueView > .queue-view--badge-workspace { background: $error 70%; color: $background; text-style: bold; }
    QueueView > .queue-view--badge-outside { background: $warning; color: $background; text-style: bold; }
    QueueView > .queue-view--badge-network { background: $warning; color: $background; text-style: bold; }
    QueueView > .queue-view--badge-environment { background: $accent; color: $background; }
    QueueView > .queue-view--badge-other { background: $secondary; color: $foreground; }
    """

    def __init__(
        self, model: PendingQueue, *, clock: Callable[[], float] = time.time, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.model = model
        self.clock = clock

    def on_mount(self) -> None:
        super().on_mount()
        self.set_interval(1.0, self._tick_ages)

    def _tick_ages(self) -> None:
        if self.row_count():
            self.rows_changed(self.scroll_offset.y)

    def row_count(self) -> int:
        return len(self.model)

    def row_key(self, index: int) -> Hashable:
        entry = self.model.entry(index)
        return entry.request_id, age(self.clock() - entry.item.get("submitted_at", 0))

    def _styles(self) -> dict[str, Style]:
        get = self.component_style
        styles = {f"badge-{r}": get(f"queue-view--badge-{r}") for r in BADGE_ROLES}
        styles.update(
            escape=get("queue-view--escape"),
            lookalike=get("queue-view--lookalike"),
            marker=get("line-list--dim"),
            dim=get("line-list--dim"),
        )
        return styles

    def render_line(self, y: int) -> Strip:
        if self.row_count() == 0 and y == 1:
            width = self.scrollable_content_region.width
            message = "  No pending requests. New ones appear here as the agent asks."
            return Strip(
                [*Text(message, self.component_style("queue-view--empty")).render(self.app.console)]
            ).adjust_cell_length(width, self.rich_style)
        return super().render_line(y)

    def render_row(self, index: int, width: int, selected: bool) -> Strip:
        entry = self.model.entry(index)
        item = entry.item
        styles = self._styles()
        base = self.row_style(selected)
        get = self.component_style
        row = Text(style=base, no_wrap=True, overflow="crop", end="")
        row.append(f" {age(self.clock() - item.get('submitted_at', 0)):>4} ", get("queue-view--age"))
        session, _ = agent_text(
            item.get("session_id", "") or "-", styles, get("queue-view--session"), limit=12
        )
        session.pad_right(13 - session.cell_len)
        row.append_text(session)
        tool, _ = agent_text(
            (item.get("operation") or {}).get("tool", ""), styles, get("queue-view--tool"), limit=18
        )
        if is_tripwire(item):
            row.append_text(tripwire_row(item, styles, max(8, width - row.cell_len)))
            return Strip(list(row.render(self.app.console))).crop(0, width)
        tool.pad_right(19 - tool.cell_len)
        row.append_text(tool)
        if entry.badges:
            row.append_text(badge_text(entry.badges, styles))
            row.append(" ")
        room = max(8, width - row.cell_len)
        command, _ = agent_text(item.get("command", ""), styles, limit=room)
        row.append_text(command)
        return Strip(list(row.render(self.app.console))).crop(0, width)
