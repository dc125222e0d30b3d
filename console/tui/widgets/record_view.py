"""A file-event or tripwire record of the history, in full (the history opens it)."""

from __future__ import annotations

from console.protocol.records import HistoryRow
from console.tui.render.outcome_text import render_record
from console.tui.widgets.text_view import DetailView


class RecordView(DetailView):
    def __init__(self, record: HistoryRow, *, limit: int, id: str | None = None) -> None:
        super().__init__(id=id)
        self.record = record
        self.limit = limit

    def on_mount(self) -> None:
        self.refresh_record()

    def refresh_view(self) -> None:
        self.refresh_record()

    def refresh_record(self) -> None:
        self.set_text(render_record(self.record, self.styles_map(), self.limit))
