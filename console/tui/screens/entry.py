"""One history entry in full, with its outcome and file changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen

from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.tui.settings.bindings import bindings
from console.tui.widgets.badge_bar import BadgeBar
from console.tui.widgets.entry_view import EntryView
from console.tui.widgets.footer_bar import FooterBar
from console.tui.widgets.status_line import StatusLine

if TYPE_CHECKING:
    from console.tui.app import ConsoleApp


class EntryScreen(Screen[None]):
    CONTEXT = "entry"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings("entry")]
    DEFAULT_CSS = "EntryScreen EntryView { height: 1fr; }"

    app: ConsoleApp

    def __init__(self, request_id: str) -> None:
        super().__init__()
        self.request_id = request_id
        self.detail: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        yield BadgeBar(id="badges")
        yield EntryView(max_chars=self.app.config.max_chars, max_lines=self.app.config.max_lines, id="entry")
        yield StatusLine(id="status")
        yield FooterBar()

    def on_mount(self) -> None:
        self.query_one(EntryView).focus()
        self._load()

    @work(group="entry", exclusive=True)
    async def _load(self) -> None:
        try:
            self.detail = await self.app.link.call("history.detail", {"request_id": self.request_id})
        except (RPCError, DaemonUnreachable) as exc:
            self.query_one(StatusLine).say(f"{self.request_id}: {inert(str(exc))}", "error")
            return
        self.query_one(EntryView).show(self.detail)
        self.query_one(StatusLine).say(f"{self.request_id} — o: outcome, g: grant, escape: back")

    def action_close(self) -> None:
        self.dismiss()

    def action_jump_outcome(self) -> None:
        self.query_one(EntryView).jump_outcome()

    def action_grant(self) -> None:
        from console.tui.screens.history import grant_from_record

        if self.detail is not None:
            record = self.detail.get("decision") or self.detail.get("request")
            if record is not None:
                grant_from_record(self, record)
