"""Terminal emulation shared by the daemon and the TUI (libghostty-vt via pyghostty).

Imports nothing from the rest of the console and never Textual or Rich, so both the
daemon's sessions and the TUI's panes can use it.

- `Screen`: feed bytes, resize, modes, text, snapshot, styled rows (`render`).
- `cell_width`: the width of text in the emulator's own cells (not wcwidth's).
- `KeyEncoder`, `MouseEncoder`, `encode_paste`, `encode_focus`: input to bytes,
  per the program's modes.
- `ansi.paint`: draw a screen on a real terminal with sequences of our own making.
"""

from .keys import (
    KeyEncoder,
    MouseEncoder,
    UnknownKey,
    encode_focus,
    encode_paste,
    parse_key,
    paste_concerns,
    paste_is_safe,
)
from .render import DEFAULT_STYLE, Color, Cursor, Frame, Segment, Style
from .screen import CursorState, Match, Modes, Screen, cell_width

__all__ = [
    "DEFAULT_STYLE",
    "Color",
    "Cursor",
    "CursorState",
    "Frame",
    "KeyEncoder",
    "Match",
    "Modes",
    "MouseEncoder",
    "Screen",
    "Segment",
    "Style",
    "UnknownKey",
    "cell_width",
    "encode_focus",
    "encode_paste",
    "parse_key",
    "paste_concerns",
    "paste_is_safe",
]
