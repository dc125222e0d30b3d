"""Keys, mouse and paste to the bytes a terminal sends, per the program's modes.

Encoding is libghostty-vt's (the key encoder knows legacy, xterm modifyOtherKeys and
the kitty keyboard protocol; the mouse encoder knows X10/normal/button/any tracking
in X10, UTF-8, SGR, urxvt and SGR-pixel formats). The encoders read the modes from
the `Screen` they are bound to on every call, so a program switching to application
cursor keys or to kitty keys is honoured at once.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from console.contract.inert import Finding, findings

from ._native import check, ffi, lib, sized
from .screen import CELL_HEIGHT_PX, CELL_WIDTH_PX, Screen

MOD_BITS = {"shift": 1 << 0, "ctrl": 1 << 1, "alt": 1 << 2, "super": 1 << 3}
_MOD_ALIASES = {"control": "ctrl", "meta": "alt", "option": "alt", "cmd": "super", "win": "super"}

_NAMED = {
    "up": "ARROW_UP",
    "down": "ARROW_DOWN",
    "left": "ARROW_LEFT",
    "right": "ARROW_RIGHT",
    "home": "HOME",
    "end": "END",
    "pageup": "PAGE_UP",
    "page_up": "PAGE_UP",
    "pagedown": "PAGE_DOWN",
    "page_down": "PAGE_DOWN",
    "insert": "INSERT",
    "delete": "DELETE",
    "backspace": "BACKSPACE",
    "tab": "TAB",
    "enter": "ENTER",
    "return": "ENTER",
    "escape": "ESCAPE",
    "esc": "ESCAPE",
    "space": "SPACE",
    **{f"f{n}": f"F{n}" for n in range(1, 26)},
    **{f"kp_{n}": f"NUMPAD_{n}" for n in range(10)},
    "kp_enter": "NUMPAD_ENTER",
    "kp_add": "NUMPAD_ADD",
    "kp_subtract": "NUMPAD_SUBTRACT",
    "kp_multiply": "NUMPAD_MULTIPLY",
    "kp_divide": "NUMPAD_DIVIDE",
    "kp_decimal": "NUMPAD_DECIMAL",
}
# Printable keys of a US layout: character -> (physical key, character when unshifted).
_PRINTABLE = {
    **{c: (c.upper(), c) for c in "abcdefghijklmnopqrstuvwxyz"},
    **{str(d): (f"DIGIT_{d}", str(d)) for d in range(10)},
    "`": ("BACKQUOTE", "`"),
    "\\": ("BACKSLASH", "\\"),
    "[": ("BRACKET_LEFT", "["),
    "]": ("BRACKET_RIGHT", "]"),
    ",": ("COMMA", ","),
    "=": ("EQUAL", "="),
    "-": ("MINUS", "-"),
    ".": ("PERIOD", "."),
    "'": ("QUOTE", "'"),
    ";": ("SEMICOLON", ";"),
    "/": ("SLASH", "/"),
    " ": ("SPACE", " "),
}
_SHIFTED = dict(zip('~!@#$%^&*()_+{}|:"<>?', "`1234567890-=[]\\;',./", strict=True))
_SHIFT_OF = {base: shifted for shifted, base in _SHIFTED.items()}
_NAMED_TEXT = {"ENTER": "\r", "TAB": "\t", "SPACE": " "}


class UnknownKey(ValueError):
    """An unknown key or modifier name."""


def parse_key(combo: str) -> tuple[str, frozenset[str]]:
    """'ctrl+shift+up' -> ('up', {'ctrl', 'shift'}). A lone '+' is the plus key."""
    if combo in ("+", ""):
        return combo, frozenset()
    *mods, key = combo.split("+") if not combo.endswith("++") else [*combo[:-2].split("+"), "+"]
    return key, _mods(mods)


def _mods(mods: Iterable[str]) -> frozenset[str]:
    out = set()
    for m in mods:
        name = _MOD_ALIASES.get(m.lower(), m.lower())
        if name not in MOD_BITS:
            raise UnknownKey(f"unknown modifier {m!r}")
        out.add(name)
    return frozenset(out)


class KeyEncoder:
    """Encodes key presses for the program running in `screen`."""

    def __init__(self, screen: Screen) -> None:
        self._screen = screen
        enc = ffi.new("GhosttyKeyEncoder*")
        check(lib.ghostty_key_encoder_new(ffi.NULL, enc), "key_encoder_new")
        ev = ffi.new("GhosttyKeyEvent*")
        check(lib.ghostty_key_event_new(ffi.NULL, ev), "key_event_new")
        self._enc, self._ev = enc, ev
        self._out = ffi.new("char[]", 128)
        self._n = ffi.new("size_t*")
        self._true = ffi.new("bool*", True)

    def close(self) -> None:
        lib.ghostty_key_event_free(self._ev[0])
        lib.ghostty_key_encoder_free(self._enc[0])

    def encode(self, key: str, mods: Iterable[str] = (), text: str = "", *, release: bool = False) -> bytes:
        """Bytes for pressing `key` ('a', 'A', '!', 'up', 'f5', 'enter', 'é', ...) with
        `mods` ('ctrl', 'alt', 'shift', 'super'). `text` is what the key types under the
        operator's layout when it differs from the key name; usually leave it empty.
        A release encodes to b'' unless the program asked for release events."""
        modset = _mods(mods)
        physical, unshifted, typed = self._resolve(key, modset, text)
        bits = 0
        for m in modset:
            bits |= MOD_BITS[m]
        enc, ev = self._enc[0], self._ev[0]
        lib.ghostty_key_encoder_setopt_from_terminal(enc, self._screen._handle)
        # Alt sends ESC before the key, as xterm's metaSendsEscape and every Linux
        # terminal do by default.
        lib.ghostty_key_encoder_setopt(enc, lib.GHOSTTY_KEY_ENCODER_OPT_ALT_ESC_PREFIX, self._true)
        action = lib.GHOSTTY_KEY_ACTION_RELEASE if release else lib.GHOSTTY_KEY_ACTION_PRESS
        lib.ghostty_key_event_set_action(ev, action)
        lib.ghostty_key_event_set_key(ev, getattr(lib, "GHOSTTY_KEY_" + physical))
        lib.ghostty_key_event_set_mods(ev, bits)
        # Shift that produced the typed character is consumed by it ('A', '!').
        consumed = MOD_BITS["shift"] if "shift" in modset and typed and typed != unshifted else 0
        lib.ghostty_key_event_set_consumed_mods(ev, consumed)
        raw = typed.encode()
        lib.ghostty_key_event_set_utf8(ev, raw if raw else ffi.NULL, len(raw))
        lib.ghostty_key_event_set_unshifted_codepoint(ev, ord(unshifted) if len(unshifted) == 1 else 0)
        check(lib.ghostty_key_encoder_encode(enc, ev, self._out, 128, self._n), f"encode key {key!r}")
        return bytes(ffi.buffer(self._out, self._n[0]))

    @staticmethod
    def _resolve(key: str, mods: frozenset[str], text: str) -> tuple[str, str, str]:
        """(physical key, unshifted character, typed text) for a key name."""
        named = _NAMED.get(key.lower()) if len(key) > 1 else None
        if named is not None:
            return named, _NAMED_TEXT.get(named, ""), text or _NAMED_TEXT.get(named, "")
        if len(key) != 1:
            raise UnknownKey(f"unknown key {key!r}")
        if unicodedata.category(key)[0] == "C":
            raise UnknownKey(f"not a key name: {key!r} (use 'enter', 'tab', 'escape', ...)")
        lower = key.lower()
        if lower in _PRINTABLE:
            physical, base = _PRINTABLE[lower]
            return physical, base, text or (_SHIFT_OF.get(lower, key.upper()) if "shift" in mods else key)
        if key in _SHIFTED:
            physical, base = _PRINTABLE[_SHIFTED[key]]
            return physical, base, text or key
        return "UNIDENTIFIED", key, text or key


_BUTTONS = {
    None: None,
    "left": "LEFT",
    "middle": "MIDDLE",
    "right": "RIGHT",
    "wheel_up": "FOUR",
    "wheel_down": "FIVE",
    "wheel_left": "SIX",
    "wheel_right": "SEVEN",
}
_ACTIONS = {"press": "PRESS", "release": "RELEASE", "motion": "MOTION"}


class MouseEncoder:
    """Encodes mouse events for the program running in `screen`; b'' when the
    program did not ask for mouse reports (the pane then keeps the mouse for itself:
    selection, scrolling back)."""

    def __init__(self, screen: Screen) -> None:
        self._screen = screen
        enc = ffi.new("GhosttyMouseEncoder*")
        check(lib.ghostty_mouse_encoder_new(ffi.NULL, enc), "mouse_encoder_new")
        ev = ffi.new("GhosttyMouseEvent*")
        check(lib.ghostty_mouse_event_new(ffi.NULL, ev), "mouse_event_new")
        self._enc, self._ev = enc, ev
        self._size = sized("GhosttyMouseEncoderSize")
        self._pos = ffi.new("GhosttyMousePosition*")
        self._out = ffi.new("char[]", 64)
        self._n = ffi.new("size_t*")

    def close(self) -> None:
        lib.ghostty_mouse_event_free(self._ev[0])
        lib.ghostty_mouse_encoder_free(self._enc[0])

    def encode(self, action: str, button: str | None, x: int, y: int, mods: Iterable[str] = ()) -> bytes:
        """`action` 'press', 'release' or 'motion'; `button` 'left', 'middle', 'right',
        'wheel_up', 'wheel_down', 'wheel_left', 'wheel_right' or None (motion with no
        button); `x`, `y` the 0-based cell in the screen."""
        if action not in _ACTIONS:
            raise ValueError(f"unknown mouse action {action!r}")
        if button not in _BUTTONS:
            raise ValueError(f"unknown mouse button {button!r}")
        bits = 0
        for m in _mods(mods):
            bits |= MOD_BITS[m]
        cols, rows = self._screen.size
        size = self._size
        size.screen_width, size.screen_height = cols * CELL_WIDTH_PX, rows * CELL_HEIGHT_PX
        size.cell_width, size.cell_height = CELL_WIDTH_PX, CELL_HEIGHT_PX
        enc, ev = self._enc[0], self._ev[0]
        lib.ghostty_mouse_encoder_setopt_from_terminal(enc, self._screen._handle)
        lib.ghostty_mouse_encoder_setopt(enc, lib.GHOSTTY_MOUSE_ENCODER_OPT_SIZE, size)
        lib.ghostty_mouse_event_set_action(ev, getattr(lib, "GHOSTTY_MOUSE_ACTION_" + _ACTIONS[action]))
        name = _BUTTONS[button]
        if name is None:
            lib.ghostty_mouse_event_clear_button(ev)
        else:
            lib.ghostty_mouse_event_set_button(ev, getattr(lib, "GHOSTTY_MOUSE_BUTTON_" + name))
        lib.ghostty_mouse_event_set_mods(ev, bits)
        x = min(max(x, 0), cols - 1)
        y = min(max(y, 0), rows - 1)
        self._pos.x = x * CELL_WIDTH_PX + CELL_WIDTH_PX / 2
        self._pos.y = y * CELL_HEIGHT_PX + CELL_HEIGHT_PX / 2
        lib.ghostty_mouse_event_set_position(ev, self._pos[0])
        check(lib.ghostty_mouse_encoder_encode(enc, ev, self._out, 64, self._n), "encode mouse")
        return bytes(ffi.buffer(self._out, self._n[0]))


def encode_focus(gained: bool) -> bytes:
    """Focus in/out report; send it only when `Screen.modes.focus_events`."""
    out = ffi.new("char[]", 16)
    n = ffi.new("size_t*")
    event = lib.GHOSTTY_FOCUS_GAINED if gained else lib.GHOSTTY_FOCUS_LOST
    check(lib.ghostty_focus_encode(event, out, 16, n), "focus encode")
    return bytes(ffi.buffer(out, n[0]))


def encode_paste(text: str, bracketed: bool) -> bytes:
    """Bytes for pasting `text`. Control characters that could end a bracketed paste
    early or inject keys (ESC of an embedded ESC [ 201 ~, other C0 and C1 controls)
    become spaces, so no ESC [ 201 ~ inside the text ever reaches the program; line
    breaks become CR outside bracketed mode, as a terminal sends them (CRLF is one
    CR, not two). Pass `Screen.modes.bracketed_paste` as `bracketed`."""
    if not bracketed:
        text = text.replace("\r\n", "\r")
    cleaned = "".join(" " if 0x80 <= ord(ch) <= 0x9F else ch for ch in text).encode("utf-8", "replace")
    data = ffi.new("char[]", cleaned)
    n = ffi.new("size_t*")
    res = lib.ghostty_paste_encode(data, len(cleaned), bracketed, ffi.NULL, 0, n)
    if res not in (lib.GHOSTTY_SUCCESS, lib.GHOSTTY_OUT_OF_SPACE):
        check(res, "paste encode")
    out = ffi.new("char[]", max(n[0], 1))
    check(lib.ghostty_paste_encode(data, len(cleaned), bracketed, out, len(out), n), "paste encode")
    return bytes(ffi.buffer(out, n[0]))


# Line breaks as terminals send them: tmux's paste-buffer, xterm, VTE and iTerm2 send
# CR, editors' clipboards hold LF or CRLF; U+2028/2029 are line breaks to some programs.
_LINE_BREAK = re.compile("\r\n|[\r\n\u2028\u2029]")
# Every other control: C0 (tab included), DEL, C1.
_CONTROL = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\t]")
_SHOWN = {Finding.BIDI, Finding.INVISIBLE, Finding.UNDECODABLE}


def paste_concerns(text: str, bracketed: bool = False) -> list[str]:
    """Why pasting `text` needs the operator's confirmation first; empty when it does not.

    Outside bracketed paste any line break (CR, CRLF, LF) runs what precedes it, and
    any other control character (ESC included) is a key the operator did not see.
    Inside bracketed paste line breaks and tabs are data; other controls still are
    not, an ESC [ 201 ~ would end the bracket early. Bidirectional controls and
    invisible characters hide what the text says, in either mode."""
    concerns: list[str] = []
    if not bracketed and _LINE_BREAK.search(text):
        concerns.append("line breaks: each line may run as a command as it arrives")
    # what is left once the characters this mode takes as data are removed
    rest = (
        text.replace("\t", "").replace("\r", "").replace("\n", "") if bracketed else _LINE_BREAK.sub("", text)
    )
    if "\x1b[201~" in text or "\x9b201~" in text:
        concerns.append("a bracketed-paste end marker (ESC [ 201 ~), sent as spaces")
    elif _CONTROL.search(rest):
        concerns.append("control characters: ESC and the other controls are sent as spaces, a tab as a tab")
    found = findings(rest) & _SHOWN
    concerns.extend(sorted(str(f) for f in found))
    return concerns


def paste_is_safe(text: str, bracketed: bool = False) -> bool:
    """False when pasting could run or hide something unseen (see `paste_concerns`):
    the pane should ask before sending it."""
    return not paste_concerns(text, bracketed)
