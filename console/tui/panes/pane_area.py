"""Panes side by side and stacked: the split tree and the widgets built from it.

The layout is a small tree of :class:`Split` nodes over :class:`PaneState` leaves,
kept apart from the widgets: Textual cannot move a widget to a new parent, so a
split rebuilds the containers from the tree, and each new
:class:`~console.tui.panes.terminal_pane.TerminalPane` repaints from its state (the
emulated screen lives in the state's link, not in the widget).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Static

from console.tui.panes.state import PaneState
from console.tui.panes.terminal_pane import TerminalPane

if TYPE_CHECKING:
    from console.tui.app import ConsoleApp

RIGHT, DOWN = "right", "down"  # side by side, stacked


@dataclass
class Split:
    direction: str
    children: list[Node] = field(default_factory=list)


Node = PaneState | Split


class Layout:
    """The split tree. Splitting in the direction of the parent adds a sibling;
    otherwise the pane becomes a split of two. A split left with one child collapses."""

    def __init__(self) -> None:
        self.root: Node | None = None

    def panes(self) -> list[PaneState]:
        out: list[PaneState] = []

        def walk(node: Node | None) -> None:
            if isinstance(node, Split):
                for child in node.children:
                    walk(child)
            elif node is not None:
                out.append(node)

        walk(self.root)
        return out

    def _parent(self, target: Node, node: Node | None = None) -> Split | None:
        node = self.root if node is None else node
        if isinstance(node, Split):
            for child in node.children:
                if child is target:
                    return node
                found = self._parent(target, child)
                if found is not None:
                    return found
        return None

    def add(self, state: PaneState, beside: PaneState | None, direction: str) -> None:
        if direction not in (RIGHT, DOWN):
            raise ValueError(f"direction must be {RIGHT!r} or {DOWN!r}")
        if self.root is None:
            self.root = state
            return
        if beside is None or (beside is not self.root and self._parent(beside) is None):
            beside = self.panes()[-1]
        parent = self._parent(beside)
        if parent is not None and parent.direction == direction:
            parent.children.insert(parent.children.index(beside) + 1, state)
            return
        split = Split(direction, [beside, state])
        if parent is None:
            self.root = split
        else:
            parent.children[parent.children.index(beside)] = split

    def remove(self, state: PaneState) -> None:
        if self.root is state:
            self.root = None
            return
        parent = self._parent(state)
        if parent is None:
            return
        parent.children.remove(state)
        if len(parent.children) == 1:
            only = parent.children[0]
            grand = self._parent(parent)
            if grand is None:
                self.root = only
            else:
                grand.children[grand.children.index(parent)] = only
                if isinstance(only, Split) and only.direction == grand.direction:
                    at = grand.children.index(only)
                    grand.children[at : at + 1] = only.children


class PaneTitle(Static):
    DEFAULT_CSS = """
    PaneTitle { height: 1; background: $panel; color: $text-muted; }
    """


class PaneFrame(Vertical):
    """A pane with its title bar: session, program title, state, scroll position."""

    ALLOW_MAXIMIZE = True  # zoom maximizes the frame, title bar included

    DEFAULT_CSS = """
    PaneFrame { width: 1fr; height: 1fr; }
    PaneFrame:focus-within > PaneTitle { background: $primary 55%; color: $text; }
    PaneFrame.-armed > PaneTitle { background: $accent; color: $background; }
    """

    app: ConsoleApp

    def __init__(self, state: PaneState) -> None:
        super().__init__(id=f"pane-frame-{state.pane_id}")
        self.state = state

    def compose(self) -> ComposeResult:
        yield PaneTitle(Text(""), id=f"pane-title-{self.state.pane_id}")
        yield TerminalPane(self.state, id=f"pane-{self.state.pane_id}")

    @property
    def pane(self) -> TerminalPane:
        return self.query_one(TerminalPane)

    def on_mount(self) -> None:
        self.update_title()

    def on_terminal_pane_changed(self, message: TerminalPane.Changed) -> None:
        message.stop()
        self.update_title()

    def update_title(self) -> None:
        pane = self.query_one(TerminalPane)
        parts = pane.title_parts()
        self.set_class(bool(parts["armed"]), "-armed")
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append(f" {parts['id']} ", "bold")
        if parts.get("paused"):
            # Before the title, which a long command line would otherwise push off the bar.
            text.append(" PAUSED by tripwire: input refused ", "bold reverse")
            text.append(" ")
        if parts["title"]:
            text.append(parts["title"])
        if parts["terminal_title"] and parts["terminal_title"] != parts["title"]:
            text.append(f" — {parts['terminal_title']}")
        flags = []
        if parts["armed"]:
            flags.append("PREFIX")
        if parts["read_only"]:
            flags.append("read-only")
        if parts["state"] != "live":
            flags.append(parts["message"] or parts["state"])
        elif parts["message"]:
            flags.append(parts["message"])
        if parts.get("copy"):
            flags.append(parts["copy"])
        elif parts["scrolling"] or parts["scrolled"]:
            flags.append(f"scrolled back {parts['scrolled']} lines")
        if parts["match"] is not None:
            index, total = parts["match"]
            flags.append(f"match {index}/{total}" if total else "no match")
        if parts["size"] is not None:
            flags.append(f"{parts['size'][0]}×{parts['size'][1]}")
        if flags:
            # The flags say what the keys do now (busy, read-only, prefix): a long
            # command line is cut before they are.
            tail = "  [" + "] [".join(flags) + "]"
            room = self.size.width - len(tail)
            if self.size.width and text.cell_len > room:
                text.truncate(max(room, len(parts["id"]) + 3))  # ends in "…"
            text.append(tail)
        self.query_one(PaneTitle).update(text)


class PaneArea(Vertical):
    """Holds the panes; :meth:`rebuild` after the layout changed."""

    DEFAULT_CSS = """
    PaneArea { height: 1fr; }
    PaneArea .split-right { width: 1fr; height: 1fr; }
    PaneArea .split-down { width: 1fr; height: 1fr; }
    PaneArea .split-right > * { border-left: vkey $panel-lighten-2; }
    PaneArea .split-right > *:first-child { border-left: none; }
    PaneArea #panes-empty { color: $text-muted; padding: 1 2; }
    """

    def __init__(self, layout: Layout, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.layout_tree = layout

    def compose(self) -> ComposeResult:
        root = self.layout_tree.root
        if root is None:
            yield Static(
                Text(
                    "No pane open. enter: attach the selected session · v: watch it read-only · "
                    "n: start a new one"
                ),
                id="panes-empty",
            )
            return
        yield self._build(root)

    def _build(self, node: Node) -> Widget:
        if isinstance(node, Split):
            children = [self._build(child) for child in node.children]
            box = Horizontal if node.direction == RIGHT else Vertical
            return box(*children, classes=f"split split-{node.direction}")
        return PaneFrame(node)

    async def rebuild(self) -> None:
        await self.recompose()

    def frames(self) -> list[PaneFrame]:
        return list(self.query(PaneFrame))

    def frame_for(self, state: PaneState) -> PaneFrame | None:
        for frame in self.query(PaneFrame):
            if frame.state is state:
                return frame
        return None
