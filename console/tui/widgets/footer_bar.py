"""The footer every screen shows: the keys in force, with help and quit always visible.

Textual's :class:`~textual.widgets.Footer` lists the screen's keys before the app's and
cuts what does not fit, so at 80 columns `?` and quit were the first to go. This bar
keeps them in a fixed cell at the right, in the keymap's keys, and leaves the command
palette to `ctrl+p` and the help screen.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Static

from console.tui.settings.actions import ACTIONS

ALWAYS = ("help", "quit")


class FooterBar(Horizontal):
    """Docked at the bottom (its look is in console/tui/console.tcss)."""

    def compose(self) -> ComposeResult:
        yield Footer(show_command_palette=False)
        yield Static(self._always(), classes="footer-bar--always")

    def _always(self) -> Text:
        keys = getattr(self.app, "keys_in_force", {})
        out = Text(no_wrap=True, end="")
        for spec in ACTIONS:
            if spec.id not in ALWAYS:
                continue
            first = keys.get(spec.id, spec.keys).split(",")[0]
            if out:
                out.append("  ")
            out.append(self.app.get_key_display(Binding(first, "")), "bold")
            out.append(" " + (spec.label or spec.description))
        return out
