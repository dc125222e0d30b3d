"""console.terminal.keys: keys, mouse, focus and paste encoded per the program's modes."""

from __future__ import annotations

import pytest

from console.terminal import Screen
from console.terminal.keys import (
    KeyEncoder,
    MouseEncoder,
    UnknownKey,
    encode_focus,
    encode_paste,
    parse_key,
    paste_is_safe,
)


@pytest.fixture
def screen():
    return Screen(80, 24)


def keys(screen, *combos):
    enc = KeyEncoder(screen)
    try:
        return [enc.encode(*parse_key(c)) for c in combos]
    finally:
        enc.close()


def test_arrows_in_normal_and_application_cursor_mode(screen):
    assert keys(screen, "up", "down", "right", "left") == [b"\x1b[A", b"\x1b[B", b"\x1b[C", b"\x1b[D"]
    screen.feed(b"\x1b[?1h")
    assert keys(screen, "up", "left") == [b"\x1bOA", b"\x1bOD"]
    screen.feed(b"\x1b[?1l")
    assert keys(screen, "up") == [b"\x1b[A"]


def test_control_alt_function_and_editing_keys(screen):
    assert keys(screen, "ctrl+c", "ctrl+a", "ctrl+space", "alt+x", "alt+enter") == [
        b"\x03",
        b"\x01",
        b"\x00",
        b"\x1bx",
        b"\x1b\r",
    ]
    assert keys(screen, "f1", "f5", "f12") == [b"\x1bOP", b"\x1b[15~", b"\x1b[24~"]
    assert keys(screen, "enter", "tab", "backspace", "escape", "delete", "home", "pageup") == [
        b"\r",
        b"\t",
        b"\x7f",
        b"\x1b",
        b"\x1b[3~",
        b"\x1b[H",
        b"\x1b[5~",
    ]


def test_shifted_keys(screen):
    assert keys(screen, "shift+a", "A", "shift+1", "!", "shift+tab") == [b"A", b"A", b"!", b"!", b"\x1b[Z"]
    assert keys(screen, "shift+up", "ctrl+left", "ctrl+shift+up") == [
        b"\x1b[1;2A",
        b"\x1b[1;5D",
        b"\x1b[1;6A",
    ]


def test_text_keys_pass_through(screen):
    assert keys(screen, "a", "é", "7") == [b"a", "é".encode(), b"7"]


def test_kitty_keyboard_protocol_when_the_program_asks(screen):
    screen.feed(b"\x1b[>1u")
    assert screen.modes.kitty_keyboard == 1
    assert keys(screen, "ctrl+c", "escape", "a") == [b"\x1b[99;5u", b"\x1b[27u", b"a"]


def test_unknown_key_names_are_refused(screen):
    enc = KeyEncoder(screen)
    with pytest.raises(UnknownKey):
        enc.encode("frobnicate")
    with pytest.raises(UnknownKey):
        enc.encode("a", ["hyper"])
    with pytest.raises(UnknownKey):
        enc.encode("\x1b")


def test_mouse_reports_follow_the_tracking_modes(screen):
    mouse = MouseEncoder(screen)
    assert mouse.encode("press", "left", 3, 4) == b""  # not asked for: the pane keeps the mouse
    screen.feed(b"\x1b[?1000h")
    assert mouse.encode("press", "left", 3, 4) == b"\x1b[M $%"
    screen.feed(b"\x1b[?1006h")
    assert mouse.encode("press", "left", 3, 4) == b"\x1b[<0;4;5M"
    assert mouse.encode("release", "left", 3, 4) == b"\x1b[<0;4;5m"
    assert mouse.encode("press", "wheel_up", 0, 0) == b"\x1b[<64;1;1M"
    assert mouse.encode("motion", None, 5, 5) == b""  # normal tracking: no motion
    screen.feed(b"\x1b[?1003h")
    assert mouse.encode("motion", None, 5, 5) == b"\x1b[<35;6;6M"
    with pytest.raises(ValueError, match="button"):
        mouse.encode("press", "thumb", 0, 0)


def test_focus_reports():
    assert encode_focus(True) == b"\x1b[I"
    assert encode_focus(False) == b"\x1b[O"


def test_bracketed_paste_neutralises_an_embedded_end_marker():
    text = "echo safe\x1b[201~rm -rf ~\n"
    out = encode_paste(text, bracketed=True)
    assert out.startswith(b"\x1b[200~") and out.endswith(b"\x1b[201~")
    inner = out[len(b"\x1b[200~") : -len(b"\x1b[201~")]
    assert b"\x1b" not in inner
    assert b"\x1b[201~" not in inner
    assert inner == b"echo safe [201~rm -rf ~\n"


def test_plain_paste_sends_carriage_returns_and_strips_controls():
    assert encode_paste("a\nb\x03c\u009bd", bracketed=False) == b"a\rb c d"


def test_paste_safety_check():
    assert paste_is_safe("ls -l")
    assert not paste_is_safe("ls -l\n")
    assert not paste_is_safe("x\x1b[201~y")
