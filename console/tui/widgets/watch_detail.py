"""The watch panel's detail: the selected event in full and, on demand, its diff."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from rich.style import Style

from console.tui.render.present import ROLES
from console.tui.render.watch_text import DIFF_NOT_LOADED, event_detail
from console.tui.widgets.request_detail import RequestDetail
from console.tui.widgets.text_view import TextView


class WatchDetail(TextView):
    COMPONENT_CLASSES: ClassVar[set[str]] = {f"watch-detail--{role}" for role in ROLES}
    # The queue detail's look, under this widget's own names.
    DEFAULT_CSS = "WatchDetail { background: $surface; padding: 0 1; }\n" + "\n".join(
        line.replace("RequestDetail > .request-detail--", "WatchDetail > .watch-detail--")
        for line in RequestDetail.DEFAULT_CSS.splitlines()
        if "RequestDetail > .request-detail--" in line
    )

    def __init__(self, *, clock: Callable[[], float] = time.time, id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.event: Mapping[str, Any] | None = None
        self.diff: str | None = DIFF_NOT_LOADED
        self.accepted: Mapping[str, Any] | None = None
        self.watch_status: Mapping[str, Any] | None = None
        self._styles: dict[str, Style] | None = None

    def on_mount(self) -> None:
        super().on_mount()
        self.watch(self.app, "theme", lambda _: self._restyle(), init=False)
        self.refresh_detail()

    def _restyle(self) -> None:
        self._styles = None
        self.refresh_detail()

    def styles_map(self) -> dict[str, Style]:
        if self._styles is None:
            self._styles = {role: self.get_component_rich_style(f"watch-detail--{role}") for role in ROLES}
        return self._styles

    def show(self, event: Mapping[str, Any] | None) -> None:
        if event is not self.event:
            self.event = event
            self.diff = DIFF_NOT_LOADED
            self.accepted = None
            self.scroll_to(y=0, animate=False, immediate=True)
            self.refresh_detail()

    def set_diff(
        self, event: Mapping[str, Any], diff: str, accepted: Mapping[str, Any] | None = None
    ) -> None:
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
