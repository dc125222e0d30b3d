"""What every view of the console has around its own body: the chrome.

A view (the queue, history, grants, sessions and watch modes, and the history entry
and record it opens) is a :class:`ConsoleScreen`: the status pills on top, the view's
own widgets from :meth:`ConsoleScreen.compose_body`, then the status line
(:meth:`ConsoleScreen.say`) and the footer with the keys in force. Dialogs and the
help are ``ModalScreen``s over a view, without chrome of their own.

The chrome's look is in ``console/tui/console.tcss``; a view's own layout is in the
``.tcss`` file beside its module, named by its ``CSS_PATH``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.screen import Screen

from console.tui.widgets.footer_bar import FooterBar
from console.tui.widgets.status_line import StatusLine
from console.tui.widgets.status_pills import StatusPills

if TYPE_CHECKING:
    from console.tui.app import ConsoleApp


class ConsoleScreen(Screen[None]):
    """A view: status pills, the body, the status line, the footer."""

    # The action-table context whose keys are in force here (settings/actions.py CONTEXTS).
    CONTEXT: ClassVar[str] = "app"
    # A maximized widget (a zoomed pane) keeps the chrome around it.
    ALLOW_IN_MAXIMIZED_VIEW: ClassVar[str] = "StatusPills, StatusLine, FooterBar"

    app: ConsoleApp

    def compose(self) -> ComposeResult:
        yield StatusPills(id="pills")
        yield from self.compose_body()
        yield StatusLine(id="status")
        yield FooterBar()

    def compose_body(self) -> ComposeResult:
        """The view's own widgets, between the pills and the status line."""
        yield from ()

    def say(self, message: str, severity: str = "info") -> None:
        """Tell the operator on the status line; ``message`` must already be inert."""
        self.query_one("#status", StatusLine).say(message, severity)
