"""Terminal emulation shared by the daemon and the TUI (libghostty-vt via pyghostty).

Imports nothing from the rest of the console and never Textual or Rich, so both the
daemon's sessions and the TUI's panes can use it.
"""

from .render import Color, Cursor, Frame, Segment, Style
from .screen import CursorState, Match, Modes, Screen

__all__ = [
    "Color",
    "Cursor",
    "CursorState",
    "Frame",
    "Match",
    "Modes",
    "Screen",
    "Segment",
    "Style",
]
