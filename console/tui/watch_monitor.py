"""The console's side of the workspace watcher, alive for the whole app, whatever is on screen.

The watch panel is one view among others, but what the watcher reports matters most
when the operator is looking elsewhere: this object, made once by the app, keeps the
recent events, counts the protected changes not yet seen (a header pill until the
watch panel is viewed), shows a degraded watcher and the sandbox probe in the header
(as the app's ``daemon_status`` changes: its watcher calls :meth:`WatchMonitor.status_changed`),
raises tripwire alerts as notifications (the console's notification settings), and
keeps paused sessions' tripwire items in the approval queue — adding them as they
arrive or on (re)connect, removing them when resolved here or by another operator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.screen import ModalScreen

from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.events import WatchBatch
from console.protocol.requests import TripwireList, WatchRecent
from console.protocol.results import DaemonStatusResult
from console.protocol.tripwire import TripwireNotice
from console.protocol.watch import WatchStatus
from console.tui.desktop import sequence
from console.tui.model.pending import queue_key
from console.tui.model.watch_model import TripwireEntry, WatchEvents, degraded_roots, sandbox_pill

if TYPE_CHECKING:
    from console.tui.app import ConsoleApp

RECENT_ON_CONNECT = 2000
ALERT_COALESCE_S = 0.4
VIEW = "watch"


class WatchMonitor:
    def __init__(self, app: ConsoleApp) -> None:
        self.app = app
        self.events = WatchEvents()
        self.watch_status: WatchStatus | None = None
        self.unseen = 0
        self.paused: dict[str, TripwireNotice] = {}  # by queue key (console/tui/model/pending.py)
        self.dropped = 0
        self.loaded = False
        # The watch panel listens here: (rows added on top of all, of protected-only), or a reload.
        self.on_added: Callable[[int, int], None] | None = None
        self.on_reloaded: Callable[[], None] | None = None
        self.on_status: Callable[[], None] | None = None
        self._alerts: list[str] = []
        self._alert_timer: Any = None
        self._warned_sandbox = ""

    # ------------------------------------------------------------ from the app's handlers

    def connected(self, host: str = "") -> None:
        """(Re)connected to ``host``: the app has just replaced its pending queue, dropping
        our items; the daemon's status comes through :meth:`status_changed`. The watch
        panel follows the console's first host; another host's tripwire items are loaded
        for the queue only."""
        for key in [k for k, item in self.paused.items() if queue_key(host, item.id) == k]:
            del self.paused[key]
        if host == self.app.primary_host:
            self.app.run_worker(self._load(), group="watch-load", exclusive=True, exit_on_error=False)
        else:
            self.app.run_worker(self._load_items(host), group=f"watch-items-{host}", exit_on_error=False)

    def status_changed(self, status: DaemonStatusResult | None) -> None:
        """The app's ``daemon_status`` changed (a new connection, a status event)."""
        if status is None:
            return
        if isinstance(status.watch, WatchStatus):
            self.watch_changed(status.watch)
        mode = status.sessions.pause_mode
        if isinstance(mode, str):
            # Said only when weaker than a cgroup freeze: a walk can miss a process that
            # cleared its marker and left the group (docs/tripwire.md).
            label = f"tripwire pauses by {inert(mode)[:40]}" if mode != "cgroup freeze" else ""
            self.app.pills.set("pause-mode", label, "warning", short="walk")
        label, variant = sandbox_pill(status)
        self.app.pills.set("sandbox", label, variant or "muted")
        if variant == "error" and label != self._warned_sandbox:
            self._warned_sandbox = label
            self.app.notify(
                f"{inert(label)[:300]} — operations that need the sandbox will not run",
                title="sandbox",
                severity="error",
                timeout=15,
                markup=False,
            )

    def watch_changed(self, watch: WatchStatus) -> None:
        """The watcher's part of the status (on its own when only it changed)."""
        self.watch_status = watch
        degraded = degraded_roots(watch)
        if degraded:
            first = degraded[0]
            more = f" (+{len(degraded) - 1} roots)" if len(degraded) > 1 else ""
            code = first.codes[0] if first.codes else "degraded"
            self.app.pills.set("watcher", f"watcher DEGRADED: {code}{more}", "error")
        else:
            self.app.pills.set("watcher", "")
        if self.on_status is not None:
            self.on_status()

    def batch(self, event: WatchBatch) -> None:
        """File events (the ``watch`` topic's ``events``)."""
        self.dropped += event.dropped
        on_top, protected = self.events.add(event.events)
        if self.events.loud_added and not self.viewing():
            self.unseen += self.events.loud_added
            self._unseen_pill()
        if self.on_added is not None and (on_top or event.dropped):
            self.on_added(on_top, protected)

    def alert(self, summary: str) -> None:
        """A protected change raised by the daemon (an ``alert``)."""
        self._alert(summary)

    def tripwire(self, item: TripwireNotice, host: str = "") -> None:
        """A tripwire item: a paused session's goes to the queue (an exited writer's is only shown)."""
        if item.paused:
            self._add_item(item, host)
            self._alert(f"{item.summary} — session paused, answer it in the queue")

    # ------------------------------------------------------------ seen / unseen

    def viewing(self) -> bool:
        app = self.app
        return app.current_mode == VIEW and not isinstance(app.screen, ModalScreen) and app.app_focus

    def seen(self) -> None:
        """The operator is looking at the watch panel."""
        self.unseen = 0
        self._unseen_pill()

    def _unseen_pill(self) -> None:
        n = self.unseen
        self.app.pills.set("watch", f"{n} protected change{'s' if n != 1 else ''}" if n else "", "error")

    # ------------------------------------------------------------ tripwire items

    def _add_item(self, item: TripwireNotice, host: str = "") -> None:
        key = queue_key(host, item.id)
        if not item.id or key in self.paused:
            return
        self.paused[key] = item
        self.app.add_pending(TripwireEntry(item, host), host)
        self._paused_pill()

    def resolved(self, ident: str, host: str = "") -> None:
        """Resolved here or by another operator: it leaves the queue."""
        if self.paused.pop(queue_key(host, ident), None) is not None:
            self._paused_pill()
        self.app.request_left(ident, host)

    def _paused_pill(self) -> None:
        n = len(self.paused)
        self.app.pills.set(
            "tripwire", f"{n} session{'s' if n != 1 else ''} paused by tripwire" if n else "", "error"
        )

    # ------------------------------------------------------------ alerts

    def _alert(self, summary: str) -> None:
        self._alerts.append(inert(summary)[:200])
        if self._alert_timer is None:
            self._alert_timer = self.app.set_timer(ALERT_COALESCE_S, self._raise_alerts)

    def _raise_alerts(self) -> None:
        self._alert_timer = None
        alerts, self._alerts = self._alerts, []
        if not alerts:
            return
        body = alerts[0] if len(alerts) == 1 else f"{len(alerts)} tripwire alerts; first: {alerts[0]}"
        notes = self.app.config.notifications
        if notes.toast:
            self.app.notify(body, title="tripwire", severity="error", timeout=10, markup=False)
        if notes.bell:
            self.app.bell()
        if notes.desktop != "off":
            self.app.write_escape(sequence(notes.desktop, "agent-console tripwire", body))

    # ------------------------------------------------------------ loading

    async def _load(self) -> None:
        link = self.app.link
        try:
            recent = await link.request(WatchRecent(limit=RECENT_ON_CONNECT))
            items = (await link.request(TripwireList())).items
        except (RPCError, DaemonUnreachable) as exc:
            self.app.pills.set("watcher", f"watcher unavailable: {inert(str(exc))[:60]}", "warning")
            return
        self.events.replace(recent.events)
        self.loaded = True
        for item in items:
            if item.paused:
                self._add_item(item, self.app.primary_host)
        if self.on_reloaded is not None:
            self.on_reloaded()

    async def _load_items(self, host: str) -> None:
        """Another host's paused sessions, for the queue."""
        try:
            items = (await self.app.link_for(host).request(TripwireList())).items
        except (RPCError, DaemonUnreachable):
            return
        for item in items:
            if item.paused:
                self._add_item(item, host)

    def reload(self) -> None:
        self.app.run_worker(self._load(), group="watch-load", exclusive=True, exit_on_error=False)
