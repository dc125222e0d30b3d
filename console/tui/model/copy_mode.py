"""Copy mode's model: a cursor, a selection and a search over a pane's lines.

Kept free of Textual so that every motion is a plain unit test. Lines are the rows of
the scrollback and screen, oldest first (``Screen.text(scrollback=True)``), so a row
here is the row ``Screen.scroll_to_row`` and ``Match`` use. Columns are cells, and a
cluster (a character with the zero-width ones that follow it, a ZWJ sequence, a flag)
is one stop of the cursor, copied whole or not at all: a wide character is copied
once, and joiners are never cut off.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Point = tuple[int, int]  # (row, cell column)
Width = Callable[[str], int]  # cells of one character

_ZWJ = "\u200d"


def unicode_width(ch: str) -> int:
    """Cells of one character where the emulator's own widths are not at hand."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf") or ch == "\ufe0f":
        return 0
    if "\U0001f1e6" <= ch <= "\U0001f1ff":  # regional indicators, as the emulator counts them
        return 2
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


@dataclass(frozen=True, slots=True)
class Cluster:
    col: int
    cells: int
    text: str


def clusters(line: str, width: Width = unicode_width) -> list[Cluster]:
    """The stops of a line: zero-width characters stay with the one before them, and a
    character after a joiner, or a second regional indicator, joins the cluster."""
    out: list[Cluster] = []
    col = 0
    for ch in line:
        w = max(0, width(ch))
        joined = out and (
            w == 0
            or out[-1].text.endswith(_ZWJ)
            or (_regional(ch) and len(out[-1].text) == 1 and _regional(out[-1].text))
        )
        if joined:
            last = out[-1]
            out[-1] = Cluster(last.col, last.cells + w, last.text + ch)
        else:
            out.append(Cluster(col, w, ch))
        col += w
    return out


def _regional(ch: str) -> bool:
    return "\U0001f1e6" <= ch <= "\U0001f1ff"


def extract(lines: Sequence[str], start: Point, end: Point, width: Width = unicode_width) -> str:
    """The text from ``start`` to ``end`` (inclusive cells), as a terminal copies it:
    a cluster is in when any of its cells is, each line without trailing blanks."""
    (r0, c0), (r1, c1) = (start, end) if start <= end else (end, start)
    out: list[str] = []
    for row in range(r0, r1 + 1):
        line = lines[row] if 0 <= row < len(lines) else ""
        first = c0 if row == r0 else 0
        last = c1 if row == r1 else 1 << 30
        picked = [c.text for c in clusters(line, width) if c.col <= last and c.col + max(c.cells, 1) > first]
        out.append("".join(picked).rstrip())
    return "\n".join(out)


def _kind(text: str) -> int:
    """0 blank, 1 word, 2 punctuation: what a word motion stops between."""
    ch = text[0]
    if ch.isspace():
        return 0
    return 1 if ch.isalnum() or ch == "_" or ord(ch) > 0x2E7F else 2


@dataclass(frozen=True, slots=True)
class Hit:
    row: int
    col: int
    cells: int


