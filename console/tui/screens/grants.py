"""The grants screen: every standing grant and deny-rule, with revoke.

With several hosts the list merges every host's grants, oldest first, with a HOST
column, as the queue merges their requests: a revoke goes to the daemon that holds the
grant, and a host that cannot be reached is named in the status line (its grants are
not shown until it is back)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.timer import Timer

from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.grants import GrantObject
from console.protocol.requests import GrantsList, GrantsRevoke
from console.tui.link import DaemonLink
from console.tui.screens.base import ConsoleScreen, Services
from console.tui.screens.prompts import ConfirmPrompt
from console.tui.settings.bindings import bindings
from console.tui.widgets.column_header import ColumnHeader
from console.tui.widgets.grants_view import COLUMNS, HOST_COLUMNS, GrantsView


class GrantsScreen(ConsoleScreen):
    CONTEXT = "grants"
    BINDINGS: ClassVar[list[BindingType]] = bindings("grants")
    CSS_PATH = "grants.tcss"
    EVERY_HOST = True  # its daemon events come from every host, not only the first

    def __init__(self, services: Services) -> None:
        super().__init__(services, id="grants")
        self.include_inactive = False
        self._live: Timer | None = None

    def compose_body(self) -> ComposeResult:
        multi = self.services.multi_host
        yield ColumnHeader(HOST_COLUMNS if multi else COLUMNS, "grants-list", id="grants-header")
        yield GrantsView(clock=self.services.clock, id="grants-list", host_column=multi)

    def on_mount(self) -> None:
        self.query_one(GrantsView).focus()
        self.reload()

    def on_screen_resume(self) -> None:
        self.reload()

    def reload(self) -> None:
        self._load(self.include_inactive)

    @work(group="grants-load", exclusive=True)
    async def _load(self, include_inactive: bool) -> None:
        if self.services.multi_host:
            await self._load_every_host(include_inactive)
            return
        try:
            result = await self.services.link.request(GrantsList(include_inactive=include_inactive))
        except (RPCError, DaemonUnreachable) as exc:
            self.say(f"grants unavailable: {inert(str(exc))}", "error")
            for view in self.query(GrantsView):
                view.set_rows([])
                view.empty_message = "The grants could not be read (see the status line)."
            return
        rows = result.grants
        # A list removed while the answer was on its way (the app shutting down) shows nothing.
        for view in self.query(GrantsView):
            view.set_rows(rows)
        self.say(f"{len(rows)} {self._what(include_inactive)}")

    async def _load_every_host(self, include_inactive: bool) -> None:
        hosts = list(self.services.links)
        answers = await asyncio.gather(
            *(self.services.links[h].request(GrantsList(include_inactive=include_inactive)) for h in hosts),
            return_exceptions=True,
        )
        merged: list[tuple[float, int, str, GrantObject]] = []
        missing: list[str] = []
        for order, (host, answer) in enumerate(zip(hosts, answers, strict=True)):
            if isinstance(answer, RPCError | DaemonUnreachable):
                missing.append(f"{inert(host)}: {inert(str(answer))[:80]}")
                continue
            if isinstance(answer, BaseException):
                raise answer
            merged += [(g.created_at, order, host, g) for g in answer.grants]
        merged.sort(key=lambda row: (row[0], row[1]))
        for view in self.query(GrantsView):
            view.set_rows([row[3] for row in merged], [row[2] for row in merged])
            if missing and not merged:
                view.empty_message = "The grants could not be read (see the status line)."
        text = f"{len(merged)} {self._what(include_inactive)} on {len(hosts) - len(missing)} hosts"
        if missing:
            self.say(f"{text}; not shown, unreachable — {'; '.join(missing)}", "warning")
        else:
            self.say(text)

    @staticmethod
    def _what(include_inactive: bool) -> str:
        what = "all grants, including revoked, expired and used" if include_inactive else "active grants"
        return f"{what} — r: revoke, i: {'hide' if include_inactive else 'show'} inactive"

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
        view = self.query_one(GrantsView)
        grant, host = view.selected(), view.selected_host()
        if grant is None:
            return
        if grant.revoked_at is not None:
            self.say(f"{grant.id} is already revoked", "warning")
            return
        gid = grant.id
        text = Text(
            f"{gid}: {grant.effect} {grant.scope}" + (f" on host {inert(host)}" if host else "") + "\n\n"
        )
        text.append(inert(grant.summary or grant.fingerprint)[:300], "bold")
        text.append("\n\nIdentical requests will be asked again.")

        def answered(yes: bool | None) -> None:
            if yes:
                self._revoke(gid, host)

        self.app.push_screen(ConfirmPrompt("Revoke this grant?", text, yes="Revoke"), answered)

    @work(group="grants-revoke")
    async def _revoke(self, gid: str, host: str = "") -> None:
        """Revoke ``gid`` on the daemon of ``host`` (the one that holds it)."""
        where = f" on {inert(host)}" if host else ""
        try:
            result = await self.services.link_for(host).request(GrantsRevoke(target=gid))
        except (RPCError, DaemonUnreachable) as exc:
            self.say(f"revoke {gid}{where}: {inert(str(exc))}", "error")
            return
        revoked = ", ".join(result.revoked) or "nothing"
        self.say(f"revoked {revoked}{where}", "ok")
        self.reload()
