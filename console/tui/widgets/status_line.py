"""One line under the lists for what just happened, and why a key did nothing.

A message is about a moment: it clears itself after :data:`EXPIRE_S` (errors after
twice that), so "kept paused: …" or "ignored: shown 0.1 s ago" never reads as the
present minutes later.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.timer import Timer
from textual.widget import Widget

from console.tui.settings.roles import role_class

SEVERITIES = ("info", "ok", "warning", "error")
# A severity's look (role text, settings/roles.py; the line itself is styled in console.tcss).
LOOKS = {
    "info": role_class("muted"),
    "ok": role_class("ok"),
    "warning": role_class("warning-bold"),
    "error": role_class("error-bold"),
}
EXPIRE_S = 8.0


class StatusLine(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = set(LOOKS.values())

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.message = ""
        self.severity = "info"
        self._expiry: Timer | None = None

    def say(self, message: str, severity: str = "info") -> None:
        """``message`` must already be inert if it carries agent text."""
        self.message = message
        self.severity = severity if severity in SEVERITIES else "info"
        if self._expiry is not None:
            self._expiry.stop()
            self._expiry = None
        if message and self.is_mounted:
            self._expiry = self.set_timer(EXPIRE_S * (2 if severity == "error" else 1), self._expire)
        self.refresh()

    def _expire(self) -> None:
        self._expiry = None
        self.message = ""
        self.refresh()

    def render(self) -> Text:
        return Text(
            self.message,
            self.get_component_rich_style(LOOKS[self.severity]),
            no_wrap=True,
            overflow="ellipsis",
            end="",
        )
