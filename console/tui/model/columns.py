"""How a table's columns share a narrow screen: the deciding column keeps its room.

Each list (queue, history, grants, sessions) has one column that says what the row is
about — the command, what a grant covers — and several that qualify it. At 80 columns
the qualifiers at their full width would take every cell, so they give way first, in
the order each table names: shrunk to their minimum, and left out whole when even that
does not leave the deciding column its share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Column:
    """``width``: preferred cells, its separator included; it shrinks down to ``minimum``
    (0: it is left out whole rather than cut). ``gives_way``: lower gives way earlier.
    The deciding column has ``flex`` and takes what the others leave, at least ``minimum``
    or ``share`` of the line."""

    title: str
    width: int = 0
    minimum: int = 0
    gives_way: int = 0
    flex: bool = False
    share: float = 0.0
    right: bool = False  # aligned right (numbers)
    whole: bool = False  # its content has two forms (a time with or without its date): no width between


def fit(columns: Sequence[Column], total: int) -> tuple[int, ...]:
    """Each column's width (0: left out) on a line of ``total`` cells."""
    widths = [0 if c.flex else c.width for c in columns]
    flex = next((i for i, c in enumerate(columns) if c.flex), None)
    if flex is None:
        return tuple(widths)
    deciding = columns[flex]
    need = max(deciding.minimum, int(total * deciding.share))
    order = sorted((i for i, c in enumerate(columns) if not c.flex), key=lambda i: columns[i].gives_way)
    for i in order:
        short = need - (total - sum(widths))
        if short <= 0:
            break
        column = columns[i]
        if column.minimum == 0 or column.whole:
            widths[i] = column.minimum
        else:
            widths[i] = max(column.minimum, widths[i] - short)
    widths[flex] = max(0, total - sum(widths))
    return tuple(widths)


def header(columns: Sequence[Column], widths: Sequence[int]) -> str:
    """The titles laid out in ``widths`` (a left-out column has no title)."""
    out = []
    for c, w in zip(columns, widths, strict=True):
        if w <= 0:
            continue
        title = c.title[: max(0, w - 1)]
        out.append(title.rjust(w - 1) + " " if c.right else title.ljust(w))
    return "".join(out).rstrip()


def cell(text: str, width: int, *, right: bool = False) -> str:
    """``text`` in a cell of ``width`` (its separator the last cell), cut to fit."""
    if width <= 0:
        return ""
    text = text[: width - 1]
    return (text.rjust(width - 1) if right else text.ljust(width - 1)) + " "
