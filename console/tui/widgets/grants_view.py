"""Grants and deny-rules: scope, created, expiry, uses, last use, and what they cover;
with several hosts, the host first (each host's grants are its own daemon's)."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import ClassVar

from rich.text import Text
from textual.strip import Strip

from console.contract.tool_words import row_words
from console.protocol.grants import GrantObject
from console.tui.model.columns import Column, cell, fit
from console.tui.model.timefmt import age_ago, clock_time
from console.tui.render.present import agent_text
from console.tui.settings.roles import role_class
from console.tui.widgets.line_list import LineList

# WHAT decides the row (with EFFECT and SCOPE); at 80 columns CREATED, the id and the
# last use give way first (the id is in the detail, and `grants` on the command line).
COLUMNS = (
    Column("ID", 14, gives_way=1),
    Column("EFFECT", 7, minimum=7, gives_way=9),
    Column("SCOPE", 9, minimum=9, gives_way=8),
    Column("CREATED", 17, gives_way=0),
    Column("EXPIRES", 17, gives_way=4),
    Column("USES", 6, gives_way=3, right=True),
    Column("LAST USE", 10, gives_way=2),
    Column("WHAT", flex=True, minimum=20, share=0.3),
)
HOST_CHARS = 14
# With several hosts: which daemon holds the grant, before the rest (it shrinks but stays).
HOST_COLUMNS = (Column("HOST", HOST_CHARS + 2, minimum=10, gives_way=5), *COLUMNS)


def _minute(ts: float | None) -> str:
    return clock_time(ts)[:16] if ts else "-"


class GrantsView(LineList):
    # An effect's look, and a grant that no longer applies (role text, settings/roles.py).
    EFFECTS: ClassVar[dict[str, str]] = {"allow": role_class("ok-bold"), "deny": role_class("error-bold")}
    INACTIVE = role_class("struck")
    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {*EFFECTS.values(), INACTIVE, role_class("accent")}

    def __init__(
        self, *, clock: Callable[[], float] = time.time, id: str | None = None, host_column: bool = False
    ) -> None:
        super().__init__(id=id)
        self.rows: list[GrantObject] = []
        self.hosts: list[str] = []  # each row's host ("" with one host)
        self.clock = clock
        self.host_column = host_column
        self.empty_message = "Loading…"

    def set_rows(self, rows: list[GrantObject], hosts: list[str] | None = None) -> None:
        """``hosts``: each row's host, in step with ``rows`` (None: one host)."""
        self.rows = rows
        self.hosts = list(hosts) if hosts is not None else [""] * len(rows)
        self.empty_message = "No grants yet. Approve for a session or always, or grant from the history."
        self._cache.clear()
        self.rows_changed(0)
        if rows:
            self.post_message(self.Highlighted(self, self.cursor))

    def selected(self) -> GrantObject | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def selected_host(self) -> str:
        return self.hosts[self.cursor] if 0 <= self.cursor < len(self.hosts) else ""

    def row_count(self) -> int:
        return len(self.rows)

    def row_key(self, index: int) -> Hashable:
        g = self.rows[index]
        return self.hosts[index], g.id, g.uses, g.last_used_at, g.revoked_at, g.ended(self.clock())

    def render_line(self, y: int) -> Strip:
        if not self.rows and y == 1:
            width = self.scrollable_content_region.width
            text = Text(f"  {self.empty_message}", self.component_style(role_class("note")))
            return Strip(list(text.render(self.app.console))).adjust_cell_length(width, self.rich_style)
        return super().render_line(y)

    def render_row(self, index: int, width: int, selected: bool) -> Strip:
        g = self.rows[index]
        get = self.component_style
        styles = self.agent_styles()
        ended = g.ended(self.clock())
        row = Text(" ", style=self.row_style(selected), no_wrap=True, overflow="crop", end="")
        if self.host_column:
            w_host, *widths = fit(HOST_COLUMNS, width - 1)
            if w_host:
                host, _ = agent_text(self.hosts[index], styles, get(role_class("accent")), limit=w_host - 2)
                host.pad_right(w_host - host.cell_len)
                row.append_text(host)
        else:
            widths = list(fit(COLUMNS, width - 1))
        w_id, w_effect, w_scope, w_created, w_expires, w_uses, w_last, _ = widths
        row.append(cell(g.id, w_id))
        effect = g.effect
        row.append(cell(effect, w_effect), get(self.EFFECTS[effect]) if effect in self.EFFECTS else None)
        row.append(cell(g.scope, w_scope))
        row.append(cell(_minute(g.created_at), w_created))
        row.append(cell(_minute(g.expires_at) if g.expires_at is not None else "never", w_expires))
        row.append(cell(str(g.uses), w_uses, right=True))
        last = g.last_used_at
        row.append(cell(age_ago(self.clock() - last) if last is not None else "never", w_last))
        if ended:
            row.append(f"{ended} ", get(self.INACTIVE))
        what = (
            row_words({"tool": g.tool, "command": g.summary})
            or g.summary
            or f"fingerprint {g.fingerprint[:16]}…"
        )
        if g.session_id:
            what = f"[session {g.session_id}] {what}"
        room = max(8, width - row.cell_len)
        piece, _ = agent_text(what, styles, limit=room)
        if ended:
            piece.stylize(get(self.INACTIVE))
        row.append_text(piece)
        return Strip(list(row.render(self.app.console))).crop(0, width)
