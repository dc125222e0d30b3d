"""Row decoding for painting.

`RowRenderer` reads rows of narrow codepoint cells through a fast path (big-integer
lane operations and one UTF-32 decode instead of a Python loop over the cells). These
tests hold it to the cell-by-cell loop on the same screens, so the pane paints the
same segments either way; and check the public width function panes measure with.
"""

from __future__ import annotations

import random

import pytest
from rich.cells import cell_len

from console.terminal import Screen, cell_width, render

MIXED = (
    "plain \x1b[1;31mred\x1b[0m \x1b[38;2;1;2;3;48;5;200mrgb\x1b[0m \x1b[4;7minv\x1b[0m"
    " x\u00e9\u4e2d\U0001f600\u200b\u202e a\u0301 \U0001f1fa\U0001f1f8"
    " \x1b[48;5;4m\x1b[K\x1b[0m \x1b[3mI\x1b[23m \x1b[58;5;3m\x1b[4mu\x1b[0m\r\n"
)


def _frames(fast: bool, chunks: list[bytes], monkeypatch: pytest.MonkeyPatch) -> list[render.Frame]:
    monkeypatch.setattr(render, "_FAST_ROWS", fast)
    s = Screen(60, 12)
    frames = []
    for chunk in chunks:
        s.feed(chunk)
        frames.append(s.render())
    s.resize(33, 7)
    frames.append(s.render())
    frames.append(s.render(everything=True))
    return frames


def test_the_fast_path_paints_what_the_cell_loop_paints(monkeypatch):
    assert render._FAST_ROWS  # the layout and byte order here allow it
    rnd = random.Random(5)
    colours = [b"\x1b[0m", b"\x1b[01;34m", b"\x1b[38;5;208m", b"\x1b[7m", b"\x1b[38;2;9;8;7m", b"\x1b[2;3;9m"]
    chunks = []
    for i in range(120):
        line = b"".join(
            rnd.choice(colours) + b"w%d " % rnd.randrange(10**6) for _ in range(rnd.randrange(1, 9))
        )
        chunks.append(line + b"\x1b[0m\r\n")
        if i % 7 == 0:
            chunks.append(MIXED.encode())
    slow = _frames(False, chunks, monkeypatch)
    fast = _frames(True, chunks, monkeypatch)
    assert fast == slow
    for a, b in zip(fast, slow, strict=True):
        for y, row in a.rows.items():
            # Runs split where the style object changes: the same objects both ways.
            assert [seg.style for seg in row] == [seg.style for seg in b.rows[y]]
            assert all(x.style is y_.style for x, y_ in zip(row, b.rows[y], strict=True))


def test_a_fast_row_splits_runs_at_every_style_change_and_keeps_blanks():
    s = Screen(10, 2)
    s.feed(b"ab\x1b[31mc\x1b[32md\x1b[0me")
    row = s.render(everything=True).rows[0]
    assert [(seg.text, seg.cells) for seg in row] == [("ab", 2), ("c", 1), ("d", 1), ("e     ", 6)]
    assert (row[1].style.fg, row[2].style.fg, row[3].style) == (1, 2, render.DEFAULT_STYLE)


def test_cell_width_is_the_emulators_measure_not_richs():
    zwj = "\U0001f468\u200d\U0001f469"
    s = Screen(20, 2)
    s.feed(zwj.encode())
    assert cell_width(zwj) == s.cursor.x == 4
    assert cell_len(zwj) == 2  # why the pane must not measure with Rich
    assert cell_width("a\u4e2d\u0301") == 3
    hit = s.search(zwj[-1])[0]
    assert hit.col == cell_width(zwj[:-1])
