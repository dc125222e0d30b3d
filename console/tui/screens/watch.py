"""The watch panel: workspace changes as they happen, protected ones loud, diffs on demand.

The events themselves are kept by the app's :class:`WatchMonitor` (they must be
counted while the operator looks elsewhere); this screen draws them and asks the daemon
for a diff only when the operator wants one. Viewing the panel clears the header's
count of unseen protected changes.

:class:`RecordScreen` opens a file-event or tripwire row of the history, which has no
request of its own to open.
"""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType

from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.jsonrpc import NOT_FOUND
from console.protocol.records import HistoryRow
from console.protocol.requests import WatchDiff
from console.protocol.watch import WatchEntry
from console.tui.model.watch_model import degraded_roots
from console.tui.render.watch_text import DIFF_NONE
from console.tui.screens.base import ConsoleScreen, Services
from console.tui.settings.bindings import bindings
from console.tui.widgets.line_list import LineList
from console.tui.widgets.record_view import RecordView
from console.tui.widgets.status_line import StatusLine
from console.tui.widgets.watch_detail import WatchDetail
from console.tui.widgets.watch_list import WatchList


class WatchScreen(ConsoleScreen):
    CONTEXT = "watch"
    BINDINGS: ClassVar[list[BindingType]] = bindings("watch")
    CSS_PATH = "watch.tcss"

    def __init__(self, services: Services) -> None:
        super().__init__(services, id="watch")
        self._ready = False  # composed: the monitor's calls may draw (is_mounted is False in on_mount)

    def compose_body(self) -> ComposeResult:
        yield StatusLine(id="watch-banner")
        yield WatchList(self.services.watch_monitor.events, id="watch-list")
        yield WatchDetail(clock=self.services.clock, id="watch-detail")

    def on_mount(self) -> None:
        monitor = self.services.watch_monitor
        monitor.on_added = self._added
        monitor.on_reloaded = self._reloaded
        monitor.on_status = self._status
        self._ready = True
        self.view.focus()
        self._status()
        self._reloaded()

    def on_unmount(self) -> None:
        self._ready = False
        monitor = self.services.watch_monitor
        monitor.on_added = monitor.on_reloaded = monitor.on_status = None

    def on_screen_resume(self) -> None:
        self.services.watch_monitor.seen()
        self._banner()

    # ------------------------------------------------------------ parts

    @property
    def view(self) -> WatchList:
        return self.query_one(WatchList)

    @property
    def detail(self) -> WatchDetail:
        return self.query_one(WatchDetail)

    def selected(self) -> WatchEntry | None:
        model = self.services.watch_monitor.events
        index = self.view.cursor
        return model[index] if 0 <= index < len(model) else None

    # ------------------------------------------------------------ from the monitor

    def _added(self, on_top: int, protected_on_top: int) -> None:
        if not self._ready:
            return
        monitor = self.services.watch_monitor
        if monitor.viewing():
            monitor.seen()
        self.view.added(protected_on_top if monitor.events.protected_only else on_top)
        if self.detail.event is None:
            self.detail.show(self.selected())
        self._banner()

    def _reloaded(self) -> None:
        if self._ready:
            self.view.reset()
            self.detail.show(self.selected())
            self._banner()

    def _status(self) -> None:
        if not self._ready:
            return
        status = self.services.watch_monitor.watch_status
        self.view.degraded = {d.root for d in degraded_roots(status)}
        self.view.restyle()
        self.detail.watch_status = status
        self.detail.refresh_detail()
        self._banner()

    def _banner(self) -> None:
        monitor = self.services.watch_monitor
        model = monitor.events
        roots = monitor.watch_status.roots if monitor.watch_status is not None else []
        degraded = degraded_roots(monitor.watch_status)
        shown = "protected only" if model.protected_only else "all changes"
        counts = f"{model.total:,} recent, {model.protected_total:,} protected, showing {shown} (p)"
        if monitor.dropped:
            counts += f"; {monitor.dropped:,} ordinary events not shown in bursts"
        banner = self.query_one("#watch-banner", StatusLine)
        if degraded:
            d = degraded[0]
            where = inert(d.root)[:60]
            why = inert(d.message or ", ".join(d.codes))[:120]
            banner.say(
                f"⚠ watcher DEGRADED on {where}: {why} (polling, rescans) · {counts}",
                "error",
            )
        elif not monitor.loaded:
            banner.say(f"watcher: loading… · {counts}", "info")
        else:
            banner.say(f"watching {len(roots)} root{'s' if len(roots) != 1 else ''} · {counts}", "info")

    # ------------------------------------------------------------ events

    def on_line_list_highlighted(self, event: LineList.Highlighted) -> None:
        if event.source is self.view:
            self.detail.show(self.selected())

    def on_line_list_opened(self, event: LineList.Opened) -> None:
        if event.source is self.view:
            self.action_diff()

    # ------------------------------------------------------------ actions

    def action_toggle_protected(self) -> None:
        model = self.services.watch_monitor.events
        model.protected_only = not model.protected_only
        self.view.reset()
        self.detail.show(self.selected())
        self._banner()
        self.say("showing protected changes only" if model.protected_only else "showing all changes")

    def action_diff(self) -> None:
        event = self.selected()
        if event is None:
            self.say("no change selected", "warning")
            return
        self.detail.show(event)
        if isinstance(event.path_hex, str) or event.is_dir:
            self.detail.set_diff(event, DIFF_NONE)
            return
        self._load_diff(event)

    @work(group="watch-diff", exclusive=True)
    async def _load_diff(self, event: WatchEntry) -> None:
        try:
            result = await self.services.link.request(
                WatchDiff(workspace_root=event.workspace_root, path=event.path)
            )
        except RPCError as exc:
            if exc.code == NOT_FOUND:
                self.detail.set_diff(event, DIFF_NONE)
            else:
                self.say(f"diff: {inert(exc.message)[:200]}", "error")
            return
        except DaemonUnreachable as exc:
            self.say(f"diff: {inert(str(exc))[:200]}", "error")
            return
        self.detail.set_diff(event, result.diff, result.accepted)
        self.say("diff loaded: escaped, + added, - removed")

    def action_refresh_watch(self) -> None:
        self.services.watch_monitor.reload()
        self.say("reloading recent changes…")


class RecordScreen(ConsoleScreen):
    """A file event or tripwire record of the history, in full."""

    CONTEXT = "record"
    BINDINGS: ClassVar[list[BindingType]] = bindings("record")
    CSS_PATH = "watch.tcss"

    def __init__(self, services: Services, record: HistoryRow) -> None:
        super().__init__(services)
        self.record = record

    def compose_body(self) -> ComposeResult:
        yield RecordView(self.record, limit=self.services.config.max_chars, id="record")

    def on_mount(self) -> None:
        self.query_one(RecordView).focus()

    def action_close(self) -> None:
        self.dismiss()
