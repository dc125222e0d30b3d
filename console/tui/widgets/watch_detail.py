"""The watch panel's detail: the selected event in full and, on demand, its diff."""

from __future__ import annotations

import time
from collections.abc import Callable

from console.protocol.watch import AcceptedChange, WatchEntry, WatchStatus
from console.tui.render.watch_text import DIFF_NOT_LOADED, event_detail
from console.tui.widgets.text_view import DetailView


class WatchDetail(DetailView):
    def __init__(self, *, clock: Callable[[], float] = time.time, id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.event: WatchEntry | None = None
        self.diff: str | None = DIFF_NOT_LOADED
        self.accepted: AcceptedChange | None = None
        self.watch_status: WatchStatus | None = None

    def on_mount(self) -> None:
        self.refresh_detail()

    def refresh_view(self) -> None:
        self.refresh_detail()

    def show(self, event: WatchEntry | None) -> None:
        if event is not self.event:
            self.event = event
            self.diff = DIFF_NOT_LOADED
            self.accepted = None
            self.scroll_to(y=0, animate=False, immediate=True)
            self.refresh_detail()

    def set_diff(self, event: WatchEntry, diff: str, accepted: AcceptedChange | None = None) -> None:
        """``diff``: the text, or one of the states of watch_text (not loaded, none kept);
        ``accepted``: the tripwire answer that made a change the baseline, if any."""
        if event is self.event:
            self.diff = diff
            self.accepted = accepted
            self.refresh_detail()

    def refresh_detail(self) -> None:
        self.set_text(
            event_detail(
                self.event,
                self.styles_map(),
                diff=self.diff,
                accepted=self.accepted,
                watch_status=self.watch_status,
                now=self.clock(),
            )
        )