class CopyModel:
    """The cursor, the selection's anchor and the last search, over ``lines``."""

    def __init__(self, lines: Sequence[str], cursor: Point, width: Width = unicode_width) -> None:
        self.width = width
        self.lines: Sequence[str] = lines or [""]
        self.row, self.col = 0, 0
        self.goal = 0  # the column vertical moves aim for
        self.anchor: Point | None = None
        self.line_mode = False
        self.needle = ""
        self.forward = True
        self._stops: dict[int, list[Cluster]] = {}
        self.move_to(*cursor)

    # ------------------------------------------------------------ lines

    def update(self, lines: Sequence[str]) -> None:
        """New text (output arrived): keep the cursor where it was, within the lines."""
        if lines is self.lines:
            return
        self.lines = lines or [""]
        self._stops.clear()
        self.row = min(self.row, len(self.lines) - 1)
        self.col = self._snap(self.row, self.col)
        if self.anchor is not None:
            self.anchor = (min(self.anchor[0], len(self.lines) - 1), self.anchor[1])

    def stops(self, row: int) -> list[Cluster]:
        found = self._stops.get(row)
        if found is None:
            found = self._stops[row] = clusters(self.lines[row], self.width)
        return found

    def _snap(self, row: int, col: int) -> int:
        """The start of the cluster at ``col``, or of the line's last one past its end."""
        stops = self.stops(row)
        if not stops:
            return 0
        for c in reversed(stops):
            if c.col <= col:
                return c.col
        return stops[0].col

    @property
    def cursor(self) -> Point:
        return self.row, self.col

    def cursor_cells(self) -> int:
        for c in self.stops(self.row):
            if c.col == self.col:
                return max(1, c.cells)
        return 1

    # ------------------------------------------------------------ motions

    def move_to(self, row: int, col: int, *, keep_goal: bool = False) -> None:
        self.row = min(max(0, row), len(self.lines) - 1)
        self.col = self._snap(self.row, max(0, col))
        if not keep_goal:
            self.goal = self.col

    def left(self) -> None:
        prev = [c.col for c in self.stops(self.row) if c.col < self.col]
        self.move_to(self.row, prev[-1] if prev else self.col)

    def right(self) -> None:
        nxt = [c.col for c in self.stops(self.row) if c.col > self.col]
        self.move_to(self.row, nxt[0] if nxt else self.col)

    def vertical(self, delta: int) -> None:
        self.move_to(self.row + delta, self.goal, keep_goal=True)

    def line_start(self) -> None:
        self.move_to(self.row, 0)

    def line_end(self) -> None:
        self.move_to(self.row, 1 << 30)

    def first_nonblank(self) -> None:
        col = next((c.col for c in self.stops(self.row) if not c.text.isspace()), 0)
        self.move_to(self.row, col)

    def top(self) -> None:
        self.move_to(0, 0)

    def bottom(self) -> None:
        self.move_to(len(self.lines) - 1, 0)

    def _cells_from(self, row: int, col: int, step: int) -> list[tuple[int, int, int]]:
        """(row, col, kind) of every stop from the cursor on, a line end counted as a blank."""
        out: list[tuple[int, int, int]] = []
        rows = range(row, len(self.lines)) if step > 0 else range(row, -1, -1)
        for r in rows:
            here = [(r, c.col, _kind(c.text)) for c in self.stops(r)] + [(r, 1 << 30, 0)]
            if step < 0:
                here.reverse()
            for item in here:
                if r == row and (item[1] <= col if step > 0 else item[1] >= col):
                    continue
                out.append(item)
        return out

    def word_next(self) -> None:
        """vi's w: the start of the next word, across lines."""
        here = next((_kind(c.text) for c in self.stops(self.row) if c.col == self.col), 0)
        prev = here
        for r, c, kind in self._cells_from(self.row, self.col, 1):
            if kind and (kind != prev):
                self.move_to(r, c)
                return
            prev = kind
        self.move_to(len(self.lines) - 1, 1 << 30)

    def word_back(self) -> None:
        """vi's b: the start of this word, or of the one before."""
        items = self._cells_from(self.row, self.col, -1)
        for i, (r, c, kind) in enumerate(items):
            if not kind or c == 1 << 30:
                continue
            before = items[i + 1] if i + 1 < len(items) else None
            if before is None or before[2] != kind or before[0] != r:
                self.move_to(r, c)
                return
        self.top()

    def word_end(self) -> None:
        """vi's e (emacs M-f): the end of this word, or of the next one."""
        items = self._cells_from(self.row, self.col, 1)
        for i, (r, c, kind) in enumerate(items):
            if not kind or c == 1 << 30:
                continue
            after = items[i + 1] if i + 1 < len(items) else None
            if after is None or after[2] != kind or after[0] != r:
                self.move_to(r, c)
                return

    # ------------------------------------------------------------ search

    def hits(self, needle: str) -> list[Hit]:
        """Every occurrence, oldest first, not case-sensitive (as the pane's search)."""
        if not needle:
            return []
        pattern = re.compile(re.escape(needle), re.IGNORECASE)
        out: list[Hit] = []
        for row, line in enumerate(self.lines):
            for m in pattern.finditer(line):
                col = sum(self.width(ch) for ch in line[: m.start()])
                cells = sum(self.width(ch) for ch in m.group())
                out.append(Hit(row, self._snap(row, col), max(1, cells)))
        return out

    def search(self, needle: str | None = None, *, forward: bool | None = None) -> tuple[Hit | None, bool]:
        """Go to the next hit after (or before) the cursor, wrapping around; the hit and
        whether it wrapped. Without arguments: again, as the last search went."""
        if needle is not None:
            self.needle = needle
        if forward is not None:
            self.forward = forward
        hits = self.hits(self.needle)
        if not hits:
            return None, False
        here = self.cursor
        if self.forward:
            after = [h for h in hits if (h.row, h.col) > here]
            hit, wrapped = (after[0], False) if after else (hits[0], True)
        else:
            before = [h for h in hits if (h.row, h.col) < here]
            hit, wrapped = (before[-1], False) if before else (hits[-1], True)
        self.move_to(hit.row, hit.col)
        return hit, wrapped

    # ------------------------------------------------------------ selection

    def start_selection(self, *, lines: bool = False) -> None:
        """Start selecting here; the same key again stops (as in vi's visual mode)."""
        if self.anchor is not None and self.line_mode == lines:
            self.anchor = None
            return
        if self.anchor is None:
            self.anchor = self.cursor
        self.line_mode = lines

    def selection(self) -> tuple[Point, Point] | None:
        """The selected cells, first to last (whole lines in line mode)."""
        if self.anchor is None:
            return None
        a, b = sorted((self.anchor, self.cursor))
        if self.line_mode:
            return (a[0], 0), (b[0], 1 << 30)
        cells = next((c.cells for c in self.stops(b[0]) if c.col == b[1]), 1)
        return a, (b[0], b[1] + max(1, cells) - 1)

    def selected(self) -> str:
        """What a yank copies: the selection, else the cursor's line."""
        chosen = self.selection() or ((self.row, 0), (self.row, 1 << 30))
        return extract(self.lines, *chosen, width=self.width)
