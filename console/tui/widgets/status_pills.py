"""The header's status pills: small counters (pending, escalations, connection) anyone can add to.

What the header shows is one immutable :data:`PillTable` (key → :class:`Pill`, in the
order the pills were first shown) held by a reactive on the app, ``app.pill_table``.
Every view's :class:`StatusPills` bar watches that reactive and repaints when it is
reassigned, which :class:`Pills` (``app.pills``) does only when a pill really changed:
``app.pills.set("watch", "3 protected changes", "error")`` shows a pill on every screen,
``set(key, "")`` hides it, and setting what is already shown changes nothing. A view
mounted later draws the table as it is then. The watch panel and the sessions view add
theirs here rather than building their own header. Clicking a pill posts
``StatusPills.Clicked(key)``.

(A request's capability badges — NET, PROTECTED… — are another thing: see
:mod:`console.tui.model.badges`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, NamedTuple, Protocol

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from console.tui.settings.roles import role_class

VARIANTS = ("default", "ok", "warning", "error", "muted")


class Pill(NamedTuple):
    label: str
    variant: str
    short: str  # what the pill shrinks to when the bar is narrow


PillTable = Mapping[str, Pill]
"""What the header shows: never mutated, replaced by a new table on each change."""

NO_PILLS: PillTable = MappingProxyType({})


def with_pill(table: PillTable, key: str, label: str, variant: str, short: str = "") -> PillTable:
    """``table`` with ``key`` shown as ``label`` (hidden when ``label`` is empty): a new
    table, or ``table`` itself when nothing changes. A shown pill keeps its place."""
    if variant not in VARIANTS:
        raise ValueError(f"pill variant must be one of {VARIANTS}")
    if not label:
        if key not in table:
            return table
        return MappingProxyType({k: p for k, p in table.items() if k != key})
    pill = Pill(label, variant, short or label.split(" ")[0])
    if table.get(key) == pill:
        return table
    return MappingProxyType({**table, key: pill})


class PillHost(Protocol):
    """What holds the table (the app): a reactive attribute the bars watch."""

    pill_table: PillTable


class Pills:
    """The one way to change the header: ``set`` reassigns the host's ``pill_table``
    only when the pill changed, so the reactive fires (and the bars repaint) only then."""

    def __init__(self, host: PillHost) -> None:
        self._host = host

    def set(self, key: str, label: str, variant: str = "default", short: str = "") -> None:
        """``short``: what the pill shrinks to when the bar is narrow (default: its first word)."""
        table = self._host.pill_table
        changed = with_pill(table, key, label, variant, short)
        if changed is not table:
            self._host.pill_table = changed

    def get(self, key: str) -> str:
        """The label shown for ``key``, or ``""``."""
        pill = self._host.pill_table.get(key)
        return pill.label if pill is not None else ""

    @property
    def items(self) -> Mapping[str, tuple[str, str]]:
        """Each shown pill's (label, variant), in the header's order."""
        return {key: (pill.label, pill.variant) for key, pill in self._host.pill_table.items()}


def _variant_class(variant: str) -> str:
    """A pill's look: its own background for the loud ones, role text for a muted one."""
    return role_class("muted") if variant == "muted" else f"status-pills--{variant}"


class StatusPills(Widget):
    """The header bar: the brand, then the app's pills (looks in console/tui/console.tcss)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *(f"status-pills--{v}" for v in VARIANTS if v != "muted"),
        role_class("muted"),
    }

    class Clicked(Message):
        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, title: str = "agent-console", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.brand = title
        self._spans: list[tuple[int, int, str]] = []

    def on_mount(self) -> None:
        # The app's reactive: reassigned on a real change only, drawn by render() as it is.
        self.watch(self.app, "pill_table", self._table_changed, init=False)

    def _table_changed(self) -> None:
        self.refresh()

    @property
    def table(self) -> PillTable:
        """What this bar draws: the app's pills (none under an app without them)."""
        table = getattr(self.app, "pill_table", NO_PILLS)
        return table if isinstance(table, Mapping) else NO_PILLS

    def render(self) -> Text:
        shown = self._fitted(self.size.width or 10**6)
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append(f" {shown[0]} ", "bold")
        self._spans = []
        for key, label, variant in shown[1]:
            text.append(" ")
            start = text.cell_len
            text.append(f" {label} ", self.get_component_rich_style(_variant_class(variant)))
            self._spans.append((start, text.cell_len, key))
        return text

    def _fitted(self, width: int) -> tuple[str, list[tuple[str, str, str]]]:
        """Degrade by priority until the bar fits: the brand shrinks, then the quiet pills
        shrink to their short form, then the loud ones; then quiet ones go. Errors and
        warnings (escalations, a tripwire) are never dropped."""
        table = self.table
        items = [[key, pill.label, pill.variant] for key, pill in table.items()]
        brand = self.brand

        def need() -> int:
            return len(brand) + 2 + sum(len(label) + 3 for _, label, _ in items)

        quiet = ("muted", "ok", "default")
        steps: list[tuple[str, tuple[str, ...]]] = [
            ("brand", ()),
            ("shrink", quiet),
            ("shrink", ("warning", "error")),
            ("drop", ("muted",)),
            ("drop", ("ok", "default")),
        ]
        for step, variants in steps:
            if need() <= width:
                break
            if step == "brand":
                brand = "ac"
            elif step == "shrink":
                for item in items:
                    if item[2] in variants:
                        item[1] = table[item[0]].short or item[1]
            else:
                items = [item for item in items if item[2] not in variants]
        return brand, [(k, label, v) for k, label, v in items]

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.post_message(self.Clicked(key))
