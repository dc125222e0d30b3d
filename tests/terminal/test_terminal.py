"""console.terminal: the emulator shared by the daemon and the TUI panes.

Everything here runs the real libghostty-vt; no process is needed because a Screen
is fed bytes exactly as a PTY would deliver them.
"""

from __future__ import annotations

import pytest

from console.terminal import Screen, Style
from console.terminal.ansi import paint_screen, safe_text

ESC = b"\x1b"


def fresh_from(screen: Screen) -> Screen:
    cols, rows = screen.size
    other = Screen(cols, rows)
    other.feed(screen.snapshot())
    return other


def assert_same(a: Screen, b: Screen) -> None:
    assert b.text() == a.text()
    assert b.text(scrollback=True) == a.text(scrollback=True)
    assert b.cursor == a.cursor
    assert b.modes == a.modes
    assert b.size == a.size


# -- snapshot ---------------------------------------------------------------------


def test_snapshot_reproduces_text_cursor_modes_and_title():
    s = Screen(40, 8, scrollback_lines=100)
    for i in range(30):
        s.feed(b"\x1b[3%dmline %d\x1b[0m plain \x1b[1;4mbold\x1b[0m\r\n" % (i % 8, i))
    s.feed(b"\x1b]2;build watcher\x07")
    s.feed(b"\x1b[?2004h\x1b[?1h\x1b[?1000h\x1b[?1006h\x1b[?1004h\x1b[?25l")
    s.feed(b"\x1b[2;6r\x1b[4;9Hmid")
    b = fresh_from(s)
    assert_same(s, b)
    assert b.title == "build watcher"
    assert b.modes.bracketed_paste and b.modes.application_cursor and b.modes.focus_events
    assert (b.modes.mouse_tracking, b.modes.mouse_format) == ("normal", "sgr")
    assert not b.cursor.visible
    # The scrolling region came across too: a line feed at its bottom scrolls only it.
    for scr in (s, b):
        scr.feed(b"\x1b[6;1H\nnew")
    assert b.text() == s.text()


def test_snapshot_keeps_trailing_blank_rows_and_scrollback_alignment():
    s = Screen(20, 6, scrollback_lines=100)
    s.feed(b"".join(b"row %d\r\n" % i for i in range(9)))  # 3 rows into scrollback
    s.feed(b"\r\n\r\n")  # and two blank rows at the bottom
    b = fresh_from(s)
    assert_same(s, b)
    assert s.scrollback_rows == b.scrollback_rows


def test_snapshot_of_an_empty_and_a_cleared_screen():
    assert_same(Screen(10, 3), fresh_from(Screen(10, 3)))
    s = Screen(10, 3)
    s.feed(b"one\r\ntwo\r\nthree\r\nfour\x1b[H\x1b[2J")
    assert_same(s, fresh_from(s))


def test_snapshot_under_alternate_screen_brings_back_the_primary_screen():
    s = Screen(30, 6, scrollback_lines=100)
    s.feed(b"".join(b"shell %d\r\n" % i for i in range(10)) + b"$ vim")
    s.feed(b"\x1b[?1049h\x1b[H\x1b[2Jeditor text\x1b[3;4H")
    b = fresh_from(s)
    assert_same(s, b)
    assert b.modes.alternate_screen
    for scr in (s, b):
        scr.feed(b"\x1b[?1049l")
    assert_same(s, b)
    assert "$ vim" in b.text()


def test_snapshot_carries_a_half_parsed_sequence_and_character():
    s = Screen(20, 3)
    s.feed(b"abc\x1b[3")  # CSI cut in the middle
    b = fresh_from(s)
    for scr in (s, b):
        scr.feed(b"1mred\xe2\x82")  # then a UTF-8 character cut in the middle
    c = fresh_from(s)
    for scr in (s, b, c):
        scr.feed(b"\xac!")
    assert s.text() == b.text() == c.text() == "abcred€!"
    assert b.render(everything=True).rows[0][1].style.fg == 1
    assert c.render(everything=True).rows[0][1].style.fg == 1


def test_snapshot_then_same_stream_stays_identical_through_reflow():
    s = Screen(12, 4, scrollback_lines=50)
    s.feed(b"a fairly long line that wraps several times\r\nshort\r\n")
    b = fresh_from(s)
    for scr in (s, b):
        scr.resize(30, 5)
        scr.feed("wide 世界 🎉\r\n".encode())
    assert_same(s, b)
    # Reflowed from 12 columns to 30 (the space at the wrap point is trimmed in text).
    assert s.text(scrollback=True) == "a fairly long line that wraps\nseveral times\nshort\nwide 世界 🎉"


# -- state ------------------------------------------------------------------------


def test_resize_reflows_soft_wrapped_lines():
    s = Screen(10, 4)
    s.feed(b"0123456789abcde")
    assert s.text() == "0123456789\nabcde"
    s.resize(20, 4)
    assert s.text() == "0123456789abcde"
    assert s.size == (20, 4)


def test_replies_go_to_the_callback():
    replies: list[bytes] = []
    s = Screen(80, 24, on_reply=replies.append)
    s.feed(b"\x1b[5;7H\x1b[6n\x1b[c\x1b[18t")
    assert replies[0] == b"\x1b[5;7R"
    assert replies[1].startswith(b"\x1b[?")
    assert replies[2] == b"\x1b[8;24;80t"


