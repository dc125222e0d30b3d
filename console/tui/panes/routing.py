"""Where a key pressed in a terminal pane goes.

While the program can take input, every key goes to it, encoded for its modes
(application cursor keys, kitty keyboard, ...), except the prefix (``pane-prefix``) and
the scroll-back keys. The key after the prefix is a console command: pane commands
(split, zoom, detach, search, copy ...), then the sessions view's, then the app's (so
``prefix q`` quits and ``prefix 1`` shows the queue). Pressing the prefix twice sends
it. In copy mode (``prefix [``) the vi or emacs table (``copy_mode_keys``) comes first
and no key reaches the program.
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding

from console.tui.panes.pane_keys import PaneKeys, key_bytes
from console.tui.panes.view import PaneView
from console.tui.settings.actions import ActionSpec

# Keys Textual names otherwise than a keymap file does (ctrl+space arrives as NUL).
_KEY_NAMES = {"ctrl+@": "ctrl+at"}


class KeyRouting(PaneView):
    """The pane's keys: to the program, to a pane command after the prefix, or to copy mode."""

    @property
    def takes_every_key(self) -> bool:
        """The program gets every key, the app's priority bindings included (see
        ``ConsoleApp.check_action``); not while the prefix is armed, nor when nothing can
        be typed (read-only, ended) — except in copy mode, whose keys are all its own."""
        return (self.link.writable or self.state.copy is not None) and not self.armed

    def pane_keys(self) -> PaneKeys:
        keys_in_force = self.app.keys_in_force
        if self._keys is None or self._keys_for is not keys_in_force:
            self._keys = PaneKeys.from_keys(keys_in_force)
            self._keys_for = keys_in_force
        return self._keys

    async def on_key(self, event: events.Key) -> None:
        keys = self.pane_keys()
        key = event.key
        if self.armed:
            event.stop()
            event.prevent_default()
            try:
                if key in keys.prefix:
                    self._type(key, event.character)
                else:
                    spec = keys.after_prefix.get(key)
                    if spec is not None:
                        await self.run_spec(spec)
                    else:
                        self.say(f"{key}: not a pane command (prefix ? lists the keys)", "warning")
            finally:
                self.armed = False
                self._title_changed()
            return
        if self.state.copy is not None:
            # Copy mode's table first, then the prefix; nothing reaches the program.
            event.stop()
            event.prevent_default()
            table = keys.copying.get(self.copy_table(), {})
            for name in (key, *event.aliases, _KEY_NAMES.get(key, key)):
                spec = table.get(name)
                if spec is not None:
                    await self.run_spec(spec)
                    return
            if key in keys.prefix:
                self.action_prefix()
            return
        if key in keys.prefix:
            event.stop()
            event.prevent_default()
            self.action_prefix()
            return
        if self.state.scrolling:
            spec = keys.scrolling.get(key)
            if spec is not None:
                event.stop()
                event.prevent_default()
                await self.run_spec(spec)
                return
        spec = keys.live.get(key)
        if spec is not None:
            event.stop()
            event.prevent_default()
            await self.run_spec(spec)
            return
        if not self.link.writable:
            # Nothing can be typed here: pane commands still work without the prefix,
            # everything else is the console's (q, 1-5, ?, the sessions keys).
            spec = keys.after_prefix.get(key)
            if spec is not None and spec.scope == "prefix":
                event.stop()
                event.prevent_default()
                await self.run_spec(spec)
            return
        event.stop()
        event.prevent_default()
        self._type(key, event.character)

    def action_prefix(self) -> None:
        self.armed = True
        self._title_changed()
        self.say(self.prefix_help(self.pane_keys()))

    def _type(self, key: str, character: str | None) -> None:
        encoder = self.link.keys
        if encoder is None:
            return
        data = key_bytes(encoder, key, character)
        if not data:
            return
        if self.paused:
            self.say(self.PAUSED_SAY, "warning")
            return
        if self.state.scrolling:
            self.leave_scroll()
        elif (
            self.link.screen is not None
            and self.link.screen.viewport[1] + self.link.screen.viewport[2] < self.link.screen.viewport[0]
        ):
            self.link.screen.scroll_to_bottom()
            self.wake()
        if not self.link.send(data):
            self.say(
                "this pane is read-only" if self.link.read_only else "the session is not running", "warning"
            )

    async def run_spec(self, spec: ActionSpec) -> None:
        """Run a table action: pane actions here (or on the sessions screen when they
        are about the layout), the view's on the screen, the app's on the app."""
        name = spec.action.split("(", 1)[0]
        if spec.scope == "app":
            await self.app.run_action(spec.action)
        elif (spec.scope in ("prefix", "root") or spec.scope.startswith("copy-")) and hasattr(
            self, f"action_{name}"
        ):
            await self.app.run_action(spec.action, self)
        else:
            await self.app.run_action(spec.action, self.screen)

    def prefix_help(self, keys: PaneKeys) -> str:
        seen: dict[str, list[str]] = {}
        for k, spec in keys.after_prefix.items():
            if spec.scope == "prefix":
                seen.setdefault(spec.label or spec.description.split(" (")[0], []).append(k)
        shown = " · ".join(
            f"{self.app.get_key_display(Binding(ks[0], ''))} {label}" for label, ks in seen.items()
        )
        return f"prefix: {shown} · again: send it"
