"""Copy mode: the model's motions, search and exact selections, then the real
console with a real daemon session: prefix [ enters it, the vi and emacs tables move,
search, select and yank into the clipboard, and the program receives no key meanwhile."""

from __future__ import annotations

import sys

import pytest
from support.tui import Clock, make_app, screen_text, until
from support.tui_sessions import new_session, open_pane, prefix, wait_shown
from textual import events

from console.tui.model.copy_mode import CopyModel, clusters, extract
from console.tui.settings.config import ConfigError, parse_config

pytestmark = pytest.mark.needs_bwrap

WIDE = "wide 世界 👩\u200d💻 end"

# ---------------------------------------------------------------------- the model


def test_hjkl_keep_the_column_and_stay_inside_the_lines():
    m = CopyModel(["abcdef", "ab", "abcdef"], (0, 4))
    m.vertical(1)
    assert m.cursor == (1, 1)  # the short line's last character
    m.vertical(1)
    assert m.cursor == (2, 4)  # back to the column it aimed for
    m.vertical(5)
    assert m.cursor == (2, 4)
    m.right(), m.right(), m.right()
    assert m.cursor == (2, 5)
    m.line_start()
    m.left()
    assert m.cursor == (2, 0)
    m.top()
    assert m.cursor == (0, 0)
    m.bottom()
    m.line_end()
    assert m.cursor == (2, 5)


def test_word_motions_cross_punctuation_and_lines():
    m = CopyModel(["hello world  foo.bar", "", "next line"], (0, 0))
    stops = []
    for _ in range(5):
        m.word_next()
        stops.append(m.cursor)
    assert stops == [(0, 6), (0, 13), (0, 16), (0, 17), (2, 0)]
    m.word_back()
    assert m.cursor == (0, 17)
    m.word_back()
    assert m.cursor == (0, 16)
    m.move_to(0, 0)
    m.word_end()
    assert m.cursor == (0, 4)


def test_wide_characters_and_joiners_are_one_stop_each():
    line = "a世b👩\u200d💻c🇫🇷d"
    assert [(c.col, c.cells, c.text) for c in clusters(line)] == [
        (0, 1, "a"),
        (1, 2, "世"),
        (3, 1, "b"),
        (4, 4, "👩\u200d💻"),
        (8, 1, "c"),
        (9, 4, "🇫🇷"),
        (13, 1, "d"),
    ]
    down = CopyModel(["ab", "👩\u200d💻 x"], (0, 1))
    down.vertical(1)  # column 1 is inside the ZWJ sequence: its start
    assert down.cursor == (1, 0)
    m = CopyModel([line], (0, 2))  # the second half of 世 is 世
    assert m.cursor == (0, 1)
    m.right(), m.right()
    assert m.cursor == (0, 4)


def test_search_goes_both_ways_and_wraps():
    m = CopyModel(["one x", "two", "three x", "four"], (1, 0))
    hit, wrapped = m.search("X", forward=True)
    assert (hit.row, hit.col, wrapped) == (2, 6, False)
    hit, wrapped = m.search()
    assert (hit.row, wrapped) == (0, True)  # past the newest: around to the oldest
    hit, wrapped = m.search(forward=False)
    assert (hit.row, wrapped) == (2, True)
    assert m.search("absent") == (None, False)
    assert m.cursor == (2, 6)


def test_selection_extracts_exact_text():
    lines = ["ab  世界  ", "👩\u200d💻 x", "last line   "]
    m = CopyModel(lines, (0, 4))  # on 世
    m.start_selection()
    m.vertical(1)
    assert m.cursor == (1, 4)
    m.right()
    assert m.selected() == "世界\n👩\u200d💻 x"
    m.start_selection(lines=True)  # to whole lines
    assert m.selected() == "ab  世界\n👩\u200d💻 x"
    m.start_selection(lines=True)  # the same key again: no selection, y takes the line
    m.move_to(2, 0)
    assert m.selected() == "last line"
    # a selection that starts on the second cell of a wide character takes it once
    assert extract(["a世b"], (0, 2), (0, 3)) == "世b"
    assert extract(["👩\u200d💻x"], (0, 3), (0, 4)) == "👩\u200d💻x"


def test_the_setting_is_checked():
    assert parse_config('[display]\ncopy_mode_keys = "emacs"').copy_mode_keys == "emacs"
    assert parse_config("").copy_mode_keys == "vi"
    with pytest.raises(ConfigError, match=r'allowed: "vi" \| "emacs"'):
        parse_config('[display]\ncopy_mode_keys = "vim"')


# ---------------------------------------------------------------------- in the console

SIZE = (100, 30)
RECORDER = (
    "import os, sys, tty\n"
    "for i in range(1, 201):\n"
    "    print(f'row-{i:03d} alpha beta')\n"
    f"print({WIDE!r})\n"
    "print('READY', flush=True)\n"
    "tty.setraw(0)\n"
    "out = open(sys.argv[1], 'ab', buffering=0)\n"
    "while data := os.read(0, 1024):\n"
    "    out.write(data)\n"
)


