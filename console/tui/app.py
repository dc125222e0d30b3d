"""The approval console: a Textual app over one daemon connection.

Who owns what:

- the **daemon worker** (:meth:`ConsoleApp.on_mount` starts it) runs
  :meth:`console.tui.link.DaemonLink.run` and turns the daemon's events into messages;
- the **pending queue model** (:attr:`pending`) is changed only by this app's message
  handlers, which then tell the queue screen which rows moved;
- **views** come from :mod:`console.tui.registry` (one Textual mode each), **actions**
  from :mod:`console.tui.settings.actions`, **header badges** from :attr:`badges`; screens that
  want daemon events define ``daemon_event(topic, payload)``.

Quitting leaves the daemon and everything it runs untouched.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, ClassVar

from textual.app import App
from textual.binding import BindingType
from textual.screen import ModalScreen, Screen
from textual.timer import Timer

from console.contract.inert import inert
from console.tui.commands import ConsoleCommands
from console.tui.desktop import sequence
from console.tui.link import Connect, DaemonLink
from console.tui.model.pending import PendingQueue
from console.tui.registry import views
from console.tui.screens.help import HelpScreen
from console.tui.settings.actions import ActionSpec
from console.tui.settings.bindings import bindings
from console.tui.settings.prepared import Settings, SettingsError
from console.tui.watch_monitor import WatchMonitor
from console.tui.widgets.badge_bar import BadgeBar, Badges
from console.tui.widgets.line_list import LineList

NOTIFY_COALESCE_S = 0.4


def _same(screen: Screen[None]) -> Screen[None]:
    """A mode's screen factory that hands out the one screen the app made for it."""
    return screen


def _settle_garbage_collector() -> None:
    """Move what start-up built out of the collector's way.

    A full collection walks every object the app holds (the widget tree, styles, caches);
    with them frozen after start-up, the collections that run while requests arrive stay
    short instead of stalling a frame for 50-150 ms.
    """
    gc.collect()
    gc.freeze()


