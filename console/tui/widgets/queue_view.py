"""The pending queue: one line per request, oldest first, with age, who asked (the agent
identity: short id, label, process), tool, escalation badges and the command on one line
(escaped, cut to the width); with several hosts, the host first."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

from msgspec import UNSET
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from console.tui.model.pending import PendingQueue
from console.tui.model.timefmt import age
from console.tui.model.watch_model import TripwireEntry
from console.tui.render.present import agent_text, badge_text, command_cell
from console.tui.render.watch_text import tripwire_row
from console.tui.settings.roles import BADGE_CLASSES, BADGES, badge_class, role_class, roles
from console.tui.widgets.line_list import LineList

HOST_CHARS = 14
# The "who asked" column: `a-1234abcd label claude[4321]`, cut (then marked) past this;
# on a narrow screen the short id alone, so the command keeps its room (the detail says
# the rest).
WHO_CELLS = 24
WHO_CELLS_NARROW = 12
NARROW = 120


class QueueView(LineList):
    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | roles("secondary", "accent") | BADGE_CLASSES

    def __init__(
        self,
        model: PendingQueue,
        *,
        clock: Callable[[], float] = time.time,
        id: str | None = None,
        host_column: bool = False,
    ) -> None:
        super().__init__(id=id)
        self.model = model
        self.clock = clock
        self.host_column = host_column

    def on_mount(self) -> None:  # LineList.on_mount runs too (Textual calls each class's)
        self.set_interval(1.0, self._tick_ages)

    def _tick_ages(self) -> None:
        if self.row_count():
            self.rows_changed(self.scroll_offset.y)

    def row_count(self) -> int:
        return len(self.model)

    def row_key(self, index: int) -> Hashable:
        entry = self.model.entry(index)
        return entry.key, age(self.clock() - entry.item.submitted_at)

    def _styles(self) -> dict[str, Style]:
        get = self.component_style
        return {**self.agent_styles(), **{f"badge-{kind}": get(badge_class(kind)) for kind in BADGES}}

    def render_line(self, y: int) -> Strip:
        if self.row_count() == 0 and y == 1:
            width = self.scrollable_content_region.width
            message = "  No pending requests. New ones appear here as the agent asks."
            return Strip(
                [*Text(message, self.component_style(role_class("note"))).render(self.app.console)]
            ).adjust_cell_length(width, self.rich_style)
        return super().render_line(y)

    def render_row(self, index: int, width: int, selected: bool) -> Strip:
        entry = self.model.entry(index)
        item = entry.item
        styles = self._styles()
        base = self.row_style(selected)
        get = self.component_style
        row = Text(style=base, no_wrap=True, overflow="crop", end="")
        if self.host_column:
            host, _ = agent_text(entry.host, styles, get(role_class("accent")), limit=HOST_CHARS)
            host.pad_left(1)
            host.pad_right(HOST_CHARS + 2 - host.cell_len)
            row.append_text(host)
        row.append(f" {age(self.clock() - item.submitted_at):>4} ", get(role_class("muted")))
        # Who asked: the daemon's identity (short id, label, process), else the label alone.
        agent = item.agent if not isinstance(item, TripwireEntry) else UNSET
        who = agent.shown if agent is not UNSET else (item.session_id or "-")
        cells = WHO_CELLS if width >= NARROW else WHO_CELLS_NARROW
        if agent is not UNSET and width < NARROW:
            who = f"anon {agent.id[2:9]}" if agent.anonymous else agent.id[:10]
        session, _ = agent_text(who, styles, get(role_class("secondary")), limit=cells)
        session.pad_right(cells + 1 - session.cell_len)
        row.append_text(session)
        if isinstance(item, TripwireEntry):
            row.append_text(tripwire_row(item, styles, max(8, width - row.cell_len)))
            return Strip(list(row.render(self.app.console))).crop(0, width)
        tool, _ = agent_text(item.operation.tool, styles, get(role_class("accent")), limit=18)
        tool.pad_right(19 - tool.cell_len)
        row.append_text(tool)
        if entry.badges:
            row.append_text(badge_text(entry.badges, styles))
            row.append(" ")
        room = max(8, width - row.cell_len)
        row.append_text(command_cell(item.command, styles, room))
        return Strip(list(row.render(self.app.console))).crop(0, width)
