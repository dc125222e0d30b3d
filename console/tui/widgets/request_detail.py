"""The detail of the selected request: everything the operator needs to decide, inert.

The text is built by :func:`console.tui.render.present.render_request`; this widget supplies
the theme's styles, keeps the expand and full-fingerprint toggles, and reports after
each paint what is on screen and whether any of it is cut, which is what the
typed-ahead guard needs to know.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from rich.text import Text
from textual.message import Message

from console.contract.inert import inert
from console.protocol.records import HistoryRow
from console.protocol.watch import WatchEntry
from console.tui.model.badges import Badge
from console.tui.model.pending import QueueItem, queue_key
from console.tui.model.watch_model import TripwireEntry
from console.tui.render.present import DetailOptions, render_request
from console.tui.render.watch_text import changes_warning, render_session_changes, render_tripwire
from console.tui.settings.roles import role_class
from console.tui.widgets.text_view import DetailView


class RequestDetail(DetailView):
    class Shown(Message):
        """The detail now shows ``key`` (None: nothing); ``truncated``: something is cut."""

        def __init__(self, key: str | None, truncated: bool) -> None:
            super().__init__()
            self.key = key
            self.truncated = truncated

    def __init__(
        self,
        *,
        max_chars: int = 2000,
        max_lines: int = 40,
        clock: Callable[[], float] = time.time,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.options = DetailOptions(max_chars=max_chars, max_lines=max_lines)
        self.clock = clock
        self.item: QueueItem | None = None
        self.host = ""  # whose request, with several hosts ("" with one)
        self.badges: Sequence[Badge] = ()
        self.previous: Sequence[HistoryRow] | None = None
        self.changes: Sequence[WatchEntry] | None = None  # watch events of the agent session
        self.truncated = False

    def refresh_view(self) -> None:
        self.refresh_detail()

    @property
    def request_id(self) -> str | None:
        return None if self.item is None else self.item.request_id

    @property
    def key(self) -> str | None:
        """The queue's key of the request shown (its id and host)."""
        return None if self.item is None else queue_key(self.host, self.item.request_id)

    @property
    def shown_key(self) -> str | None:
        """Changes whenever what the operator sees of the request changes."""
        if self.item is None:
            return None
        return f"{self.key}:{'expanded' if self.options.expanded else 'bounded'}"

    def show(
        self,
        item: QueueItem | None,
        badges: Sequence[Badge] = (),
        previous: Sequence[HistoryRow] | None = None,
        host: str = "",
    ) -> None:
        if item is None or self.item is None or queue_key(host, item.request_id) != self.key:
            self.options.expanded = False
            self.options.full_fingerprint = False
            self.changes = None
            self.scroll_to(y=0, animate=False, immediate=True)
        self.item = item
        self.host = host
        self.badges = badges
        self.previous = previous
        self.refresh_detail()

    def _host_line(self) -> Text:
        """Which host asks: decisions go to that host's daemon only."""
        styles = self.styles_map()
        line = Text("on host ", style=styles["label"])
        line.append(inert(self.host), styles["operator"])
        line.append(" — approve / deny go to its daemon\n", styles["label"])
        return line

    def set_previous(self, request_id: str, previous: Sequence[HistoryRow]) -> None:
        if self.request_id == request_id:
            self.previous = previous
            self.refresh_detail()

    def set_changes(self, request_id: str, changes: Sequence[WatchEntry]) -> None:
        if self.request_id == request_id:
            self.changes = changes
            self.refresh_detail()

    def expand_all(self) -> None:
        self.options.expanded = True
        self.options.full_fingerprint = True
        self.refresh_detail()

    def toggle_fingerprint(self) -> None:
        self.options.full_fingerprint = not self.options.full_fingerprint
        self.refresh_detail()

    def refresh_detail(self) -> None:
        if self.item is None:
            self.truncated = False
            self.set_text(
                Text("No request selected.", style=self.get_component_rich_style(role_class("muted")))
            )
        elif isinstance(self.item, TripwireEntry):
            rendered = render_tripwire(self.item, self.styles_map(), self.options, now=self.clock())
            self.truncated = rendered.truncated
            self.set_text(Text.assemble(self._host_line(), rendered.text) if self.host else rendered.text)
        else:
            styles = self.styles_map()
            rendered = render_request(
                self.item, self.badges, styles, self.options, self.previous, now=self.clock()
            )
            self.truncated = rendered.truncated
            warning = changes_warning(self.changes, styles)
            session = self.item.session_id
            sections = [("host", self._host_line())] if self.host else []
            if warning is not None:
                sections.append(("warning", warning))
            sections.append(("request", rendered.text))
            sections.append(("changes", render_session_changes(session, self.changes, styles)))
            self.set_sections(sections)
        self.post_message(self.Shown(self.shown_key, self.truncated))
