"""The console's top-level views, in one table.

Each entry becomes a Textual mode. Adding a view (the sessions with terminal
panes, the watch panel) is one :func:`register` call plus an ``ActionSpec`` in
:mod:`console.tui.settings.actions` for the key that shows it (``show('sessions')``).

A screen that wants daemon events lists their message classes in ``DAEMON_EVENTS``
(``(DaemonLink.Decided, DaemonLink.OutcomeFinished)``) and handles each with an
``@on(DaemonLink.Decided)`` method: while the screen runs, the app posts it a copy of
every such message after its own handlers (docs/architecture.md, "From the socket to
the screen").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.screen import Screen

from console.tui.screens.base import Services
from console.tui.screens.grants import GrantsScreen
from console.tui.screens.history import HistoryScreen
from console.tui.screens.queue import QueueScreen
from console.tui.screens.sessions import SessionsScreen
from console.tui.screens.watch import WatchScreen


@dataclass(frozen=True)
class View:
    name: str
    title: str
    factory: Callable[[Services], Screen[None]]


VIEWS: dict[str, View] = {}


def register(name: str, title: str, factory: Callable[[Services], Screen[None]]) -> None:
    VIEWS[name] = View(name, title, factory)


register("queue", "Queue", QueueScreen)
register("history", "History", HistoryScreen)
register("grants", "Grants", GrantsScreen)
register("sessions", "Sessions", SessionsScreen)
register("watch", "Watch", WatchScreen)


def views() -> dict[str, View]:
    return VIEWS
