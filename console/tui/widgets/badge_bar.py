"""Header badges: small counters (pending, escalations, connection) anyone can add to.

The badges themselves live in one :class:`Badges` table on the app; every screen's bar
draws that table. ``app.badges.set("watch", "3 protected changes", "error")`` shows a
badge on every screen, ``set(key, "")`` hides it. Issue 7's watch panel and issue 6's
sessions view add theirs here rather than building their own header. Clicking a badge
posts ``BadgeBar.Clicked(key)``.
"""

from __future__ import annotations

import weakref
from typing import ClassVar

from rich.text import Text
from textual.message import Message
from textual.widget import Widget

VARIANTS = ("default", "ok", "warning", "error", "muted")


class Badges:
    """Ordered key → (label, variant); ``changed`` is called after every change."""

    def __init__(self) -> None:
        self.items: dict[str, tuple[str, str]] = {}
        self.shorts: dict[str, str] = {}
        self.bars: weakref.WeakSet[BadgeBar] = weakref.WeakSet()

    def set(self, key: str, label: str, variant: str = "default", short: str = "") -> None:
        """``short``: what the badge shrinks to when the bar is narrow (default: its first word)."""
        self.shorts[key] = short or label.split(" ")[0]
        if variant not in VARIANTS:
            raise ValueError(f"badge variant must be one of {VARIANTS}")
        current = self.items.get(key)
        if not label:
            if current is None:
                return
            del self.items[key]
        elif current == (label, variant):
            return
        else:
            self.items[key] = (label, variant)
        for bar in list(self.bars):
            bar.refresh()

    def get(self, key: str) -> str:
        return self.items.get(key, ("", ""))[0]


class BadgeBar(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {f"badge-bar--{v}" for v in VARIANTS}
    DEFAULT_CSS = """
    BadgeBar { height: 1; width: 1fr; background: $panel; color: $foreground; }
    BadgeBar > .badge-bar--default { background: $primary 30%; }
    BadgeBar > .badge-bar--ok { background: $success 35%; }
    BadgeBar > .badge-bar--warning { background: $warning; color: $background; text-style: bold; }
    BadgeBar > .badge-bar--error { background: $error; color: $background; text-style: bold; }
    BadgeBar > .badge-bar--muted { color: $text-muted; }
    """

    class Clicked(Message):
        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, title: str = "agent-console", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.brand = title
        self._spans: list[tuple[int, int, str]] = []

    def on_mount(self) -> None:
        self.badges.bars.add(self)

    @property
    def badges(self) -> Badges:
        table = getattr(self.app, "badges", None)
        return table if isinstance(table, Badges) else Badges()

    def render(self) -> Text:
        shown = self._fitted(self.size.width or 10**6)
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        text.append(f" {shown[0]} ", "bold")
        self._spans = []
        for key, label, variant in shown[1]:
            text.append(" ")
            start = text.cell_len
            text.append(f" {label} ", self.get_component_rich_style(f"badge-bar--{variant}"))
            self._spans.append((start, text.cell_len, key))
        return text

    def _fitted(self, width: int) -> tuple[str, list[tuple[str, str, str]]]:
        """Degrade by priority until the bar fits: the brand shrinks, then the quiet badges
        shrink to their short form, then the loud ones; then quiet ones go. Errors and
        warnings (escalations, a tripwire) are never dropped."""
        table = self.badges
        items = [[key, label, variant] for key, (label, variant) in table.items.items()]
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
                        item[1] = table.shorts.get(item[0]) or item[1]
            else:
                items = [item for item in items if item[2] not in variants]
        return brand, [(k, label, v) for k, label, v in items]

    def on_click(self, event) -> None:  # type: ignore[no-untyped-def]
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.post_message(self.Clicked(key))