class ConsoleApp(App[None]):
    TITLE = "agent-console"
    BINDINGS: ClassVar[list[BindingType]] = bindings("app")
    # The console's own commands only: Textual's system commands (Theme, Keys, Quit…)
    # duplicated them under other names and keys.
    COMMANDS: ClassVar[set[Any]] = {ConsoleCommands}
    CSS = """
    Screen { background: $background; }
    Footer { background: $panel; }
    """

    def __init__(
        self,
        settings: Settings,
        *,
        state_dir: str | None = None,
        connect: Connect | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        session: str | None = None,
        throwaway: bool = False,
    ) -> None:
        super().__init__()
        self.start_session = session  # open the sessions view with this session in a pane
        # The demo's daemon and state end with the console: quitting does not leave them running.
        self.throwaway = throwaway
        self.settings = settings
        self.config = settings.config
        self.clock = clock
        self.monotonic = monotonic
        self.pending = PendingQueue()
        self.badges = Badges()
        self.link = DaemonLink(self, state_dir, connect=connect)
        self.watch_monitor = WatchMonitor(self)
        self.keymap_name = settings.keymap
        self.keys_in_force: dict[str, str] = dict(settings.keys)
        self.views: dict[str, Screen[None]] = {name: view.factory() for name, view in views().items()}
        self.daemon_status: dict[str, Any] = {}
        self._arrivals: list[Mapping[str, Any]] = []
        self._notify_timer: Timer | None = None

    # ------------------------------------------------------------ start

    def on_mount(self) -> None:
        for theme in self.settings.themes.values():
            self.register_theme(theme)
        self.theme = self.settings.theme
        self.set_keymap(self.keys_in_force)
        for name, screen in self.views.items():
            self.add_mode(name, partial(_same, screen))
        self._update_tabs()
        self.badges.set("daemon", "connecting…", "muted")
        self.switch_mode("sessions" if self.start_session and "sessions" in self.views else "queue")
        self.run_worker(self.link.run(), name="daemon", group="daemon", exclusive=True, exit_on_error=False)

    # ------------------------------------------------------------ daemon messages

    def on_daemon_link_connected(self, message: DaemonLink.Connected) -> None:
        self.call_after_refresh(_settle_garbage_collector)
        self.daemon_status = message.status
        self.pending.replace(message.pending)
        self._pending_changed(0)
        self.watch_monitor.connected(message.status)
        self.badges.set("daemon", "")
        self._waiting_badge((message.status.get("attention") or {}).get("waiting"))
        policy = message.status.get("policy") or {}
        if policy.get("error"):
            self.badges.set("policy", "policy.toml broken: last good kept", "error")

    def on_daemon_link_lost(self, message: DaemonLink.Lost) -> None:
        self.badges.set("daemon", "daemon unreachable — retrying", "error")
        self.notify(f"lost the daemon: {inert(message.reason)[:200]}", severity="error", markup=False)

    def on_daemon_link_event(self, message: DaemonLink.Event) -> None:
        topic, payload = message.topic, message.payload
        if topic == "pending":
            item = payload.get("request")
            if isinstance(item, dict) and "request_id" in item:
                self.add_pending(item)
                self._arrived(item)
        elif topic == "decided":
            self.request_left(str(payload.get("request_id", "")))
        elif topic == "status":
            # Either the whole daemon status, or only the watcher's part of it.
            if isinstance(payload.get("status"), dict):
                self.daemon_status = payload["status"]
                error = (self.daemon_status.get("policy") or {}).get("error")
                self.badges.set("policy", "policy.toml broken: last good kept" if error else "", "error")
            elif isinstance(payload.get("watch"), dict):
                self.daemon_status["watch"] = payload["watch"]
            self.watch_monitor.status_changed(self.daemon_status)
        elif topic == "watch":
            self.watch_monitor.event(payload)
        elif topic == "attention":
            self._attention_changed(payload)
        for screen in self._all_screens():
            handler = getattr(screen, "daemon_event", None)
            if handler is not None:
                handler(topic, payload)

    def add_pending(self, item: Mapping[str, Any]) -> None:
        """A request (or a tripwire item) now waits for the operator."""
        index = self.pending.add(item)
        self._pending_changed(index)
        queue = self.views.get("queue")
        if item.get("kind") == "tripwire" and queue is not None and queue.is_mounted:
            # A stopped session outranks whatever the operator was reading: go to it.
            queue.select_request(str(item["request_id"]))  # type: ignore[attr-defined]

    def request_left(self, request_id: str) -> None:
        """A request was decided (here, by another operator, by a timeout) or cancelled."""
        if self.pending.get(request_id) is None:
            return
        index = self.pending.remove(request_id)
        self._pending_changed(index)

    def _pending_changed(self, first: int | None) -> None:
        queue = self.views.get("queue")
        if first is not None and queue is not None:
            queue.pending_changed(first)  # type: ignore[attr-defined]
        self._update_tabs()

    def describe(self, spec: ActionSpec) -> str:
        """An action's description as true for this console (the demo's quit ends its daemon)."""
        if spec.id == "quit" and self.throwaway:
            return "Quit (the demo's throw-away daemon, sessions and state end with it)"
        return spec.description

    def _all_screens(self) -> list[Screen[Any]]:
        seen: dict[int, Screen[Any]] = {id(s): s for s in self.views.values()}
        for s in self.screen_stack:
            seen.setdefault(id(s), s)
        return list(seen.values())

    # ------------------------------------------------------------ badges and tabs

    def _update_tabs(self) -> None:
        total, escalated = self.pending.total, self.pending.escalated()
        label = f"{total} pending" if total else "queue empty"
        self.badges.set("pending", label, "warning" if total else "ok", short=f"{total}p" if total else "0")
        self.badges.set(
            "escalations", f"{escalated} escalated" if escalated else "", "error", short=f"{escalated} esc"
        )

    def _waiting_badge(self, waiting: Any) -> None:
        n = waiting if isinstance(waiting, int) and waiting > 0 else 0
        self.badges.set(
            "attention",
            f"{n} agent{'s' if n != 1 else ''} waiting for you" if n else "",
            "warning",
            short=f"{n} waiting",
        )

    def _attention_changed(self, payload: Mapping[str, Any]) -> None:
        """An agent's attention state changed (the daemon publishes real transitions only):
        the badge follows the count; a transition into waiting notifies once."""
        self._waiting_badge(payload.get("waiting"))
        entry = payload.get("entry")
        into_waiting = payload.get("previous") != "waiting"
        if isinstance(entry, dict) and entry.get("state") == "waiting" and into_waiting:
            who = inert(f"{entry.get('root_comm') or 'agent'} {entry.get('agent_id', '')}")[:40]
            said = inert(str(entry.get("message") or ""))[:120]
            self.notify(
                f"{who} is waiting for you" + (f": {said}" if said else ""),
                title="agent-console",
                severity="warning",
                markup=False,
            )

    def on_badge_bar_clicked(self, message: BadgeBar.Clicked) -> None:
        if message.key in ("pending", "escalations", "tripwire"):
            self.action_show("queue")
        elif message.key in ("watch", "watcher"):
            self.action_show("watch")

    # ------------------------------------------------------------ notifications

    def away(self) -> bool:
        """The operator would not see a new request arrive right now."""
        return (not self.app_focus) or self.current_mode != "queue" or isinstance(self.screen, ModalScreen)

    def _arrived(self, item: Mapping[str, Any]) -> None:
        if not self.away():
            return
        self._arrivals.append(item)
        if self._notify_timer is None:
            self._notify_timer = self.set_timer(NOTIFY_COALESCE_S, self._notify_arrivals)

    def _notify_arrivals(self) -> None:
        self._notify_timer = None
        arrivals, self._arrivals = self._arrivals, []
        if not arrivals:
            return
        first = inert(str(arrivals[0].get("command", "")))[:80]
        body = (
            f"{len(arrivals)} new requests; first: {first}" if len(arrivals) > 1 else f"new request: {first}"
        )
        notes = self.config.notifications
        if notes.toast:
            self.notify(body, title="agent-console", markup=False)
        if notes.bell:
            self.bell()
        if notes.desktop != "off":
            self.write_escape(sequence(notes.desktop, "agent-console", body))

    def write_escape(self, escape: str) -> None:
        """Send our own escape sequence to the terminal (never agent text)."""
        driver = self._driver
        if escape and driver is not None and not self.is_headless:
            driver.write(escape)
            driver.flush()

    # ------------------------------------------------------------ actions

    def action_show(self, name: str) -> None:
        if name in self.views:
            if isinstance(self.screen, ModalScreen):
                self.pop_screen()
            self.switch_mode(name)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def theme_names(self) -> list[str]:
        return sorted(self.settings.themes)

    def keymap_names(self) -> list[str]:
        return sorted(self.settings.keymaps)

    def use_theme(self, name: str) -> None:
        if name in self.settings.themes:
            self.theme = name
            self.notify(f"theme: {name}", markup=False)

    def use_keymap(self, name: str) -> None:
        try:
            keys = self.settings.keymap_keys(name)
        except (SettingsError, ValueError) as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self.keymap_name = name
        self.keys_in_force = keys
        self.set_keymap(keys)
        self.notify(f"keymap: {name}", markup=False)

    def action_cycle_theme(self) -> None:
        names = self.theme_names()
        self.use_theme(names[(names.index(self.theme) + 1) % len(names)] if self.theme in names else names[0])

    def action_cycle_keymap(self) -> None:
        names = self.keymap_names()
        if names:
            current = names.index(self.keymap_name) if self.keymap_name in names else -1
            self.use_keymap(names[(current + 1) % len(names)])

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A focused terminal pane takes every key (even ctrl+p and ctrl+q) while its
        program can type; after the pane's prefix key the app's keys work again."""
        return not getattr(self.focused, "takes_every_key", False)

    def current_context(self, screen: Screen[Any] | None = None) -> str:
        screen = screen or self.screen
        return str(getattr(screen, "CONTEXT", "app"))

    async def run_spec(self, spec: ActionSpec, screen: Screen[Any] | None = None) -> None:
        """Run a table action on the node that holds its binding (for the command palette)."""
        screen = screen or self.screen
        if spec.scope == "app":
            await self.run_action(spec.action)
        elif spec.scope == "list":
            lists = screen.query(LineList)
            if lists:
                await self.run_action(spec.action, lists.first())
        else:
            await self.run_action(spec.action, screen)

    def jump_to_request(self, request_id: str) -> None:
        self.action_show("queue")
        queue = self.views["queue"]
        if not queue.select_request(request_id):  # type: ignore[attr-defined]
            self.notify(f"{request_id} is no longer pending", severity="warning", markup=False)
