"""The command palette: every action of the current view, themes, keymaps, views, and
jumping to a pending request by a prefix of its fingerprint.

All of it comes from one list, :meth:`ConsoleCommands.entries`, built from the action
table and the app's registries; nothing is listed here by hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from console.contract.inert import inert
from console.tui.model.watch_model import TripwireEntry
from console.tui.model.words import shown_command
from console.tui.settings.actions import ACTIONS, CONTEXTS

if TYPE_CHECKING:
    from console.tui.app import ConsoleApp

_HEX = re.compile(r"[0-9a-f]{4,64}")


@dataclass(frozen=True)
class Entry:
    title: str
    help: str
    run: Callable[[], object]


class ConsoleCommands(Provider):
    @property
    def console_app(self) -> ConsoleApp:
        return self.app  # type: ignore[return-value]  # the provider only runs in ConsoleApp

    def entries(self) -> list[Entry]:
        app = self.console_app
        context = app.current_context()
        active = CONTEXTS.get(context, ("app",))
        keys = app.keys_in_force
        out: list[Entry] = []
        for spec in ACTIONS:
            if spec.palette and spec.scope in active:
                key = app.get_key_display(Binding(keys.get(spec.id, spec.keys).split(",")[0], ""))
                out.append(
                    Entry(app.describe(spec), f"{spec.id} · {key}", partial(app.run_spec, spec, self.screen))
                )
        for name in app.theme_names():
            out.append(Entry(f"Theme: {name}", "switch the colour theme", partial(app.use_theme, name)))
        for name in app.keymap_names():
            out.append(Entry(f"Keymap: {name}", "switch the keys", partial(app.use_keymap, name)))
        return out

    async def discover(self) -> Hits:
        for entry in self.entries():
            yield DiscoveryHit(entry.title, entry.run, help=entry.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for entry in self.entries():
            score = matcher.match(entry.title)
            if score > 0:
                yield Hit(score, matcher.highlight(entry.title), entry.run, help=entry.help)
        prefix = query.strip().lower().removeprefix("fp:").removeprefix("fp ")
        if _HEX.fullmatch(prefix):
            app = self.console_app
            for found in app.pending.find_fingerprint(prefix)[:20]:
                fp = found.fingerprint
                item = found.item
                command = inert(item.command if isinstance(item, TripwireEntry) else shown_command(item))[:70]
                title = Text(f"Go to {found.request_id} ")
                title.append(fp[:16], "bold")
                title.append(f"  {command}")
                yield Hit(
                    1.0,
                    title,
                    partial(app.jump_to_request, found.key),
                    text=f"Go to {found.request_id} {fp}",
                    help="pending request with this fingerprint",
                )
