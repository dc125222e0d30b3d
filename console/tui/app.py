"""The approval console: a Textual app over one daemon connection.

Who owns what:

- the **daemon worker** (:meth:`ConsoleApp.on_mount` starts it) runs
  :meth:`console.tui.link.DaemonLink.run` and turns the daemon's events into messages;
- the **pending queue model** (:attr:`pending`) is changed only by this app's message
  handlers, which then tell the queue screen which rows moved;
- **views** come from :mod:`console.tui.registry` (one Textual mode each), **actions**
  from :mod:`console.tui.settings.actions`, the header's **status pills** from :attr:`pills`;
  the **look** from ``console.tcss`` beside this module (and each view's ``.tcss``);
- **what the header shows** is reactive state on the app, reassigned, never mutated, so a
  watcher runs on a real change only: :attr:`pill_table` (every view's ``StatusPills``
  watches it), and what decides pills — :attr:`connection`, :attr:`daemon_status`,
  :attr:`pending_counts`, :attr:`waiting_agents` — whose ``watch_`` methods set them;
- **daemon events** arrive as one message class per kind (``DaemonLink.Decided``, …): the
  app's ``@on`` handlers update what it owns, then :meth:`ConsoleApp._to_screens` posts a
  copy to each running screen that lists the class in its ``DAEMON_EVENTS``, where the
  screen's own ``@on`` handler takes it.

With several hosts (docs/remote.md) the app runs one link per host and merges their
queues: every pending request and tripwire item carries its host, decisions go to that
host's link, and a host that cannot be reached has a pill of its own. The grants view
merges every host's grants too (a screen with ``EVERY_HOST`` gets every host's events);
the other views (history, sessions, watch) show the first host.

Quitting leaves the daemon and everything it runs untouched.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import msgspec
from textual import on
from textual.app import App
from textual.binding import BindingType
from textual.reactive import var
from textual.screen import ModalScreen, Screen
from textual.timer import Timer

from console.contract.inert import inert
from console.protocol import events as ev
from console.protocol.pending import PendingItem
from console.protocol.results import DaemonStatusResult
from console.tui.commands import ConsoleCommands
from console.tui.desktop import sequence
from console.tui.link import RETRY_S, Connect, DaemonLink
from console.tui.model.pending import PendingQueue, QueueItem, queue_key
from console.tui.model.unaccepted import (
    history_remedy,
    integrity_findings,
    integrity_progress,
    tamper_remedy,
    unaccepted_rows,
)
from console.tui.model.watch_model import TripwireEntry
from console.tui.model.words import shown_command
from console.tui.registry import views
from console.tui.screens.base import Services
from console.tui.screens.help import HelpScreen
from console.tui.screens.queue import QueueScreen
from console.tui.settings.actions import ActionSpec
from console.tui.settings.bindings import bindings
from console.tui.settings.prepared import Settings, SettingsError
from console.tui.watch_monitor import WatchMonitor
from console.tui.widgets.line_list import LineList
from console.tui.widgets.status_pills import NO_PILLS, Pills, PillTable, StatusPills

if TYPE_CHECKING:
    from console.remote.hostset import HostSet

NOTIFY_COALESCE_S = 0.4
REMOTE_RETRY_MAX_S = 30.0  # a host over SSH is retried with backoff up to this
Connection = Literal["connecting", "connected", "lost"]
DAEMON_PILL: dict[Connection, tuple[str, str]] = {
    "connecting": ("connecting…", "muted"),
    "connected": ("", "muted"),
    "lost": ("daemon unreachable — retrying", "error"),
}


def _same(screen: Screen[None]) -> Screen[None]:
    """A mode's screen factory that hands out the one screen the app made for it."""
    return screen


def _count(value: int) -> int:
    """A count from the daemon, never below 0."""
    return max(0, value)


