"""Turn a past decision into a standing grant, after asking.

The history list and the entry it opens both offer it, so it lives apart from either
screen and neither has to import the other.
"""

from __future__ import annotations

from rich.text import Text

from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.policy import Effect, GrantScope
from console.protocol.records import HistoryRow
from console.protocol.requests import GrantsAdd
from console.tui.screens.base import ConsoleScreen
from console.tui.screens.prompts import ConfirmPrompt


def grant_from_record(screen: ConsoleScreen, row: HistoryRow) -> None:
    """Ask, then add a standing allow grant for the fingerprint of a past decision."""
    link = screen.services.link
    fingerprint = row.fingerprint
    if len(fingerprint) != 64:
        screen.notify("this row has no fingerprint to grant", severity="warning", markup=False)
        return
    command = inert(row.command)
    shown = command if len(command) <= 300 else command[:299] + "…"
    text = Text("Every request with this exact fingerprint will be allowed without asking:\n\n")
    text.append(shown, "bold")
    text.append(f"\n\nfingerprint {fingerprint[:16]}…   tool {inert(row.tool)[:60]}")

    async def add() -> None:
        try:
            result = await link.request(
                GrantsAdd(
                    fingerprint=fingerprint,
                    scope=GrantScope.ALWAYS,
                    effect=Effect.ALLOW,
                    tool=row.tool[:128],
                    summary=row.command[:4096],
                    note=f"from history {row.request_id}",
                )
            )
        except (RPCError, DaemonUnreachable) as exc:
            screen.notify(f"grant not added: {inert(str(exc))}", severity="error", markup=False)
            return
        added = result.grant
        screen.notify(f"grant {added.id} added: always allow {shown[:60]}", markup=False)

    def answered(yes: bool | None) -> None:
        if yes:
            screen.run_worker(add(), group="grant-add")

    screen.app.push_screen(ConfirmPrompt("Turn into a standing grant?", text, yes="Grant"), answered)
