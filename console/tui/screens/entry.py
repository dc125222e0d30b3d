"""One history entry in full, with its outcome and file changes."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType

from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.requests import HistoryDetail
from console.protocol.results import HistoryDetailResult
from console.tui.screens.base import ConsoleScreen, Services
from console.tui.screens.grant_prompt import grant_from_record
from console.tui.settings.bindings import bindings
from console.tui.widgets.entry_view import EntryView


class EntryScreen(ConsoleScreen):
    CONTEXT = "entry"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings("entry")]
    CSS_PATH = "entry.tcss"

    def __init__(self, services: Services, request_id: str) -> None:
        super().__init__(services)
        self.request_id = request_id
        self.detail: HistoryDetailResult | None = None

    def compose_body(self) -> ComposeResult:
        yield EntryView(
            max_chars=self.services.config.max_chars, max_lines=self.services.config.max_lines, id="entry"
        )

    def on_mount(self) -> None:
        self.query_one(EntryView).focus()
        self._load()

    @work(group="entry", exclusive=True)
    async def _load(self) -> None:
        try:
            self.detail = await self.services.link.request(HistoryDetail(request_id=self.request_id))
        except (RPCError, DaemonUnreachable) as exc:
            self.say(f"{self.request_id}: {inert(str(exc))}", "error")
            return
        self.query_one(EntryView).show(self.detail)
        self.say(f"{self.request_id} — o: outcome, g: grant, escape: back")

    def action_close(self) -> None:
        self.dismiss()

    def action_jump_outcome(self) -> None:
        self.query_one(EntryView).jump_outcome()

    def action_grant(self) -> None:
        if self.detail is not None:
            record = self.detail.decision or self.detail.request
            if record is not None:
                grant_from_record(self, record)
