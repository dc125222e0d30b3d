"""The grants screen: every standing grant and deny-rule, with revoke."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.timer import Timer

from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.results import GrantsListResult, GrantsRevokeResult, as_result
from console.tui.link import DaemonLink
from console.tui.screens.base import ConsoleScreen, Services
from console.tui.screens.prompts import ConfirmPrompt
from console.tui.settings.bindings import bindings
from console.tui.widgets.column_header import ColumnHeader
from console.tui.widgets.grants_view import COLUMNS, GrantsView


class GrantsScreen(ConsoleScreen):
    CONTEXT = "grants"
    BINDINGS: ClassVar[list[BindingType]] = bindings("grants")
    CSS_PATH = "grants.tcss"

    def __init__(self, services: Services) -> None:
        super().__init__(services, id="grants")
        self.include_inactive = False
        self._live: Timer | None = None

    def compose_body(self) -> ComposeResult:
        yield ColumnHeader(COLUMNS, "grants-list", id="grants-header")
        yield GrantsView(clock=self.services.clock, id="grants-list")

    def on_mount(self) -> None:
        self.query_one(GrantsView).focus()
        self.reload()

    def on_screen_resume(self) -> None:
        self.reload()

    def reload(self) -> None:
        self._load(self.include_inactive)

    @work(group="grants-load", exclusive=True)
    async def _load(self, include_inactive: bool) -> None:
        try:
            result = await self.services.link.call("grants.list", {"include_inactive": include_inactive})
        except (RPCError, DaemonUnreachable) as exc:
            self.say(f"grants unavailable: {inert(str(exc))}", "error")
            view = self.query_one(GrantsView)
            view.set_rows([])
            view.empty_message = "The grants could not be read (see the status line)."
            return
        rows = as_result(GrantsListResult, result).grants
        self.query_one(GrantsView).set_rows(rows)
        what = "all grants, including revoked, expired and used" if include_inactive else "active grants"
        self.say(f"{len(rows)} {what} — r: revoke, i: {'hide' if include_inactive else 'show'} inactive")

    DAEMON_EVENTS: ClassVar[tuple[type[DaemonLink.DaemonEvent[Any]], ...]] = (
        DaemonLink.GrantAdded,
        DaemonLink.GrantsUsed,
        DaemonLink.GrantsRevoked,
    )

    @on(DaemonLink.GrantAdded)
    @on(DaemonLink.GrantsUsed)
    @on(DaemonLink.GrantsRevoked)
    def _grants_changed(
        self, message: DaemonLink.GrantAdded | DaemonLink.GrantsUsed | DaemonLink.GrantsRevoked
    ) -> None:
        """Grants change (added, used, revoked): reload, at most twice a second."""
        if self.is_mounted and self._live is None:
            self._live = self.set_timer(0.5, self._catch_up)

    def _catch_up(self) -> None:
        self._live = None
        self.reload()

    def action_toggle_inactive(self) -> None:
        self.include_inactive = not self.include_inactive
        self.reload()

    def action_revoke(self) -> None:
        grant = self.query_one(GrantsView).selected()
        if grant is None:
            return
        if grant.revoked_at is not None:
            self.say(f"{grant.id} is already revoked", "warning")
            return
        gid = grant.id
        text = Text(f"{gid}: {grant.effect} {grant.scope}\n\n")
        text.append(inert(grant.summary or grant.fingerprint)[:300], "bold")
        text.append("\n\nIdentical requests will be asked again.")

        def answered(yes: bool | None) -> None:
            if yes:
                self._revoke(gid)

        self.app.push_screen(ConfirmPrompt("Revoke this grant?", text, yes="Revoke"), answered)

    @work(group="grants-revoke")
    async def _revoke(self, gid: str) -> None:
        try:
            result = await self.services.link.call("grants.revoke", {"target": gid})
        except (RPCError, DaemonUnreachable) as exc:
            self.say(f"revoke {gid}: {inert(str(exc))}", "error")
            return
        self.say(f"revoked {', '.join(as_result(GrantsRevokeResult, result).revoked) or 'nothing'}", "ok")
        self.reload()
