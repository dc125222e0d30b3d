"""One request from the history: what was asked, the decision, the outcome, the file changes."""

from __future__ import annotations

import time

from rich.text import Text

from console.protocol.results import HistoryDetailResult
from console.tui.model.badges import badges
from console.tui.render.outcome_text import render_files, render_outcome
from console.tui.render.present import (
    DetailOptions,
    item_from_request_record,
    render_decision,
    render_request,
)
from console.tui.widgets.text_view import DetailView


class EntryView(DetailView):
    def __init__(self, *, max_chars: int = 2000, max_lines: int = 40, id: str | None = None) -> None:
        super().__init__(id=id)
        self.options = DetailOptions(
            max_chars=max_chars, max_lines=max_lines, with_previous=False, with_target=False
        )
        self.detail: HistoryDetailResult | None = None

    def on_mount(self) -> None:
        self.set_text(Text("Loading…"))

    def refresh_view(self) -> None:
        self.refresh_entry()

    def show(self, detail: HistoryDetailResult) -> None:
        self.detail = detail
        self.refresh_entry()

    def expand_all(self) -> None:
        self.options.expanded = True
        self.options.full_fingerprint = True
        self.refresh_entry()

    def refresh_entry(self) -> None:
        if self.detail is None:
            return
        styles = self.styles_map()
        limit = 10**9 if self.options.expanded else self.options.max_chars
        detail = self.detail
        if detail.request is not None:
            item = item_from_request_record(detail.request, detail.decision)
            rendered = render_request(item, badges(item), styles, self.options, now=time.time())
            text = rendered.text
        else:
            text = Text("The request itself is not in the history.", styles["dim"])
        gap = Text("\n")
        self.set_sections(
            [
                ("request", text),
                ("", gap),
                ("decision", render_decision(detail.decision, styles, limit)),
                ("", gap),
                ("outcome", render_outcome(detail.outcome, styles, limit)),
                ("", gap),
                ("files", render_files(detail.file_events, styles, limit)),
            ]
        )

    def jump_outcome(self) -> None:
        self.scroll_to_anchor("outcome")