DAEMON_POLICY = "approval_timeout_s = 120\n"


async def _recorder(pilot, app, daemon, tmp_path):
    got = tmp_path / "received"
    got.write_bytes(b"")
    sid = new_session(daemon, [sys.executable, "-c", RECORDER, str(got)], title="recorder")
    pane = await open_pane(pilot, app, sid)
    await wait_shown(pilot, pane, "READY")
    return pane, got


async def _search(pilot, app, key: str, needle: str) -> None:
    await pilot.press(key)
    await until(pilot, lambda: type(app.screen).__name__ == "TextPrompt")
    await pilot.press(*needle, "enter")
    await until(pilot, lambda: type(app.screen).__name__ != "TextPrompt")


async def _nothing_was_sent_then_z_is(pilot, pane, got) -> None:
    assert got.read_bytes() == b""
    await pilot.press("z")  # out of copy mode the program has the keys again
    await until(pilot, lambda: got.read_bytes() != b"")
    assert got.read_bytes() == b"z"  # and nothing pressed in copy mode came before it


async def test_vi_copy_mode_moves_searches_selects_and_yanks(daemon, tmp_path):
    app = make_app(daemon, Clock())
    async with app.run_test(size=SIZE) as pilot:
        pane, got = await _recorder(pilot, app, daemon, tmp_path)
        await prefix(pilot, "left_square_bracket")
        copy = pane.state.copy
        assert copy is not None
        await until(pilot, lambda: "[copy " in screen_text(app))
        await pilot.press("x", "k", "k", "w")  # x means nothing here, and is not sent
        assert copy.lines[copy.row] == WIDE and copy.col == 5
        await pilot.press("v", "l", "l", "l")
        assert "selecting" in screen_text(app)
        # painted: the selection highlighted, the cursor (on the ZWJ sequence) reversed
        y = copy.row - pane.link.screen.viewport[1] - pane._top
        segments = list(pane.render_line(y))
        selected = pane.component_style("terminal-pane--selection").bgcolor
        assert any("界" in seg.text and seg.style.bgcolor == selected for seg in segments)
        assert any("👩" in seg.text and seg.style.reverse for seg in segments)
        await pilot.press("y")
        await until(pilot, lambda: app.clipboard == "世界 👩\u200d💻")
        assert pane.state.copy is None
        # search back, line selection, Enter yanks
        await prefix(pilot, "left_square_bracket")
        await _search(pilot, app, "question_mark", "row-150")
        copy = pane.state.copy
        assert copy.lines[copy.row].startswith("row-150") and pane.state.matches
        await wait_shown(pilot, pane, "row-150")
        await pilot.press("n")  # the only hit: found again, around the start
        await until(pilot, lambda: "wrapped around" in screen_text(app))
        await pilot.press("V", "j", "enter")
        await until(pilot, lambda: app.clipboard == "row-150 alpha beta\nrow-151 alpha beta")
        # g goes to the oldest line and scrolls there; q leaves to the live screen
        await prefix(pilot, "left_square_bracket")
        await pilot.press("g")
        await wait_shown(pilot, pane, "row-001")
        await pilot.press("q")
        await wait_shown(pilot, pane, "READY")
        assert pane.state.copy is None and not pane.state.scrolling
        await _nothing_was_sent_then_z_is(pilot, pane, got)


async def test_emacs_copy_mode_from_the_setting(daemon, tmp_path):
    app = make_app(daemon, Clock(), copy_mode_keys="emacs")
    async with app.run_test(size=SIZE) as pilot:
        pane, got = await _recorder(pilot, app, daemon, tmp_path)
        await prefix(pilot, "left_square_bracket")
        copy = pane.state.copy
        await pilot.press("ctrl+p", "ctrl+p", "ctrl+e", "ctrl+space", "ctrl+a", "alt+w")
        await until(pilot, lambda: app.clipboard == WIDE)
        await prefix(pilot, "left_square_bracket")
        await _search(pilot, app, "ctrl+r", "row-010")
        copy = pane.state.copy
        assert copy.lines[copy.row].startswith("row-010")
        await pilot.press("ctrl+space", "ctrl+n", "ctrl+e", "alt+w")
        await until(pilot, lambda: app.clipboard == "row-010 alpha beta\nrow-011 alpha beta")
        await prefix(pilot, "left_square_bracket")
        pane.post_message(events.Paste("pasted"))  # refused, not sent
        await until(pilot, lambda: "in copy mode nothing is sent" in screen_text(app))
        await pilot.press("j", "ctrl+g")  # j is not an emacs key: ignored, not sent
        assert pane.state.copy is None
        await _nothing_was_sent_then_z_is(pilot, pane, got)
