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

from console.tui.model.columns import Column, fit
from console.tui.model.pending import PendingQueue
from console.tui.model.timefmt import age
from console.tui.model.watch_model import TripwireEntry
from console.tui.model.words import shown_command
from console.tui.render.present import agent_text, badge_text, command_cell
from console.tui.render.watch_text import tripwire_row
from console.tui.settings.roles import BADGE_CLASSES, BADGES, badge_class, role_class, roles
from console.tui.widgets.line_list import LineList

HOST_CHARS = 14
# The command (with its badges) decides a row; at 80 columns the tool gives way first,
# then who asked (down to the identity's short id); the host (with several) shrinks but
# stays. Who asked: `a-1234abcd label claude[4321]`, cut (then marked) past its width.
WHO_CELLS = 25
WHO_SHORT = 11
COLUMNS = (
    Column("HOST", HOST_CHARS + 2, minimum=10, gives_way=5),
    Column("AGE", 6, minimum=6, gives_way=9),
    Column("WHO", WHO_CELLS, minimum=WHO_SHORT, gives_way=2),
    Column("TOOL", 19, gives_way=1),
    Column("COMMAND", flex=True, minimum=20, share=0.35),
)


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
        self.marked: set[str] = set()  # queue keys of the rows marked for a bulk decision

    def on_mount(self) -> None:  # LineList.on_mount runs too (Textual calls each class's)
        self.set_interval(1.0, self._tick_ages)

    def _tick_ages(self) -> None:
        if self.row_count():
            self.rows_changed(self.scroll_offset.y)

    def row_count(self) -> int:
        return len(self.model)

    def row_key(self, index: int) -> Hashable:
        entry = self.model.entry(index)
        return entry.key, age(self.clock() - entry.item.submitted_at), entry.key in self.marked

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
        badges = badge_text(entry.badges, styles) if entry.badges else None
        columns = COLUMNS if self.host_column else COLUMNS[1:]
        widths = fit(columns, width - (badges.cell_len + 1 if badges is not None else 0))
        if self.marked:
            row.append("●" if entry.key in self.marked else " ", get(role_class("accent")))
        if self.host_column:
            w_host, widths = widths[0], widths[1:]
            host, _ = agent_text(entry.host, styles, get(role_class("accent")), limit=w_host - 2)
            host.pad_left(1)
            host.pad_right(w_host - host.cell_len)
            row.append_text(host)
        _, w_session, w_tool, _ = widths
        row.append(f" {age(self.clock() - item.submitted_at):>4} ", get(role_class("muted")))
        if w_session:
            # Who asked: the daemon's identity (short id, label, process), else the label
            # alone; only the short id where the column had to shrink (the detail says all).
            agent = item.agent if not isinstance(item, TripwireEntry) else UNSET
            who = agent.shown if agent is not UNSET else (item.session_id or "-")
            if agent is not UNSET and w_session < WHO_CELLS:
                who = f"anon {agent.id[2:8]}" if agent.anonymous else agent.id[:10]
            session, _ = agent_text(who, styles, get(role_class("secondary")), limit=w_session - 1)
            session.pad_right(w_session - session.cell_len)
            row.append_text(session)
        if isinstance(item, TripwireEntry):
            row.append_text(tripwire_row(item, styles, max(8, width - row.cell_len)))
            return Strip(list(row.render(self.app.console))).crop(0, width)
        if w_tool:
            tool, _ = agent_text(item.operation.tool, styles, get(role_class("accent")), limit=w_tool - 1)
            tool.pad_right(w_tool - tool.cell_len)
            row.append_text(tool)
        if badges is not None:
            row.append_text(badges)
            row.append(" ")
        room = max(8, width - row.cell_len)
        row.append_text(command_cell(shown_command(item), styles, room))
        return Strip(list(row.render(self.app.console))).crop(0, width)
