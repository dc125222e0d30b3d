"""Grants and deny-rules: scope, created, expiry, uses, last use, and what they cover."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import ClassVar

from rich.text import Text
from textual.strip import Strip

from console.protocol.grants import GrantObject
from console.tui.model.timefmt import age, clock_time
from console.tui.render.present import agent_text
from console.tui.settings.roles import role_class
from console.tui.widgets.line_list import LineList

HEADER = (
    f" {'ID':<13} {'EFFECT':<6} {'SCOPE':<8} {'CREATED':<16} {'EXPIRES':<16} {'USES':>5} {'LAST USE':<9} WHAT"
)


def _minute(ts: float | None) -> str:
    return clock_time(ts)[:16] if ts else "-"


class GrantsView(LineList):
    # An effect's look, and a grant that no longer applies (role text, settings/roles.py).
    EFFECTS: ClassVar[dict[str, str]] = {"allow": role_class("ok-bold"), "deny": role_class("error-bold")}
    INACTIVE = role_class("struck")
    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | {*EFFECTS.values(), INACTIVE}

    def __init__(self, *, clock: Callable[[], float] = time.time, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[GrantObject] = []
        self.clock = clock
        self.empty_message = "Loading…"

    def set_rows(self, rows: list[GrantObject]) -> None:
        self.rows = rows
        self.empty_message = "No grants yet. Approve for a session or always, or grant from the history."
        self._cache.clear()
        self.rows_changed(0)
        if rows:
            self.post_message(self.Highlighted(self, self.cursor))

    def selected(self) -> GrantObject | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def row_count(self) -> int:
        return len(self.rows)

    def row_key(self, index: int) -> Hashable:
        g = self.rows[index]
        return g.id, g.uses, g.last_used_at, g.revoked_at, g.ended(self.clock())

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
        row = Text(style=self.row_style(selected), no_wrap=True, overflow="crop", end="")
        row.append(f" {g.id[:13]:<13} ")
        effect = g.effect
        row.append(f"{effect:<6} ", get(self.EFFECTS[effect]) if effect in self.EFFECTS else None)
        row.append(f"{g.scope:<8} ")
        row.append(f"{_minute(g.created_at):<16} ")
        row.append(f"{_minute(g.expires_at) if g.expires_at is not None else 'never':<16} ")
        row.append(f"{g.uses:>5} ")
        last = g.last_used_at
        row.append(f"{age(self.clock() - last) + ' ago' if last is not None else 'never':<9} ")
        if ended:
            row.append(f"{ended} ", get(self.INACTIVE))
        what = g.summary or f"fingerprint {g.fingerprint[:16]}…"
        if g.session_id:
            what = f"[session {g.session_id}] {what}"
        room = max(8, width - row.cell_len)
        piece, _ = agent_text(what, styles, limit=room)
        if ended:
            piece.stylize(get(self.INACTIVE))
        row.append_text(piece)
        return Strip(list(row.render(self.app.console))).crop(0, width)