def _waiting_of(status: DaemonStatusResult | None) -> int:
    """How many agents wait for the operator, as a (new) connection's status says."""
    return _count(status.attention.waiting) if status is not None and status.attention else 0


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
    # The look: the app, role text and the widgets (each view's layout is in its own .tcss).
    CSS_PATH = "console.tcss"

    # What the header shows, and the state that decides it. Each is reassigned, never
    # mutated, so its watchers run on a real change only; `var`, not `reactive`: none
    # repaints the app itself. The two with init=True draw the first header (in this
    # order) once the app is mounted.
    pill_table: var[PillTable] = var(NO_PILLS, init=False)  # every StatusPills watches it
    pending_counts: var[tuple[int, int]] = var((0, 0))  # (pending, escalated)
    connection: var[Connection] = var[Connection]("connecting")
    daemon_status: var[DaemonStatusResult | None] = var(None, init=False)  # None while away
    waiting_agents: var[int] = var(0, init=False)  # agents waiting for the operator

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
        hosts: HostSet | None = None,
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
        self.pills = Pills(self)
        self.hosts = hosts
        self.links = _links(self, state_dir, connect, hosts)
        self.link = next(iter(self.links.values()))  # the first host's: what the other views show
        self.primary_host = self.link.host
        self._waiting: dict[str, int] = {}  # agents waiting for the operator, per host
        self.watch_monitor = WatchMonitor(self)
        self.keymap_name = settings.keymap
        self.keys_in_force: dict[str, str] = dict(settings.keys)
        self.services = Services(
            config=self.config,
            links=self.links,
            link=self.link,
            pending=self.pending,
            pills=self.pills,
            watch_monitor=self.watch_monitor,
            clock=clock,
            monotonic=monotonic,
        )
        self.views: dict[str, Screen[None]] = {
            name: view.factory(self.services) for name, view in views().items()
        }
        self._arrivals: list[PendingItem] = []
        self._notify_timer: Timer | None = None
        self._history_told: set[tuple[int, int]] = set()  # unaccepted ranges already said
        self._integrity_told: set[tuple[str, str]] = set()  # history mismatches already said
        self._policy_told = ""  # the policy error already said

    # ------------------------------------------------------------ start

    def on_mount(self) -> None:
        for theme in self.settings.themes.values():
            self.register_theme(theme)
        self.theme = self.settings.theme
        self.set_keymap(self.keys_in_force)
        for name, screen in self.views.items():
            self.add_mode(name, partial(_same, screen))
        self.switch_mode("sessions" if self.start_session and "sessions" in self.views else "queue")
        for notice in self.settings.notices:  # a keymap or config that still uses old names
            self.notify(notice, title="keys", severity="warning", timeout=30, markup=False)
        for i, link in enumerate(self.links.values()):
            self.run_worker(link.run(), name=f"daemon-{i}", group="daemon", exit_on_error=False)

    async def on_unmount(self) -> None:
        """Quitting ends the SSH connections to other hosts (their daemons go on)."""
        if self.hosts is not None:
            await self.hosts.close()

    @property
    def multi_host(self) -> bool:
        return self.services.multi_host

    def link_for(self, host: str) -> DaemonLink:
        """The link of ``host`` (as an entry carries it)."""
        return self.services.link_for(host)

    # ------------------------------------------------------------ daemon messages

    def on_daemon_link_connected(self, message: DaemonLink.Connected) -> None:
        self.call_after_refresh(_settle_garbage_collector)
        self.pending.replace(message.pending, message.host if self.multi_host else None)
        self._pending_changed(0)
        self.watch_monitor.connected(message.host)
        if self.multi_host:
            self.pills.set(f"host:{message.host}", "")
            self.connection = "connected"
            if message.host != self.primary_host:
                self._waiting[message.host] = _waiting_of(message.status)
                self.waiting_agents = sum(self._waiting.values())
                return
        self.daemon_status = message.status
        self.connection = "connected"
        self._waiting[message.host] = _waiting_of(message.status)
        self.waiting_agents = sum(self._waiting.values())
        self.pills.set("refused", "")  # a new connection: a new count (the daemon may be another)

    def on_daemon_link_lost(self, message: DaemonLink.Lost) -> None:
        if self.multi_host:
            # Its requests stay listed as they were; they fail closed there by their own
            # timeout, and the listing is replaced when the host is back.
            host = inert(message.host)
            self.pills.set(
                f"host:{message.host}", f"{host} unreachable — retrying", "error", short=f"{host}!"
            )
            self.notify(f"lost host {host}: {inert(message.reason)[:200]}", severity="error", markup=False)
            return
        self.connection = "lost"
        self.daemon_status = None  # so the next connection's status is news to every watcher
        self.notify(f"lost the daemon: {inert(message.reason)[:200]}", severity="error", markup=False)

    def on_daemon_link_events_refused(self, message: DaemonLink.EventsRefused) -> None:
        """Events this console could not read (docs/protocol.md, "Events"): a pill with the
        count on this connection, and a notification when a burst of them starts."""
        n = message.total
        self.pills.set(
            "refused",
            f"{n} daemon event{'s' if n != 1 else ''} refused (daemon of another version?)",
            "warning",
            short=f"{n} refused",
        )
        if message.first:
            self.notify(
                f"{message.count} event{'s' if message.count != 1 else ''} from the daemon did not "
                "validate and were skipped: what the console shows may be out of date. Is the "
                "daemon another version of agent-console? (restart it with this one's)",
                title="daemon events refused",
                severity="warning",
                timeout=15,
                markup=False,
            )

    @on(DaemonLink.PendingAdded)
    def _pending_added(self, message: DaemonLink.PendingAdded) -> None:
        item = message.event.request
        self.add_pending(item, message.host)
        self._arrived(item)

    @on(DaemonLink.Decided)
    def _decided(self, message: DaemonLink.Decided) -> None:
        self.request_left(message.event.request_id, message.host)

    @on(DaemonLink.StatusChanged)
    def _status_changed(self, message: DaemonLink.StatusChanged) -> None:
        if message.host != self.primary_host:
            return
        self.daemon_status = message.event.status

    @on(DaemonLink.WatchStatusChanged)
    def _watch_status_changed(self, message: DaemonLink.WatchStatusChanged) -> None:
        """Only the watcher's part of the status: the rest stays as it was."""
        if message.host != self.primary_host:
            return
        if self.daemon_status is not None:
            self.daemon_status = msgspec.structs.replace(self.daemon_status, watch=message.event.watch)
        else:
            self.watch_monitor.watch_changed(message.event.watch)

    def watch_daemon_status(self, status: DaemonStatusResult | None) -> None:
        """What the daemon says of itself changed: the watcher's, sandbox's, policy's and
        history's pills."""
        self.watch_monitor.status_changed(status)
        error = status.policy.error if status is not None and isinstance(status.policy.error, str) else ""
        self.pills.set("policy", "policy.toml broken: last good kept" if error else "", "error")
        if error and error != self._policy_told:
            self.notify(inert(error)[:400], title="policy", severity="error", timeout=30, markup=False)
        self._policy_told = error
        self._history_flagged(unaccepted_rows(status))
        self._integrity(status)

    def _integrity(self, status: DaemonStatusResult | None) -> None:
        """The daemon's check of the history at start: a red pill and one notification per
        finding for a mismatch, a quiet pill with the progress while the full walk runs."""
        found = integrity_findings(status)
        self.pills.set("integrity", "history TAMPERED" if found else "", "error", short="tampered!")
        progress = integrity_progress(status)
        self.pills.set("verifying", progress, "muted", short="verifying")
        for what, message in found:
            if (what, message) not in self._integrity_told:
                self._integrity_told.add((what, message))
                self._say_integrity(what, message)

    def _say_integrity(self, what: str, message: str) -> None:
        self.notify(
            inert(tamper_remedy(what, message))[:600],
            title="history",
            severity="error",
            timeout=30,
            markup=False,
        )

    def _history_flagged(self, flagged: list[tuple[int, int]]) -> None:
        """Rows start-up found past the history's head anchor: something wrote the history
        while the daemon was down, and the grants in them are not honoured until the
        operator accepts them. Said once per range, and shown until accepted."""
        rows = sum(high - low + 1 for low, high in flagged)
        label = f"history: {rows} unaccepted row{'s' if rows != 1 else ''}" if rows else ""
        self.pills.set("history", label, "error", short="history!")
        for low, high in flagged:
            if (low, high) in self._history_told:
                continue
            self._history_told.add((low, high))
            self._say_history(low, high)

    def _say_history(self, low: int, high: int) -> None:
        self.notify(history_remedy(low, high), title="history", severity="error", timeout=30, markup=False)

    def watch_connection(self, state: Connection) -> None:
        label, variant = DAEMON_PILL[state]
        self.pills.set("daemon", label, variant)

    @on(DaemonLink.WatchBatch)
    def _watch_batch(self, message: DaemonLink.WatchBatch) -> None:
        if message.host == self.primary_host:
            self.watch_monitor.batch(message.event)

    @on(DaemonLink.WatchAlert)
    def _watch_alert(self, message: DaemonLink.WatchAlert) -> None:
        where = f"{message.host}: " if message.host else ""
        self.watch_monitor.alert(where + message.event.summary)

    @on(DaemonLink.TripwireRaised)
    def _tripwire_raised(self, message: DaemonLink.TripwireRaised) -> None:
        self.watch_monitor.tripwire(message.event.item, message.host)

    @on(DaemonLink.TripwireResolved)
    def _tripwire_resolved(self, message: DaemonLink.TripwireResolved) -> None:
        self.watch_monitor.resolved(message.event.item.id, message.host)

    @on(DaemonLink.AttentionChanged)
    def _attention(self, message: DaemonLink.AttentionChanged) -> None:
        self._attention_changed(message.event, message.host)

    @on(DaemonLink.DaemonEvent)
    def _to_screens(self, message: DaemonLink.DaemonEvent[Any]) -> None:
        """Every event, after the handlers above (Textual runs the most specific class's
        first): a fresh copy to each running screen that listens for its class."""
        kind = type(message)
        first = message.host == self.primary_host  # most views beside the queue show the first host
        for screen in self._all_screens():
            if (
                screen.is_running
                and kind in getattr(screen, "DAEMON_EVENTS", ())
                and (first or getattr(screen, "EVERY_HOST", False))
            ):
                screen.post_message(message.copy())

    def add_pending(self, item: QueueItem, host: str = "") -> None:
        """A request (or a tripwire item) of ``host`` now waits for the operator."""
        index = self.pending.add(item, host)
        self._pending_changed(index)
        queue = self._queue_screen()
        if isinstance(item, TripwireEntry) and queue is not None and queue.is_mounted:
            # A stopped session outranks whatever the operator was reading: go to it.
            queue.select_request(queue_key(host, item.request_id))

    def request_left(self, request_id: str, host: str = "") -> None:
        """A request of ``host`` was decided (here, by another operator, by a timeout) or cancelled."""
        key = queue_key(host, request_id)
        if self.pending.get(key) is None:
            return
        index = self.pending.remove(key)
        self._pending_changed(index)

    def _queue_screen(self) -> QueueScreen | None:
        queue = self.views.get("queue")
        return queue if isinstance(queue, QueueScreen) else None

    def _pending_changed(self, first: int | None) -> None:
        queue = self._queue_screen()
        if first is not None and queue is not None:
            queue.pending_changed(first)
        self.pending_counts = (self.pending.total, self.pending.escalated())

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

    # ------------------------------------------------------------ status pills

    def watch_pending_counts(self, counts: tuple[int, int]) -> None:
        total, escalated = counts
        label = f"{total} pending" if total else "queue empty"
        self.pills.set("pending", label, "warning" if total else "ok", short=f"{total}p" if total else "0")
        self.pills.set(
            "escalations", f"{escalated} escalated" if escalated else "", "error", short=f"{escalated} esc"
        )

    def watch_waiting_agents(self, n: int) -> None:
        self.pills.set(
            "attention",
            f"{n} agent{'s' if n != 1 else ''} waiting for you" if n else "",
            "warning",
            short=f"{n} waiting",
        )

    def _attention_changed(self, event: ev.AttentionChanged, host: str = "") -> None:
        """An agent's attention state changed (the daemon publishes real transitions only):
        the pill follows the count (of every host); a transition into waiting notifies once."""
        self._waiting[host] = _count(event.waiting)
        self.waiting_agents = sum(self._waiting.values())
        entry = event.entry
        if entry.state == "waiting" and event.previous != "waiting":
            who = inert(f"{entry.root_comm or 'agent'} {entry.agent_id}")[:40]
            said = inert(entry.message)[:120]
            self.notify(
                f"{who} is waiting for you" + (f": {said}" if said else ""),
                title="agent-console",
                severity="warning",
                markup=False,
            )

    def on_status_pills_clicked(self, message: StatusPills.Clicked) -> None:
        if message.key in ("pending", "escalations", "tripwire"):
            self.action_show("queue")
        elif message.key in ("watch", "watcher"):
            self.action_show("watch")
        elif message.key == "history":
            for low, high in unaccepted_rows(self.daemon_status):
                self._say_history(low, high)
        elif message.key == "integrity":
            for what, said in integrity_findings(self.daemon_status):
                self._say_integrity(what, said)

    # ------------------------------------------------------------ notifications

    def away(self) -> bool:
        """The operator would not see a new request arrive right now."""
        return (not self.app_focus) or self.current_mode != "queue" or isinstance(self.screen, ModalScreen)

    def _arrived(self, item: PendingItem) -> None:
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
        first = inert(shown_command(arrivals[0]))[:80]
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

    def jump_to_request(self, key: str) -> None:
        """Show the pending request of ``key`` (:func:`~console.tui.model.pending.queue_key`)."""
        self.action_show("queue")
        queue = self._queue_screen()
        if queue is None or not queue.select_request(key):
            self.notify(f"{inert(key)} is no longer pending", severity="warning", markup=False)


def _links(
    app: ConsoleApp, state_dir: str | None, connect: Connect | None, hosts: HostSet | None
) -> dict[str, DaemonLink]:
    """One link per host, by the host's name in the queue ("" when there is one)."""
    if hosts is None:
        return {"": DaemonLink(app, state_dir, connect=connect)}
    multi = len(hosts.names) > 1
    links: dict[str, DaemonLink] = {}
    for name in hosts.names:
        tag = name if multi else ""
        links[tag] = DaemonLink(
            app,
            hosts.state_dir,
            connect=hosts.connector(name, "agent-console-tui"),
            host=tag,
            retry_max_s=REMOTE_RETRY_MAX_S if name in hosts.remote else RETRY_S,
        )
        links[tag].pane_connect = hosts.connector(name, "agent-console-pane")
    return links
