"""The footer every screen shows: the keys in force, with help and quit always visible.

Textual's :class:`~textual.widgets.Footer` lists the screen's keys before the app's and
cuts what does not fit, so at 80 columns `?` and quit were the first to go. This bar
keeps them in a fixed cell at the right, in the keymap's keys, and leaves the command
palette to `ctrl+p` and the help screen. The cell follows the focus: while a terminal
pane takes every key, `q` goes to its program, so the cell says what reaches the console
there — the pane's prefix first (`ctrl+b q quit`).
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

    def on_mount(self) -> None:
        # Fired when the focus moves and when a widget's keys change (a pane that ends).
        self.screen.bindings_updated_signal.subscribe(self, lambda _screen: self._follow_focus())

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _follow_focus(self) -> None:
        for cell in self.query(".footer-bar--always").results(Static):
            cell.update(self._always())

    def _always(self) -> Text:
        keys = getattr(self.app, "keys_in_force", {})
        focused = self.screen.focused if self.is_attached else None
        prefix = ""
        if getattr(focused, "takes_every_key", False):
            prefix = keys.get("pane-prefix", "").split(",")[0]
        out = Text(no_wrap=True, end="")
        for spec in ACTIONS:
            if spec.id not in ALWAYS:
                continue
            first = keys.get(spec.id, spec.keys).split(",")[0]
            if out:
                out.append("  ")
            if prefix:
                out.append(self.app.get_key_display(Binding(prefix, "")) + " ", "bold")
            out.append(self.app.get_key_display(Binding(first, "")), "bold")
            out.append(" " + (spec.label or spec.description))
        return out
