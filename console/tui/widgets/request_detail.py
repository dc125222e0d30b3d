"""The detail of the selected request: everything the operator needs to decide, inert.

The text is built by :func:`console.tui.render.present.render_request`; this widget supplies
the theme's styles, keeps the expand and full-fingerprint toggles, and reports after
each paint what is on screen and whether any of it is cut, which is what the
typed-ahead guard needs to know.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.message import Message

from console.tui.model.badges import Badge
from console.tui.model.watch_model import is_tripwire
from console.tui.render.present import ROLES, DetailOptions, render_request
from console.tui.render.watch_text import changes_warning, render_session_changes, render_tripwire
from console.tui.widgets.text_view import TextView


class RequestDetail(TextView):
    COMPONENT_CLASSES: ClassVar[set[str]] = {f"request-detail--{role}" for role in ROLES}
    DEFAULT_CSS = """
    RequestDetail { background: $surface; padding: 0 1; scrollbar-size-vertical: 1; }
    RequestDetail > .request-detail--heading { color: $primary; text-style: bold; }
    RequestDetail > .request-detail--label { color: $text-muted; }
    RequestDetail > .request-detail--dim { color: $text-muted; }
    RequestDetail > .request-detail--program { color: $foreground; text-style: bold underline; }
    RequestDetail > .request-detail--escape { color: $error; text-style: reverse; }
    RequestDetail > .request-detail--lookalike { color: $warning; text-style: reverse underline; }
    RequestDetail > .request-detail--marker { color: $accent; text-style: italic; }
    RequestDetail > .request-detail--escalation { color: $error; text-style: bold; }
    RequestDetail > .request-detail--within { color: $success; }
    RequestDetail > .request-detail--forbidden { color: $text-muted; }
    RequestDetail > .request-detail--warning { color: $warning; text-style: bold; }
    RequestDetail > .request-detail--added { color: $success; text-style: bold; }
    RequestDetail > .request-detail--removed { color: $error; text-style: bold; }
    RequestDetail > .request-detail--operator { color: $accent; text-style: bold; }
    RequestDetail > .request-detail--redirect { color: $warning; }
    RequestDetail > .request-detail--substitution { color: $warning; text-style: bold; }
    RequestDetail > .request-detail--allow { color: $success; }
    RequestDetail > .request-detail--deny { color: $error; }
    RequestDetail > .request-detail--badge-unrestricted { background: $error; color: $background; text-style: bold; }
    RequestDetail > .request-detail--badge-protected { background: $error; color: $background; text-style: bold; }
    RequestDetail > .request-detail--badge-workspace { background: $error 70%; color: $background; text-style: bold; }
    RequestDetail > .request-detail--badge-outside { background: $warning; color: $background; text-style: bold; }
    RequestDetail > .request-detail--badge-network { background: $warning; color: $background; text-style: bold; }
    RequestDetail > .request-detail--badge-environment { background: $accent; color: $background; }
    RequestDetail > .request-detail--badge-other { background: $secondary; color: $foreground; }
    """

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
        self.item: Mapping[str, Any] | None = None
        self.badges: Sequence[Badge] = ()
        self.previous: Sequence[Mapping[str, Any]] | None = None
        self.changes: Sequence[Mapping[str, Any]] | None = None  # watch events of the agent session
        self.truncated = False
        self._styles: dict[str, Style] | None = None

    def on_mount(self) -> None:
        super().on_mount()
        self.watch(self.app, "theme", lambda _: self._restyle(), init=False)

    def _restyle(self) -> None:
        self._styles = None
        self.refresh_detail()

    @property
    def request_id(self) -> str | None:
        return None if self.item is None else str(self.item.get("request_id"))

    @property
    def shown_key(self) -> str | None:
        """Changes whenever what the operator sees of the request changes."""
        if self.item is None:
            return None
        return f"{self.request_id}:{'expanded' if self.options.expanded else 'bounded'}"

    def styles_map(self) -> dict[str, Style]:
        if self._styles is None:
            self._styles = {role: self.get_component_rich_style(f"request-detail--{role}") for role in ROLES}
        return self._styles

    def show(
        self,
        item: Mapping[str, Any] | None,
        badges: Sequence[Badge] = (),
        previous: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        if item is None or self.item is None or item.get("request_id") != self.item.get("request_id"):
            self.options.expanded = False
            self.options.full_fingerprint = False
            self.changes = None
            self.scroll_to(y=0, animate=False, immediate=True)
        self.item = item
        self.badges = badges
        self.previous = previous
        self.refresh_detail()

    def set_previous(self, request_id: str, previous: Sequence[Mapping[str, Any]]) -> None:
        if self.request_id == request_id:
            self.previous = previous
            self.refresh_detail()

    def set_changes(self, request_id: str, changes: Sequence[Mapping[str, Any]]) -> None:
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
                Text("No request selected.", style=self.get_component_rich_style("request-detail--dim"))
            )
        elif is_tripwire(self.item):
            rendered = render_tripwire(self.item, self.styles_map(), self.options, now=self.clock())
            self.truncated = rendered.truncated
            self.set_text(rendered.text)
        else:
            styles = self.styles_map()
            rendered = render_request(
                self.item, self.badges, styles, self.options, self.previous, now=self.clock()
            )
            self.truncated = rendered.truncated
            warning = changes_warning(self.changes, styles)
            session = str(self.item.get("session_id", "") or "")
            sections = [("warning", warning)] if warning is not None else []
            sections.append(("request", rendered.text))
            sections.append(("changes", render_session_changes(session, self.changes, styles)))
            self.set_sections(sections)
        self.post_message(self.Shown(self.shown_key, self.truncated))
