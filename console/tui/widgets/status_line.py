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

SEVERITIES = ("info", "ok", "warning", "error")
EXPIRE_S = 8.0


class StatusLine(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {f"status-line--{s}" for s in SEVERITIES}
    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; padding: 0 1; }
    StatusLine > .status-line--info { color: $text-muted; }
    StatusLine > .status-line--ok { color: $success; }
    StatusLine > .status-line--warning { color: $warning; text-style: bold; }
    StatusLine > .status-line--error { color: $error; text-style: bold; }
    """

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
            self.get_component_rich_style(f"status-line--{self.severity}"),
            no_wrap=True,
            overflow="ellipsis",
            end="",
        )
