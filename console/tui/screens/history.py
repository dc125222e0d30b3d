"""The history screen: search and filter every decision and denial the daemon recorded.

Queries run in workers, one at a time (a newer query cancels the older), first the page
and then, separately, the count — so a broad count over a million rows never delays
the rows themselves.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.timer import Timer
from textual.widgets import Input

from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.history import SOURCES, TRIPWIRE_KINDS, VERDICTS
from console.protocol.requests import HistoryQuery
from console.tui.link import DaemonLink
from console.tui.model.historyquery import cycle, parse_query, set_token, token_value
from console.tui.screens.base import ConsoleScreen, Services
from console.tui.screens.entry import EntryScreen
from console.tui.screens.grant_prompt import grant_from_record
from console.tui.screens.watch import RecordScreen
from console.tui.settings.bindings import bindings
from console.tui.widgets.history_view import HistoryView
from console.tui.widgets.line_list import LineList
from console.tui.widgets.status_line import StatusLine

PAGE = 200
DEBOUNCE_S = 0.12
LIVE_S = 0.5


class HistoryScreen(ConsoleScreen):
    CONTEXT = "history"
    BINDINGS: ClassVar[list[BindingType]] = bindings("history")
    CSS_PATH = "history.tcss"

    def __init__(self, services: Services) -> None:
        super().__init__(services, id="history")
        self._debounce: Timer | None = None
        self._query = HistoryQuery(limit=PAGE)
        self._generation = 0
        self.last_query_ms: float | None = None
        self._live: Timer | None = None

    def compose_body(self) -> ComposeResult:
        yield Input(
            placeholder="search…  filters: verdict:deny source:timeout tool:NAME session:ID since:2h until:DATE",
            id="history-search",
            select_on_focus=False,
        )
        yield StatusLine(id="history-summary")
        yield HistoryView(id="history-list")

    def on_mount(self) -> None:
        self.query_one(HistoryView).focus()
        self.run_query()

    @property
    def view(self) -> HistoryView:
        return self.query_one(HistoryView)

    def _gone(self) -> bool:
        """Whether the list went while a page was on its way (the app shutting down
        removes it from a screen still mounted): a late page then has nowhere to go."""
        return not self.query(HistoryView)

    @property
    def search_box(self) -> Input:
        return self.query_one("#history-search", Input)

    def summary(self, message: str, severity: str = "info") -> None:
        for line in self.query("#history-summary").results(StatusLine):
            line.say(message, severity)

    # ------------------------------------------------------------ querying

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "history-search":
            return
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(DEBOUNCE_S, self.run_query)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "history-search":
            if self._debounce is not None:
                self._debounce.stop()
            self.run_query()
            self.view.focus()

    def run_query(self) -> None:
        parsed = parse_query(self.search_box.value, self.services.clock())
        if parsed.errors:
            self.summary("; ".join(parsed.errors), "error")
            return
        # The search line's filters as the query's params, once: the pages after it add a cursor.
        self._query = HistoryQuery(**parsed.params, limit=PAGE)
        filtered = bool(set(parsed.params) - {"kinds"})
        self._generation += 1
        self.view.empty_message = "Searching…"
        self.summary(f"showing {parsed.describe()} — counting…")
        self._fetch_first(self._generation, self._query, filtered, parsed.describe())

    @work(group="history-query", exclusive=True)
    async def _fetch_first(
        self, generation: int, query: HistoryQuery, filtered: bool, described: str
    ) -> None:
        started = self.services.monotonic()
        try:
            page = await self.services.link.request(query)
        except (RPCError, DaemonUnreachable) as exc:
            if self._gone():
                return
            self.summary(f"history unavailable: {inert(str(exc))}", "error")
            self.view.empty_message = "The history could not be read."
            self.view.set_rows([], None)
            return
        if generation != self._generation or self._gone():
            return
        self.view.empty_message = "Nothing matches." if filtered else "Nothing recorded yet."
        self.view.set_rows(page.rows, page.older)
        self.last_query_ms = (self.services.monotonic() - started) * 1000
        self._count(generation, query, described)

    @work(group="history-count", exclusive=True)
    async def _count(self, generation: int, query: HistoryQuery, described: str) -> None:
        try:
            result = await self.services.link.request(msgspec.structs.replace(query, limit=1, count=True))
        except (RPCError, DaemonUnreachable):
            return
        if generation != self._generation:
            return
        count = result.count if isinstance(result.count, int) else 0
        shown = f"{count:,}" if count < 10_000 else f"{count:,}+" if count % 10_000 == 0 else f"{count:,}"
        self.summary(f"{shown} matching: {described}")

    def on_history_view_need_more(self, event: HistoryView.NeedMore) -> None:
        self._fetch_more(self._generation, self._query, event.older)

    @work(group="history-more", exclusive=True)
    async def _fetch_more(self, generation: int, query: HistoryQuery, older: int) -> None:
        try:
            page = await self.services.link.request(msgspec.structs.replace(query, before_seq=older))
        except (RPCError, DaemonUnreachable) as exc:
            if not self._gone():
                self.say(f"could not load more: {inert(str(exc))}", "error")
                self.view.fetching = False
            return
        if generation == self._generation and not self._gone():
            self.view.append_rows(page.rows, page.older)

    DAEMON_EVENTS: ClassVar[tuple[type[DaemonLink.DaemonEvent[Any]], ...]] = (
        DaemonLink.Decided,
        DaemonLink.OutcomeFinished,
    )

    @on(DaemonLink.Decided)
    @on(DaemonLink.OutcomeFinished)
    def _new_rows(self, message: DaemonLink.Decided | DaemonLink.OutcomeFinished) -> None:
        """New decisions show up on top while the operator watches the newest rows.

        A busy daemon decides many times a second; the history catches up at most twice a
        second, with one query for everything new.
        """
        if self.is_mounted and self._live is None:
            self._live = self.set_timer(LIVE_S, self._catch_up)

    def _catch_up(self) -> None:
        self._live = None
        if not self.view.rows:
            self.run_query()
        elif self.view.scroll_offset.y == 0:
            self._fetch_newer(self._generation, self._query, self.view.rows[0].seq)

    @work(group="history-newer", exclusive=True)
    async def _fetch_newer(self, generation: int, query: HistoryQuery, newest: int) -> None:
        try:
            page = await self.services.link.request(msgspec.structs.replace(query, after_seq=newest))
        except (RPCError, DaemonUnreachable):
            return
        if self._gone():
            return
        if generation == self._generation and self.view.rows and self.view.rows[0].seq == newest:
            self.view.prepend_rows(page.rows)

    # ------------------------------------------------------------ actions

    def on_line_list_opened(self, event: LineList.Opened) -> None:
        row = self.view.selected()
        watcher_kinds = ("file_event", *TRIPWIRE_KINDS)
        if row is not None and row.kind in watcher_kinds and not row.request_id:
            self.app.push_screen(
                RecordScreen(self.services, row)
            )  # a change by a session or nobody: no request
            return
        if row is not None and row.request_id:
            self.app.push_screen(EntryScreen(self.services, row.request_id))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # "/" typed in the search box is text (the binding is a priority one).
        return not (action == "search" and self.focused is self.search_box)

    def action_search(self) -> None:
        # Focus now, not on the next idle: keys typed right after "/" belong to the box.
        self.set_focus(self.search_box)
        self.search_box.cursor_position = len(self.search_box.value)

    def _set_filter(self, key: str, value: str | None) -> None:
        self.search_box.value = set_token(self.search_box.value, key, value)
        if self._debounce is not None:
            self._debounce.stop()
        self.run_query()

    def action_cycle_verdict(self) -> None:
        self._set_filter("verdict", cycle(VERDICTS, token_value(self.search_box.value, "verdict")))

    def action_cycle_source(self) -> None:
        self._set_filter("source", cycle(SOURCES, token_value(self.search_box.value, "source")))

    def action_clear_filters(self) -> None:
        if self.search_box.value:
            self.search_box.value = ""
            if self._debounce is not None:
                self._debounce.stop()
            self.run_query()
        self.view.focus()

    def action_refresh_history(self) -> None:
        self.run_query()

    def action_grant(self) -> None:
        row = self.view.selected()
        if row is None:
            return
        grant_from_record(self, row)
