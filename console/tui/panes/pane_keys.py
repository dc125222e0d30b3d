"""Keys in a terminal pane: Textual key events to the bytes a terminal sends, and the
pane's own keys (the prefix and what follows it) read from the keymap.

A pane gives the program every key, so its own commands cannot be Textual bindings
(those would fire first). They are entries of the action table all the same, with ids a
keymap can rebind; :class:`PaneKeys` turns the keys in force into lookups the pane asks
on each key press.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from textual.keys import key_to_character

from console.terminal import KeyEncoder, UnknownKey
from console.tui.settings import copy_keys
from console.tui.settings.actions import ACTIONS, ActionSpec

# Key names Textual and the terminal encoder share.
_NAMED = frozenset(
    {
        "up",
        "down",
        "left",
        "right",
        "home",
        "end",
        "pageup",
        "pagedown",
        "insert",
        "delete",
        "backspace",
        "tab",
        "enter",
        "escape",
        "space",
        *(f"f{n}" for n in range(1, 25)),
    }
)
_MODIFIERS = {"ctrl": "ctrl", "alt": "alt", "shift": "shift", "super": "super", "meta": "alt"}
# Control characters Textual reports under another key's name (ctrl+h arrives as
# backspace, ctrl+i as tab): send what was typed.
_AS_TYPED = {"\x08": b"\x08"}


def split_key(key: str) -> tuple[str, frozenset[str]]:
    """Textual's 'ctrl+shift+up' -> ('up', {'ctrl', 'shift'}); unknown modifiers are dropped."""
    *mods, base = key.split("+")
    return base, frozenset(_MODIFIERS[m] for m in mods if m in _MODIFIERS)


def key_bytes(encoder: KeyEncoder, key: str, character: str | None) -> bytes:
    """What a terminal sends for a Textual key event (``event.key``, ``event.character``),
    for the program's current modes (application cursor keys, kitty keyboard, ...).
    Empty for a key the terminal has no encoding for."""
    if character in _AS_TYPED and key == "backspace":
        return _AS_TYPED[character]
    base, mods = split_key(key)
    try:
        if base in _NAMED:
            return encoder.encode(base, mods)
        if character and character.isprintable() and not (mods & {"ctrl", "alt", "super"}):
            # Typed text: the character itself (any script, emoji), shift consumed by it.
            return encoder.encode(character, mods | ({"shift"} if character.isupper() else set()))
        ch = base if len(base) == 1 else key_to_character(base)
        if ch is None:
            return b""
        if ch.isupper():
            mods = mods | {"shift"}
        return encoder.encode(ch, mods)
    except UnknownKey:
        return b""


@dataclass(frozen=True)
class PaneKeys:
    """The pane's keys in force, by tmux's table names: ``live`` is the ``root`` table
    (while the program has the keys: the prefix, scrolling back), ``after_prefix`` the
    ``prefix`` table (pane commands first, then the sessions view's, then the app's),
    ``scrolling`` the ``copy-mode`` table (scrolled back), ``copying`` copy mode's cursor
    tables by name (vi, emacs)."""

    prefix: frozenset[str]
    live: Mapping[str, ActionSpec]
    after_prefix: Mapping[str, ActionSpec]
    scrolling: Mapping[str, ActionSpec]
    copying: Mapping[str, Mapping[str, ActionSpec]]

    @classmethod
    def from_keys(cls, keys_in_force: Mapping[str, str]) -> PaneKeys:
        def table(*scopes: str) -> dict[str, ActionSpec]:
            out: dict[str, ActionSpec] = {}
            for scope in scopes:
                for spec in ACTIONS:
                    if spec.scope == scope:
                        for k in keys_in_force.get(spec.id, spec.keys).split(","):
                            out.setdefault(k, spec)
            return out

        live = table("root")
        prefix = frozenset(k for k, spec in live.items() if spec.id == "pane-prefix")
        return cls(
            prefix,
            live,
            table("prefix", "sessions", "app"),
            table("copy-mode", "root"),
            {name: table(copy_keys.scope(name)) for name in copy_keys.TABLES},
        )

    def first_prefix(self) -> str:
        return min(self.prefix, key=len) if self.prefix else ""
