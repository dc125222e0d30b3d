"""What every view of the console has around its own body: the chrome.

A view (the queue, history, grants, sessions and watch modes, and the history entry
and record it opens) is a :class:`ConsoleScreen`: the status pills on top, the view's
own widgets from :meth:`ConsoleScreen.compose_body`, then the status line
(:meth:`ConsoleScreen.say`) and the footer with the keys in force. Dialogs and the
help are ``ModalScreen``s over a view, without chrome of their own.

The chrome's look is in ``console/tui/console.tcss``; a view's own layout is in the
``.tcss`` file beside its module, named by its ``CSS_PATH``.

What a view works with — the daemon links, the pending queue, the config, the clocks,
the header pills, the watcher's side — comes in its constructor as :class:`Services`,
made once by the app, so a view states what it needs and can be built around other
parts than the app's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.screen import Screen

from console.tui.widgets.footer_bar import FooterBar
from console.tui.widgets.status_line import StatusLine
from console.tui.widgets.status_pills import StatusPills

if TYPE_CHECKING:
    from console.tui.app import ConsoleApp
    from console.tui.link import DaemonLink
    from console.tui.model.pending import PendingQueue
    from console.tui.settings.config import Config
    from console.tui.watch_monitor import WatchMonitor
    from console.tui.widgets.status_pills import Pills


@dataclass(frozen=True)
class Services:
    """The parts of the console a view works with, the same for every view."""

    config: Config
    # One link per host, by the host's name in the queue ("" when there is one).
    links: Mapping[str, DaemonLink]
    # The first host's link: what the views beside the queue show.
    link: DaemonLink
    pending: PendingQueue
    pills: Pills
    watch_monitor: WatchMonitor
    clock: Callable[[], float]  # wall time, for ages and expiries
    monotonic: Callable[[], float]  # for durations

    @property
    def multi_host(self) -> bool:
        return len(self.links) > 1

    def link_for(self, host: str) -> DaemonLink:
        """The link of ``host`` (as an entry carries it)."""
        return self.links.get(host, self.link)


class ConsoleScreen(Screen[None]):
    """A view: status pills, the body, the status line, the footer."""

    # The action-table context whose keys are in force here (settings/actions.py CONTEXTS).
    CONTEXT: ClassVar[str] = "app"
    # A maximized widget (a zoomed pane) keeps the chrome around it.
    ALLOW_IN_MAXIMIZED_VIEW: ClassVar[str] = "StatusPills, StatusLine, FooterBar"

    app: ConsoleApp

    def __init__(self, services: Services, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.services = services

    def compose(self) -> ComposeResult:
        yield StatusPills(id="pills")
        yield from self.compose_body()
        yield StatusLine(id="status")
        yield FooterBar()

    def compose_body(self) -> ComposeResult:
        """The view's own widgets, between the pills and the status line."""
        yield from ()

    def say(self, message: str, severity: str = "info") -> None:
        """Tell the operator on the status line; ``message`` must already be inert. An
        answer that lands while the app shuts down finds no line, and says nothing."""
        for line in self.query("#status").results(StatusLine):
            line.say(message, severity)
