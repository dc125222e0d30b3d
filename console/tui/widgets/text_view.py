"""Read-only rich text drawn with the Line API: wrapped once per change, not once per frame.

The request detail and the history entry are long, change often (every new selection)
and may hold 100,000 characters once expanded. Wrapping happens when the text or the
width changes; each frame then only looks up the visible lines. Sections keep their
first line so a view can jump to one (the outcome of a history entry).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from console.tui.settings.roles import DETAIL_LOOKS
from console.tui.widgets.line_list import set_virtual_size


class TextView(ScrollView, can_focus=True):
    # A reusable widget's own defaults: a padded surface that scrolls vertically only.
    DEFAULT_CSS = """
    TextView { background: $surface; padding: 0 1; overflow-x: hidden; overflow-y: auto; scrollbar-size-vertical: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._sections: list[tuple[str, Text]] = []
        self._lines: list[Strip] = []
        self._anchors: dict[str, int] = {}
        self._wrapped_width = -1
        # The wrapped lines of each section as last drawn: a new selection's detail is set
        # two or three times in a row (the request, then its previous decisions, then the
        # session's changes) and most sections come back unchanged.
        self._wrapped: dict[tuple[int, str], tuple[Hashable, list[Strip]]] = {}

    def set_sections(self, sections: list[tuple[str, Text]]) -> None:
        """Replace the content: named pieces of text, shown one after another."""
        self._sections = sections
        self._wrapped_width = -1
        self._wrap()
        self.refresh()

    def set_text(self, text: Text) -> None:
        self.set_sections([("", text)])

    @property
    def plain(self) -> str:
        return "\n".join(text.plain for _, text in self._sections)

    def anchor_line(self, name: str) -> int | None:
        return self._anchors.get(name)

    def _wrap(self) -> None:
        width = self.scrollable_content_region.width
        if width <= 0 or width == self._wrapped_width:
            return
        console = self.app.console
        options = console.options.update(width=width, height=None, no_wrap=False, overflow="fold")
        lines: list[Strip] = []
        anchors: dict[str, int] = {}
        base = self.rich_style
        wrapped: dict[tuple[int, str], tuple[Hashable, list[Strip]]] = {}
        for i, (name, text) in enumerate(self._sections):
            if name:
                anchors[name] = len(lines)
            drawn = _drawn(text, width, base)
            cached = self._wrapped.get((i, name))
            if cached is not None and cached[0] == drawn:
                section = cached[1]
            else:
                section = [
                    Strip(segments) for segments in console.render_lines(text, options, style=base, pad=False)
                ]
            wrapped[(i, name)] = (drawn, section)
            lines.extend(section)
        self._wrapped = wrapped
        self._lines = lines
        self._anchors = anchors
        self._wrapped_width = width
        set_virtual_size(self, Size(width, len(lines)))

    def on_resize(self, event: events.Resize) -> None:
        self._wrap()

    def on_mount(self) -> None:
        self._wrap()
        self.watch(self.app, "theme", lambda _: self.rewrap(), init=False)

    def rewrap(self) -> None:
        self._wrapped_width = -1
        self._wrapped.clear()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        self._wrap()
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if index >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        return self._lines[index].adjust_cell_length(width, self.rich_style)

    def scroll_to_anchor(self, name: str) -> None:
        line = self._anchors.get(name)
        if line is not None:
            self.scroll_to(y=line, animate=False, immediate=True)


class DetailView(TextView):
    """A text view of render/'s roles (``render.present.ROLES``) in their looks.

    The request detail, the history entry, the watch detail and a history record all
    draw the same roles; the looks are role text (``settings/roles.py``, styled in
    ``console.tcss``), so the four share one look. A subclass draws its text in
    :meth:`refresh_view` from :meth:`styles_map`; a theme change draws it again.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = set(DETAIL_LOOKS.values())

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._styles: dict[str, Style] | None = None

    def on_mount(self) -> None:
        # Textual runs TextView.on_mount after this one (every class's handler, in MRO
        # order): no super() call, or the view would wrap and watch the theme twice.
        self.watch(self.app, "theme", lambda _: self._restyle(), init=False)

    def _restyle(self) -> None:
        self._styles = None
        self.refresh_view()

    def styles_map(self) -> dict[str, Style]:
        """Each role's style in the current theme."""
        if self._styles is None:
            self._styles = {role: self.get_component_rich_style(look) for role, look in DETAIL_LOOKS.items()}
        return self._styles

    def refresh_view(self) -> None:
        """Draw the text again (a subclass says how)."""


def _drawn(text: Text, width: int, base: Style) -> Hashable:
    """All that a section's wrapped lines depend on, copied (a caller may change ``text`` later)."""
    return (
        text.plain,
        tuple(text.spans),
        text.style,
        (text.justify, text.overflow, text.no_wrap, text.end, text.tab_size),
        width,
        base,
    )
