"""What a pane is apart from its widget: the widget is rebuilt whenever the layout
changes (Textual cannot move a widget to a new parent), the state lives on in the
split tree (:mod:`console.tui.panes.pane_area`) and the saved layout."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from textual.worker import Worker

from console.terminal import Match
from console.tui.model.copy_mode import CopyModel
from console.tui.panes.pane_link import PaneLink

_ids = itertools.count(1)

# (absolute row, column) — rows count from the oldest scrollback row, as Screen.search does.
Point = tuple[int, int]


@dataclass
class PaneState:
    """What a pane is, apart from its widget (which is rebuilt when the layout changes)."""

    link: PaneLink
    pane_id: int = field(default_factory=lambda: next(_ids))
    scrolling: bool = False
    needle: str = ""
    matches: list[Match] = field(default_factory=list)
    match_index: int = -1
    selection: tuple[Point, Point] | None = None
    copy: CopyModel | None = None  # in copy mode (prefix [): its cursor and selection
    task: Worker[None] | None = None

    @property
    def session_id(self) -> str:
        return self.link.session_id

    def ordered_selection(self) -> tuple[Point, Point] | None:
        if self.selection is None:
            return None
        a, b = self.selection
        return (a, b) if a <= b else (b, a)
