"""The queue screen: pending requests on top, the selected one in detail below.

Decisions are sent from workers so the screen never waits on the socket. The
typed-ahead guard lives here because only this screen knows what is on screen.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Input

from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.policy import GrantScope
from console.policy.rules import suggested
from console.protocol.jsonrpc import NOT_FOUND
from console.protocol.records import HistoryRow
from console.protocol.requests import (
    Decide,
    DecideAction,
    HistoryPrevious,
    TripwireResolution,
    TripwireResolve,
    WatchRecent,
)
from console.tui.link import DaemonLink
from console.tui.model.badges import confirmation
from console.tui.model.guard import TypeAheadGuard
from console.tui.model.pending import Entry
from console.tui.model.timefmt import parse_duration
from console.tui.model.watch_model import ANSWERS, TripwireEntry, sessions_of
from console.tui.model.words import shown_command
from console.tui.render.watch_text import answered
from console.tui.screens.base import ConsoleScreen, Services
from console.tui.screens.prompts import ConfirmPrompt, OptionPrompt, TextPrompt
from console.tui.settings.bindings import bindings
from console.tui.widgets.queue_view import QueueView
from console.tui.widgets.request_detail import RequestDetail


def _check_expiry(text: str) -> str | None:
    if not text.strip():
        return None
    try:
        parse_duration(text)
    except ValueError as exc:
        return str(exc)
    return None


class QueueScreen(ConsoleScreen):
    CONTEXT = "queue"
    BINDINGS: ClassVar[list[BindingType]] = bindings("queue")
    CSS_PATH = "queue.tcss"

    def __init__(self, services: Services) -> None:
        super().__init__(services, id="queue")
        self.guard: TypeAheadGuard | None = None
        self._previous: OrderedDict[tuple[str, str, str], list[HistoryRow]] = OrderedDict()
        self._shown_key: str | None = None
        self._detail_pending = False
        self._view: QueueView | None = None
        self._detail: RequestDetail | None = None
        self._tripwire_shown = False
        self._changes_timer: Timer | None = None

    def compose_body(self) -> ComposeResult:
        cfg = self.services.config
        with Vertical(id="queue-pane"):
            yield Input(
                placeholder="filter: words in the command, tool, session, fingerprint; NET, PROTECTED…",
                id="queue-filter",
                select_on_focus=False,
            )
            yield QueueView(
                self.services.pending,
                clock=self.services.clock,
                id="queue-list",
                host_column=self.services.multi_host,
            )
        yield RequestDetail(
            max_chars=cfg.max_chars, max_lines=cfg.max_lines, clock=self.services.clock, id="detail"
        )

    def on_mount(self) -> None:
        self.guard = TypeAheadGuard(self.services.config.guard_idle_s, clock=self.services.monotonic)
        self.query_one(QueueView).focus()
        # Watched rather than heard from (LineList.Highlighted arrives after the cursor's
        # frame): the detail of the row the operator moved to is painted in that frame.
        self.watch(self.view, "cursor", self._cursor_moved, init=False)
        self.pending_changed(0)

    def _cursor_moved(self) -> None:
        if not self._detail_pending:  # a burst of arrivals draws it once, after the rows
            self._show_current()

    # ------------------------------------------------------------ parts

    @property
    def view(self) -> QueueView:
        if self._view is None:
            self._view = self.query_one(QueueView)
        return self._view

    @property
    def detail(self) -> RequestDetail:
        if self._detail is None:
            self._detail = self.query_one(RequestDetail)
        return self._detail

    def current(self) -> Entry | None:
        view = self.view
        if not len(self.services.pending):
            return None
        return self.services.pending.entry(min(view.cursor, len(self.services.pending) - 1))

    # ------------------------------------------------------------ model changes (called by the app)

    def pending_changed(self, first: int) -> None:
        """The queue changed from view index ``first`` on; keep the selection on the same request."""
        if not self.is_mounted:
            return
        view = self.view
        model = self.services.pending
        if self._shown_key is not None:
            index = model.index_of(self._shown_key)
            if index is not None and index != view.cursor:
                view.set_reactive(QueueView.cursor, index)
        view.rows_changed(first)
        self._schedule_detail()

    def _schedule_detail(self) -> None:
        """A burst of arrivals, departures or key presses redraws the detail once, after the rows."""
        if not self._detail_pending:
            self._detail_pending = True
            self.call_after_refresh(self._show_current)

    def select_request(self, key: str) -> bool:
        """Put the cursor on the request of ``key`` (its queue key: the id, with its host)."""
        index = self.services.pending.index_of(key)
        if index is None:
            self.services.pending.set_filter("")
            self.query_one("#queue-filter", Input).value = ""
            self.view.rows_changed(0)
            index = self.services.pending.index_of(key)
        if index is None:
            return False
        self.view.cursor = index
        return True

    def _show_current(self) -> None:
        self._detail_pending = False
        entry = self.current()
        if entry is None:
            self._shown_key = None
            self.detail.show(None)
            return
        item = entry.item
        self._shown_key = entry.key
        if isinstance(item, TripwireEntry):
            if self.detail.key != entry.key:
                self.detail.show(item, host=entry.host)
            self._tripwire_bindings(True)
            return
        key = (entry.host, item.operation.tool, item.operation.executable)
        previous = self._previous.get(key)
        if self.detail.key != entry.key or previous is not self.detail.previous:
            self.detail.show(item, entry.badges, previous, host=entry.host)
        if previous is None:
            self._load_previous(key, entry.request_id)
        if self.detail.changes is None and item.session_id:
            self._load_changes(entry.host, entry.request_id, item.session_id)
        self._tripwire_bindings(False)

    # ------------------------------------------------------------ watcher: changes, tripwire items

    def _tripwire_bindings(self, shown: bool) -> None:
        if shown != self._tripwire_shown:
            self._tripwire_shown = shown
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A tripwire item is answered with resume/kill/keep paused, a request with approve/deny."""
        if action == "tripwire":
            return self._tripwire_shown
        if action in ("approve", "deny", "deny_always", "deny_note"):
            return not self._tripwire_shown
        if action == "filter":  # "/" typed in the filter box is text (a priority binding)
            return self.focused is not self.query_one("#queue-filter", Input)
        return True

    @work(group="changes", exclusive=True)
    async def _load_changes(self, host: str, request_id: str, session_id: str) -> None:
        try:
            result = await self.services.link_for(host).request(
                WatchRecent(agent_session=session_id, limit=200)
            )
        except (DaemonUnreachable, RPCError):
            return
        self.detail.set_changes(request_id, result.events)

    DAEMON_EVENTS: ClassVar[tuple[type[DaemonLink.DaemonEvent[Any]], ...]] = (DaemonLink.WatchBatch,)

    @on(DaemonLink.WatchBatch)
    def _session_changes(self, message: DaemonLink.WatchBatch) -> None:
        """New changes by a terminal session: the shown request's list follows, twice a second at most."""
        if not self.is_mounted:
            return
        if self.detail.item is None or not self.detail.item.session_id or self._changes_timer is not None:
            return
        if self.detail.host != message.host:
            return  # another host's sessions changed
        if any(sessions_of(e) for e in message.event.events):
            self._changes_timer = self.set_timer(0.5, self._reload_changes)

    def _reload_changes(self) -> None:
        self._changes_timer = None
        item = self.detail.item
        if item is not None and item.session_id and not isinstance(item, TripwireEntry):
            self._load_changes(self.detail.host, item.request_id, item.session_id)

    def action_tripwire(self, answer: str) -> None:
        entry = self._guarded() if answer == "resume" else self.shown()
        if entry is None:
            return
        if not isinstance(entry.item, TripwireEntry):
            self.say("resume, kill and keep paused answer tripwire items; this is a request", "warning")
            return
        item = entry.item
        trip = item.tripwire
        what = inert(trip.display_path)
        who = f"session {inert(trip.session)[:40]}" if trip.session else "this change"
        if answer == "resume":
            text = Text(
                f"Every process of {who} goes on, and the new content of {what} becomes its baseline: "
                "later diffs start from it, and this change is not shown again. To put the file back "
                "instead, answer kill (K) or keep paused (p) with revert."
            )

            def resumed(yes: bool | None) -> None:
                if yes:
                    self._send_tripwire(entry, item, answer, accept=True)

            self.app.push_screen(
                ConfirmPrompt(f"Resume {who}?", text, yes="Resume, keep the new content"), resumed
            )
            return
        kill = answer == "kill"
        if trip.revertable:
            why = f"Tick to put {what} back as it was before this change (revert to its baseline)."
        else:
            why = f"The previous content of {what} was not kept (over 64 KiB, or never seen): it cannot be put back."
        text = Text(
            (
                f"Every process of {who} is ended. "
                if kill
                else f"{who.capitalize()} stays stopped; the item leaves the queue. "
            )
            + why
        )

        def chosen(answer_: tuple[bool, bool] | None) -> None:
            if answer_ is not None and answer_[0]:
                self._send_tripwire(entry, item, answer, revert=answer_[1])

        self.app.push_screen(
            OptionPrompt(
                f"{'Kill' if kill else 'Keep paused'}: {who}?",
                text,
                yes="Kill" if kill else "Keep paused",
                option=f"revert {what} to its baseline",
                option_on=kill,
                option_enabled=trip.revertable,
            ),
            chosen,
        )

    @work(group="decide", exclusive=False)
    async def _send_tripwire(
        self,
        entry: Entry,
        item: TripwireEntry,
        answer: str,
        *,
        revert: bool | None = None,
        accept: bool = False,
    ) -> None:
        params = TripwireResolve(
            id=entry.request_id, action=TripwireResolution(answer), revert=revert, accept=accept
        )
        try:
            result = await self.services.link_for(entry.host).request(params)
        except RPCError as exc:
            if exc.code == NOT_FOUND:
                self.services.watch_monitor.resolved(entry.request_id, entry.host)
                self.say(f"{entry.request_id}: already answered elsewhere", "warning")
            else:
                self.say(f"{ANSWERS[answer]} {entry.request_id}: {inert(exc.message)}", "error")
            return
        except DaemonUnreachable as exc:
            self.say(f"{answer} {entry.request_id}: not sent — {inert(str(exc))}", "error")
            return
        self.services.watch_monitor.resolved(entry.request_id, entry.host)
        said = answered(answer, item)
        if result.item.reverted:
            said += f"; {inert(item.tripwire.display_path)} reverted ({inert(result.item.reverted)[:80]})"
        self.say(said, "ok" if answer == "resume" else "warning")

    @work(group="previous", exclusive=False)
    async def _load_previous(self, key: tuple[str, str, str], request_id: str) -> None:
        host, tool, executable = key
        try:
            result = await self.services.link_for(host).request(
                HistoryPrevious(tool=tool, executable=executable, limit=20)
            )
        except (DaemonUnreachable, RPCError):
            return
        rows = [r for r in result.decisions if r.request_id != request_id]
        self._previous[key] = rows
        while len(self._previous) > 256:
            self._previous.popitem(last=False)
        self.detail.set_previous(request_id, rows)

    # ------------------------------------------------------------ events

    def on_request_detail_shown(self, event: RequestDetail.Shown) -> None:
        if self.guard is not None:
            self.guard.shown(event.key, truncated=event.truncated)

    def on_screen_resume(self) -> None:
        self._show_current()
        if self.guard is not None:
            self.guard.hidden()
            self.guard.shown(self.detail.shown_key, truncated=self.detail.truncated)

    def on_screen_suspend(self) -> None:
        if self.guard is not None:
            self.guard.hidden()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "queue-filter":
            self.services.pending.set_filter(event.value)
            self.view.cursor = 0
            self.view.rows_changed(0)
            self._show_current()
            shown, total = len(self.services.pending), self.services.pending.total
            self.say(f"filter: {shown} of {total} shown" if event.value.strip() else "")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "queue-filter":
            self.view.focus()

    # ------------------------------------------------------------ actions

    def shown(self) -> Entry | None:
        """The request whose detail is on screen, if it is still pending: what decisions act on.

        Not the row under the cursor: the detail follows the cursor a frame later, and a
        decision must never land on a request the operator has not seen.
        """
        key = self.detail.key
        entry = self.services.pending.get(key) if key else None
        if entry is None:
            self.say("nothing to decide: no pending request is shown", "warning")
        return entry

    def _guarded(self) -> Entry | None:
        entry = self.shown()
        if entry is None:
            return None
        assert self.guard is not None
        verdict = self.guard.check(self.detail.shown_key)
        if not verdict.ok:
            self.say(verdict.why, "warning")
            return None
        return entry

    # ------------------------------------------------------------ marks and rules

    def marked_entries(self) -> list[Entry]:
        """The marked rows still pending (a decided one loses its mark)."""
        view = self.view
        found = [e for key in list(view.marked) if (e := self.services.pending.get(key)) is not None]
        view.marked.intersection_update(e.key for e in found)
        return found

    def action_mark(self) -> None:
        entry = self.current()
        if entry is None:
            return
        view = self.view
        view.marked.symmetric_difference_update({entry.key})
        view.rows_changed(0)
        if view.cursor < len(self.services.pending) - 1:
            view.cursor += 1
        n = len(self.marked_entries())
        self.say(
            f"{n} marked: a approves those within the ceiling once, d denies them" if n else "no row marked"
        )

    def _bulk_approve(self, marked: list[Entry]) -> None:
        """Approve once every marked request within the ceiling, after a confirmation that
        lists them; one with a badge (an escalation) or a tripwire item is left to decide alone."""
        within = [e for e in marked if not e.badges and not isinstance(e.item, TripwireEntry)]
        left = len(marked) - len(within)
        if not within:
            self.say("none of the marked requests is within the ceiling: decide each alone", "warning")
            return
        listed = "\n".join(
            f"  {e.request_id}  {inert(e.item.command if isinstance(e.item, TripwireEntry) else shown_command(e.item))[:70]}"
            for e in within[:12]
        )
        more = f"\n  … and {len(within) - 12} more" if len(within) > 12 else ""
        skipped = f"\n{left} marked with an escalation stay for you to decide alone." if left else ""

        def done(yes: bool | None) -> None:
            if not yes:
                self.say("bulk approve: cancelled")
                return
            for e in within:
                self.decide(e, DecideAction.APPROVE)
                self.view.marked.discard(e.key)
            self.view.rows_changed(0)

        self.app.push_screen(
            ConfirmPrompt(f"Approve {len(within)} requests once?", listed + more + skipped), done
        )

    def action_approve_rule(self) -> None:
        entry = self._guarded()
        if entry is None:
            return
        if isinstance(entry.item, TripwireEntry):
            self.say("a tripwire item: r resume, K kill, p keep paused", "warning")
            return
        item = entry.item
        if entry.badges:
            self.say(
                "a rule covers only requests within the sandbox ceiling: approve this one alone", "warning"
            )
            return
        offer = suggested(item.operation.argv)
        if not offer:
            self.say(
                "no rule can cover this command (not a plain command, or an interpreter): approve once",
                "warning",
            )
            return

        def done(words: str | None) -> None:
            if words is None or not words.strip():
                self.say("rule: cancelled")
                return
            self.decide(entry, DecideAction.APPROVE, scope=GrantScope.RULE, rule=" ".join(words.split()))

        self.app.push_screen(
            TextPrompt(
                "Approve as a rule",
                f"Allow this request, and from now on every command agent {inert(item.agent_id)} runs in "
                f"{inert(item.operation.workspace_root)} that starts with these words, within the sandbox "
                "ceiling (never an escalation). Revoke it in the grants (3).",
                placeholder=offer,
                value=offer,
            ),
            done,
        )

    def action_approve(self, scope: str) -> None:
        marked = self.marked_entries()
        if marked:
            if scope != "once":
                self.say(
                    "rows are marked: a approves them once (space unmarks); s and A act on one", "warning"
                )
                return
            self._bulk_approve(marked)
            return
        entry = self._guarded()
        if entry is None:
            return
        if isinstance(entry.item, TripwireEntry):
            self.say("a tripwire item: r resume, K kill, p keep paused", "warning")
            return
        needed = confirmation(entry.item)
        if needed is not None:
            self._confirm_then_approve(entry, scope, *needed)
            return
        self._approve(entry, scope)

    def _confirm_then_approve(self, entry: Entry, scope: str, word: str, risk: str) -> None:
        """A deliberate gesture for what cannot be undone by denying the next one."""

        def done(answer: str | None) -> None:
            if answer is None:
                self.say(f"approve {entry.request_id}: cancelled")
                return
            self._approve(entry, scope)

        self.app.push_screen(
            TextPrompt(
                f"Approve {entry.request_id} ({word})",
                f"{risk} Type {word} to approve it {scope}; Escape cancels.",
                placeholder=word,
                check=lambda text: None if text.strip().lower() == word else f"type {word} to approve",
            ),
            done,
        )

    def _approve(self, entry: Entry, scope: str) -> None:
        if scope == "always":

            def done(answer: str | None) -> None:
                if answer is None:
                    self.say("approve always: cancelled")
                    return
                expires_in_s = parse_duration(answer) if answer.strip() else None
                self.decide(entry, DecideAction.APPROVE, scope=GrantScope.ALWAYS, expires_in_s=expires_in_s)

            self.app.push_screen(
                TextPrompt(
                    "Approve always",
                    "A standing grant for this exact fingerprint: every identical request is allowed without "
                    "asking. Expire it after (e.g. 8h, 7d), or leave empty for never.",
                    placeholder="8h",
                    check=_check_expiry,
                ),
                done,
            )
            return
        self.decide(entry, DecideAction.APPROVE, scope=GrantScope(scope))

    def action_deny(self) -> None:
        marked = self.marked_entries()
        if marked:
            for e in marked:
                if not isinstance(e.item, TripwireEntry):
                    self.decide(e, DecideAction.DENY)
                self.view.marked.discard(e.key)
            self.view.rows_changed(0)
            return
        entry = self.shown()
        if entry is not None:
            self.decide(entry, DecideAction.DENY)

    def action_deny_always(self) -> None:
        entry = self.shown()
        if entry is not None:
            self.decide(entry, DecideAction.DENY, always=True)

    def action_deny_note(self) -> None:
        entry = self.shown()
        if entry is None:
            return

        def done(note: str | None) -> None:
            if note is not None:
                self.decide(entry, DecideAction.DENY, note=note)

        self.app.push_screen(
            TextPrompt(
                "Deny with a note",
                "The agent receives this note with the denial, e.g. what to do instead.",
                placeholder="use the vendored copy instead of pip install",
            ),
            done,
        )

    def action_expand(self) -> None:
        if self.detail.item is not None:
            self.detail.expand_all()
            self.say("expanded: everything of this request is shown")

    def action_toggle_fingerprint(self) -> None:
        self.detail.toggle_fingerprint()

    def action_filter(self) -> None:
        box = self.query_one("#queue-filter", Input)
        box.add_class("-active")
        self.set_focus(box)

    def action_clear_filter(self) -> None:
        box = self.query_one("#queue-filter", Input)
        if box.value:
            box.value = ""
        box.remove_class("-active")
        self.view.focus()

    # ------------------------------------------------------------ deciding

    def decide(
        self,
        entry: Entry,
        action: DecideAction,
        *,
        scope: GrantScope = GrantScope.ONCE,
        expires_in_s: float | None = None,
        note: str = "",
        always: bool = False,
        rule: str = "",
    ) -> None:
        if isinstance(entry.item, TripwireEntry):
            self.say("a tripwire item: r resume, K kill, p keep paused", "warning")
            return
        # Bound to host + request id (+ the fingerprint the id names there): it goes to the
        # daemon of the host that asked, never to another.
        params = Decide(
            target=entry.request_id,
            action=action,
            scope=scope,
            expires_in_s=expires_in_s,
            note=note,
            always=always,
            rule=rule,
        )
        self._send_decision(entry, params)

    @work(group="decide", exclusive=False)
    async def _send_decision(self, entry: Entry, params: Decide) -> None:
        action = params.action.value
        command = inert(
            entry.item.command if isinstance(entry.item, TripwireEntry) else shown_command(entry.item)
        )[:80]
        try:
            result = await self.services.link_for(entry.host).request(params)
        except RPCError as exc:
            self.say(f"{action} {entry.request_id}: {inert(exc.message)}", "error")
            return
        except DaemonUnreachable as exc:
            self.say(f"{action} {entry.request_id}: not sent — {inert(str(exc))}", "error")
            return
        if not isinstance(entry.item, TripwireEntry):
            op = entry.item.operation
            self._previous.pop((entry.host, op.tool, op.executable), None)
        for rid in result.decided:
            self.app.request_left(rid, entry.host)
        how = {"approve": "approved", "deny": "denied"}[action]
        scope = (
            "always (deny-rule)" if params.always and params.scope == GrantScope.ONCE else params.scope.value
        )
        more = len(result.decided) - 1
        suffix = f" (+{more} identical)" if more > 0 else ""
        self.say(f"{how} {scope}: {command}{suffix}", "ok" if action == "approve" else "warning")
