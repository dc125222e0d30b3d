"""The help screen: every key in force right now, by view, from the action table and keymap."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from console.tui.settings.actions import ACTIONS
from console.tui.settings.bindings import bindings

if TYPE_CHECKING:
    from console.tui.app import ConsoleApp

SCOPE_TITLES = {
    "app": "Everywhere",
    "list": "Lists",
    "queue": "Queue",
    "history": "History",
    "entry": "History entry",
    "grants": "Grants",
    "watch": "Watch panel",
    "sessions": "Sessions",
    "prefix": "Terminal pane, after the prefix key",
    "root": "Terminal pane",
    "copy-mode": "Terminal pane, scrolled back",
    "copy-vi": "Copy mode (vi keys)",
    "copy-emacs": "Copy mode (emacs keys)",
    "record": "History record",
    "modal": "Dialogs",
    "confirm": "Dialogs",
    "help": "This help",
}


class HelpScreen(ModalScreen[None]):
    CONTEXT = "help"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings("modal"), *bindings("help")]
    CSS_PATH = "help.tcss"

    app: ConsoleApp

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.render_help(), id="help-body")

    def render_help(self) -> Table:
        keys = self.app.keys_in_force
        table = Table(
            title=f"Keys in force — keymap {self.app.keymap_name!r}, theme {self.app.theme!r}",
            expand=True,
            show_edge=False,
            box=None,
            padding=(0, 1),
        )
        table.add_column("keys", style="bold", no_wrap=True, ratio=1)
        table.add_column("action", ratio=3)
        table.add_column("id", style="dim", no_wrap=True, ratio=1)
        scope = None
        for spec in ACTIONS:
            title = SCOPE_TITLES.get(spec.scope, spec.scope)
            if title != scope:
                scope = title
                table.add_row(Text(""), Text(""), Text(""))
                table.add_row(Text(title, style="bold underline"), Text(""), Text(""))
            shown = ", ".join(
                self.app.get_key_display(Binding(k, "")) for k in keys.get(spec.id, spec.keys).split(",")
            )
            table.add_row(Text(shown), Text(self.app.describe(spec)), Text(spec.id))
        table.add_row(Text(""), Text(""), Text(""))
        table.add_row(
            Text("mouse", style="bold"),
            Text(
                "click a row to select it, double-click to open; scroll with the wheel; click the footer keys"
            ),
            Text(""),
        )
        return table

    def action_dismiss_modal(self) -> None:
        self.dismiss()