def test_no_callback_means_no_reply_and_no_error():
    s = Screen(80, 24)
    s.feed(b"\x1b[6n")
    assert s.cursor.x == 0


def test_text_with_scrollback_and_search():
    s = Screen(20, 3, scrollback_lines=1000)
    s.feed(b"".join(b"item %03d\r\n" % i for i in range(50)))
    s.feed("naïve 世界 needle".encode())
    everything = s.text(scrollback=True).split("\n")
    assert everything[0] == "item 000" and everything[-1] == "naïve 世界 needle"
    assert "item 000" not in s.text()
    hits = s.search("ITEM 01")
    assert [h.row for h in hits] == list(range(10, 20))
    [hit] = s.search("needle", case_sensitive=True)
    assert hit.col == len("naïve ") + 4 + 1  # the two wide characters take two cells each
    assert s.search("") == []


def test_scrolling_the_viewport_back_and_forth():
    s = Screen(20, 3, scrollback_lines=1000)
    s.feed(b"".join(b"item %03d\r\n" % i for i in range(50)) + b"last")
    s.render()
    s.scroll_to_row(10)
    frame = s.render()
    assert frame.rows[0][0].text.rstrip() == "item 010"
    s.scroll(-5)
    assert s.render().rows[0][0].text.rstrip() == "item 005"
    s.scroll_to_bottom()
    assert s.render().rows[2][0].text.rstrip() == "last"


# -- painting ---------------------------------------------------------------------


def test_render_returns_styled_segments_and_only_dirty_rows():
    s = Screen(30, 4)
    first = s.render()
    assert first.full and set(first.rows) == {0, 1, 2, 3}
    s.feed(b"\x1b[2;1H\x1b[1;31mred\x1b[0m \x1b[38;2;1;2;3;48;5;200mrgb\x1b[0m \x1b[4;7minv\x1b[0m")
    frame = s.render()
    assert 1 in frame.rows and not {2, 3} & set(frame.rows)  # row 0 held the cursor before
    segs = frame.rows[1]
    assert [seg.text for seg in segs[:6]] == ["red", " ", "rgb", " ", "inv", " " * 19]
    assert segs[0].style == Style(fg=1, bold=True)
    assert segs[2].style == Style(fg=(1, 2, 3), bg=200)
    assert segs[4].style == Style(underline=1, reverse=True)
    assert sum(seg.cells for seg in segs) == 30
    assert s.render().rows == {}
    assert frame.cursor.y == 1 and frame.cursor.x == len("red rgb inv")


def test_render_wide_characters_graphemes_and_background_only_cells():
    s = Screen(12, 2)
    s.feed("世e\u0301🎉".encode() + b"\r\n\x1b[44m\x1b[K\x1b[0m")
    frame = s.render(everything=True)
    row0 = frame.rows[0]
    assert row0[0].text.startswith("世e\u0301🎉")
    assert row0[0].cells == 12
    [blank] = frame.rows[1]
    assert blank.style.bg == 4 and blank.cells == 12


def test_paint_never_passes_program_control_sequences():
    s = Screen(20, 2)
    s.feed("ok \u202eevil\u200b\x1b]52;c;SGVsbG8=\x07\x1b]2;title\x07".encode())
    painted = paint_screen(s, everything=True)
    assert "]52;" not in painted and "]2;" not in painted
    assert "\u202e" not in painted and "\u200b" not in painted
    assert "ok evil" in painted
    assert safe_text("a\x07b\u2066c") == "a\ufffdbc"


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="terminal size"):
        Screen(0, 10)
    s = Screen(10, 10)
    with pytest.raises(ValueError, match="terminal size"):
        s.resize(10, 100_000)


def test_compress_keeps_the_text():
    s = Screen(50, 5, scrollback_lines=5000)
    s.feed(b"".join(b"\x1b[32m%05d\x1b[0m %s\r\n" % (i, b"x" * 40) for i in range(3000)))
    before = s.text(scrollback=True)
    while not s.compress():
        continue  # it packs a chunk per call
    assert s.compress()  # nothing more to do until new output
    assert s.text(scrollback=True) == before


@pytest.mark.parametrize("cols", [40, 120, 200])
def test_scrollback_keeps_at_least_the_lines_asked_for_and_is_capped(cols):
    s = Screen(cols, 10, scrollback_lines=1000)
    s.feed(b"".join(b"\x1b[3%dmline %05d\x1b[0m\r\n" % (i % 8, i) for i in range(6000)))
    # At least what was asked; at most the backstop of twice that plus a thousand.
    assert 1000 <= s.scrollback_rows <= 3000
    assert s.text(scrollback=True).split("\n")[-1] == "line 05999"
    s.resize(cols // 2, 10)  # caps follow the width
    s.feed(b"".join(b"more %05d\r\n" % i for i in range(6000)))
    assert 1000 <= s.scrollback_rows <= 3000


def test_scrollback_bytes_cap_binds_when_smaller():
    s = Screen(80, 10, scrollback_lines=10_000, scrollback_bytes=256 * 1024)
    s.feed(b"".join(b"line %05d\r\n" % i for i in range(12000)))
    assert s.scrollback_rows < 2000  # a few pages, not the 10,000 lines
