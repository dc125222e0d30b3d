"""The session list: title, command, status, age, CPU, memory and last output per session,
and whether it runs in the sandbox (``UNCONFINED`` when the operator started it outside).

Titles, argv and terminal titles are the agent's (or a program's) text: shown through
:func:`console.tui.render.present.agent_text`, escaped and flagged, never as markup.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.strip import Strip

from console.protocol.sessions import SessionObject, recording_note
from console.tui.model.columns import Column, cell, fit
from console.tui.model.timefmt import age
from console.tui.render.present import agent_text
from console.tui.settings.roles import role_class
from console.tui.widgets.line_list import LineList

# The status and what runs decide a row; at 80 columns CPU, memory, age, output and the
# owner give way first. Whether the session is confined stays (in short at worst).
COLUMNS = (
    Column("ID", 11, minimum=9, gives_way=6),
    Column("STATUS", 19, minimum=19, gives_way=9),
    Column("AGE", 6, gives_way=3, right=True),
    Column("CPU", 7, gives_way=1, right=True),
    Column("MEM", 8, gives_way=2, right=True),
    Column("OUTPUT", 9, gives_way=4, right=True),
    Column("OWNER", 17, minimum=12, gives_way=5),
    Column("BOX", 11, minimum=7, gives_way=7, whole=True),
    Column("TITLE / COMMAND", flex=True, minimum=20, share=0.3),
)


def memory(n: Any) -> str:
    if not n:
        return "-"
    n = float(n)
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{int(n)}B"


def command_line(session: SessionObject) -> str:
    return shlex.join(session.argv) if session.argv else ""


class SessionsView(LineList):
    # A status's look, and the marks beside a row (role text, settings/roles.py).
    LOOKS: ClassVar[dict[str, str]] = {
        "running": role_class("ok"),
        "idle": role_class("muted"),
        "awaiting": role_class("warning-bold"),
        "ended": role_class("note"),
        "attached": role_class("primary-bold"),
        "recording": role_class("warning"),
        "sandboxed": role_class("muted"),
        "unconfined": role_class("warning-bold"),
    }
    COMPONENT_CLASSES = LineList.COMPONENT_CLASSES | set(LOOKS.values())

    def __init__(self, *, clock: Callable[[], float] = time.time, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[SessionObject] = []
        self.clock = clock
        self.attached: frozenset[str] = frozenset()
        self.empty_message = "Loading…"

    def set_rows(self, rows: Sequence[SessionObject], attached: frozenset[str] | None = None) -> None:
        """Replace the rows, keeping the cursor on the same session."""
        current = self.selected()
        self.rows = list(rows)
        if attached is not None:
            self.attached = attached
        self.empty_message = (
            "No sessions. n starts one (in the sandbox); agents' interactive operations appear here."
        )
        self._cache.clear()
        if current is not None:
            for i, row in enumerate(rows):
                if row.id == current.id:
                    if i != self.cursor:
                        self.set_reactive(LineList.cursor, i)
                    break
        self.rows_changed(0)
        if rows:
            self.post_message(self.Highlighted(self, min(self.cursor, len(rows) - 1)))

    def selected(self) -> SessionObject | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def select_session(self, session_id: str) -> bool:
        for i, row in enumerate(self.rows):
            if row.id == session_id:
                self.cursor = i
                return True
        return False

    def row_count(self) -> int:
        return len(self.rows)

    def row_key(self, index: int) -> Hashable:
        s = self.rows[index]
        now = int(self.clock())
        return (
            s.id,
            s.status_text,
            s.title,
            s.terminal_title,
            s.stats,
            s.last_output_at and now - int(s.last_output_at),
            now - int(s.created_at or now),
            s.id in self.attached,
            recording_note(s),
            s.sandboxed,
        )

    def render_line(self, y: int) -> Strip:
        if not self.rows and y == 1:
            width = self.scrollable_content_region.width
            text = Text(f"  {self.empty_message}", self.component_style(role_class("note")))
            return Strip(list(text.render(self.app.console))).adjust_cell_length(width, self.rich_style)
        return super().render_line(y)

    def render_row(self, index: int, width: int, selected: bool) -> Strip:
        s = self.rows[index]
        get = self.component_style
        styles = self.agent_styles()
        now = self.clock()
        status_text = s.status_text or s.status
        if status_text == "awaiting approval":
            look = "awaiting"
        elif s.alive:
            look = s.status
        else:
            look = "ended"
        sampled = s.stats if s.alive and s.stats is not None and s.stats.sampled_at else None
        cpu = f"{sampled.cpu_percent:.1f}%" if sampled is not None else "-"
        mem = memory(sampled.rss_bytes) if sampled is not None else "-"
        last = s.last_output_at
        output = age(now - last) if last else "-"
        sid = s.id
        row = Text(style=self.row_style(selected), no_wrap=True, overflow="crop", end="")
        note = recording_note(s)
        full, width = width, max(8, width - len(note) - 2) if note else width
        marker = "▶" if sid in self.attached else " "
        row.append(marker, get(self.LOOKS["attached"]))
        w_id, w_status, w_age, w_cpu, w_mem, w_output, w_owner, w_box, _ = fit(COLUMNS, width - 1)
        row.append(cell(sid, w_id))
        row.append(cell(status_text, w_status), get(self.LOOKS[look]))
        row.append(cell(age(now - (s.created_at or now)), w_age, right=True))
        row.append(
            cell(cpu, w_cpu, right=True) + cell(mem, w_mem, right=True) + cell(output, w_output, right=True)
        )
        owner, _ = agent_text(s.owner, styles, limit=w_owner - 1)
        row.append_text(owner)
        row.append(" " * max(1, w_owner - owner.cell_len))
        full_box = w_box >= 11
        if s.sandboxed:
            row.append(cell("sandbox" if full_box else "box", w_box), get(self.LOOKS["sandboxed"]))
        else:
            row.append(cell("UNCONFINED" if full_box else "UNCONF", w_box), get(self.LOOKS["unconfined"]))
        title = s.title
        room = max(8, width - row.cell_len)
        if title:
            piece, _ = agent_text(title, styles, limit=room)
            row.append_text(piece)
            row.append("  ")
            room = max(8, width - row.cell_len)
        piece, _ = agent_text(command_line(s), styles, limit=room)
        piece.stylize(get(role_class("muted")) if title else "")
        row.append_text(piece)
        terminal_title = s.terminal_title
        if terminal_title and width - row.cell_len > 8:
            row.append("  — ", get(role_class("muted")))
            piece, _ = agent_text(terminal_title, styles, limit=max(4, width - row.cell_len))
            row.append_text(piece)
        if note:  # it ends the row whatever the command's length
            row.truncate(width, pad=True)
            row.append("  ")
            row.append(note, get(self.LOOKS["recording"]))
        return Strip(list(row.render(self.app.console))).crop(0, full)
