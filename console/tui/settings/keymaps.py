"""Keymap files: binding id → keys, checked before Textual ever sees them.

A keymap file names only the bindings it changes::

    name = "vim"
    description = "hjkl-style movement"
    [keys]
    cursor-down = "j,down"
    cursor-first = ["g", "home"]
    [keys.root]              # optional: the bindings of one key table, as tmux's bind -T
    pane-prefix = "ctrl+a"

Every binding id is unique, so a table only groups (and is checked: a binding in the
wrong table is an error). A terminal pane's tables have tmux's names: ``root`` (the
program has the keys), ``prefix`` (the key after the prefix), ``copy-mode`` (scrolled
back). Their old names (``pane-live``, ``pane``, ``pane-scroll``: :data:`OLD_TABLES`)
still work, with one notice per file saying what to write instead (:attr:`Keymap.notices`,
shown by the console when it starts).

The keys in force are the defaults of :data:`console.tui.settings.actions.ACTIONS`, then the
chosen keymap, then the config file's ``[keys]``. A key bound to two actions that are
active at once would silently lose one of them in Textual; here it is an error that
names both.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.tui.settings import copy_keys  # noqa: F401  (registers copy mode's tables first)
from console.tui.settings.actions import ACTIONS, by_id, contexts, default_keys

# A terminal pane's key tables as they were named before they took tmux's names.
OLD_TABLES = {"pane-live": "root", "pane": "prefix", "pane-scroll": "copy-mode"}

# The spelling Textual uses for punctuation keys; keys are compared in this form.
_PUNCTUATION = {
    "?": "question_mark",
    "/": "slash",
    ":": "colon",
    ";": "semicolon",
    "<": "less_than_sign",
    ">": "greater_than_sign",
    "+": "plus",
    "-": "minus",
    "=": "equals_sign",
    "!": "exclamation_mark",
    "@": "at",
    "#": "number_sign",
    "$": "dollar_sign",
    "%": "percent_sign",
    "^": "circumflex_accent",
    "&": "ampersand",
    "*": "asterisk",
    "(": "left_parenthesis",
    ")": "right_parenthesis",
    "[": "left_square_bracket",
    "]": "right_square_bracket",
    "{": "left_curly_bracket",
    "}": "right_curly_bracket",
    "|": "vertical_line",
    "\\": "backslash",
    "'": "apostrophe",
    '"': "quotation_mark",
    "`": "grave_accent",
    "~": "tilde",
    ".": "full_stop",
    ",": "comma",
    "_": "underscore",
    " ": "space",
}
_KEY = re.compile(r"(?:(?:ctrl|alt|shift|meta|super|hyper)\+)*(?:[A-Za-z0-9]|[a-z][a-z0-9_]*)")


class KeymapError(ValueError):
    """A keymap or key override that cannot be used; the message says where and why."""


@dataclass(frozen=True)
class Keymap:
    name: str
    description: str = ""
    keys: Mapping[str, str] = field(default_factory=dict)
    path: Path | None = None
    notices: tuple[str, ...] = ()  # old names the file still uses, and what to write instead


def normalize_key(key: str) -> str:
    key = key.strip()
    if not key:
        raise KeymapError("an empty key")
    if len(key) == 1 and key in _PUNCTUATION:
        return _PUNCTUATION[key]
    if "+" in key[:-1]:
        *mods, last = key.split("+")
        return "+".join([*(m.lower() for m in mods), _PUNCTUATION.get(last, last)])
    if not _KEY.fullmatch(key):
        raise KeymapError(f"{key!r} is not a key name (e.g. a, A, ctrl+n, f2, pagedown, question_mark)")
    return key


def normalize_keys(value: Any, where: str) -> str:
    """A key list from TOML (``"j,down"`` or ``["j", "down"]``) in Textual's comma form."""
    if isinstance(value, str):
        parts = value.split(",") if value.strip() != "," else [","]
    elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        parts = value
    else:
        raise KeymapError(f'{where}: expected a key or a list of keys, e.g. "j,down" or ["j", "down"]')
    try:
        keys = [normalize_key(p) for p in parts]
    except KeymapError as exc:
        raise KeymapError(f"{where}: {exc}") from None
    return ",".join(dict.fromkeys(keys))


def check_ids(mapping: Mapping[str, Any], where: str) -> None:
    known = by_id()
    for binding_id in mapping:
        if binding_id not in known:
            close = [k for k in known if k.split("-")[-1] in binding_id or binding_id in k][:3]
            hint = (
                f"; did you mean {', '.join(close)}?"
                if close
                else "; the help screen (?) and docs/console.md list them"
            )
            raise KeymapError(f"{where}: unknown binding id {binding_id!r}{hint}")


def expand_tables(keys: Mapping[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
    """``[keys]`` with its tables (``[keys.root]``…) made flat, binding id → keys, and the
    deprecation notice (at most one) if a table has an old name (:data:`OLD_TABLES`)."""
    table_of = {spec.id: spec.scope for spec in ACTIONS}
    tables = set(table_of.values())
    flat: dict[str, Any] = {}
    table_given: dict[str, str] = {}  # binding id -> the [keys.…] table that gave it
    old: list[str] = []
    for name, value in keys.items():
        if not isinstance(value, dict):
            if name in table_given:
                # TOML keeps an inline table's place, so a table may come before this.
                raise KeymapError(
                    f"{where}: {name} is given twice ([keys.{table_given[name]}] and elsewhere)"
                )
            flat[name] = value
            continue
        table = OLD_TABLES.get(name, name)
        if name in OLD_TABLES:
            old.append(name)
        if table not in tables:
            raise KeymapError(
                f"{where}: [keys.{name}] is not a key table; the tables are {', '.join(sorted(tables))}"
            )
        check_ids(value, f"{where}: [keys.{name}]")
        for binding_id, keys_of in value.items():
            if table_of[binding_id] != table:
                raise KeymapError(
                    f"{where}: [keys.{name}]: {binding_id} is in the {table_of[binding_id]} table, not {table}"
                )
            if binding_id in flat:
                raise KeymapError(f"{where}: {binding_id} is given twice ([keys.{name}] and elsewhere)")
            flat[binding_id] = keys_of
            table_given[binding_id] = name
    notices = []
    if old:
        renamed = ", ".join(f"[keys.{n}] is now [keys.{OLD_TABLES[n]}]" for n in old)
        notices.append(
            f"{where}: {renamed} (the key tables took tmux's names); the old "
            f"name{'s still work' if len(old) > 1 else ' still works'} for now, please rename"
        )
    return flat, notices


def parse_keymap(text: str, name: str, path: Path | None = None) -> Keymap:
    where = str(path) if path else name
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KeymapError(f"{where}: not valid TOML: {exc}") from None
    unknown = set(data) - {"name", "description", "keys"}
    if unknown:
        raise KeymapError(
            f"{where}: unknown top-level key(s) {', '.join(sorted(unknown))}; allowed: name, description, keys"
        )
    keys = data.get("keys", {})
    if not isinstance(keys, dict):
        raise KeymapError(f"{where}: [keys] must be a table of binding id = keys")
    keys, notices = expand_tables(keys, where)
    check_ids(keys, where)
    normalized = {k: normalize_keys(v, f"{where}: keys.{k}") for k, v in keys.items()}
    description = data.get("description", "")
    if not isinstance(description, str):
        raise KeymapError(f"{where}: description must be a string")
    declared = data.get("name", name)
    if declared != name:
        raise KeymapError(f"{where}: name = {declared!r} but the file is {name}.toml; make them match")
    return Keymap(name, description, normalized, path, tuple(notices))


def load_keymap_file(path: Path) -> Keymap:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KeymapError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_keymap(text, path.stem, path)


def discover(dirs: Iterable[Path]) -> dict[str, Path]:
    """Keymap name → file; a later directory (the user's) overrides an earlier one."""
    found: dict[str, Path] = {}
    for d in dirs:
        if d.is_dir():
            for path in sorted(d.glob("*.toml")):
                found[path.stem] = path
    return found


def clashes(keys: Mapping[str, str]) -> list[str]:
    """Keys bound to two actions that are active at the same time, as sentences."""
    table = by_id()
    problems: list[str] = []
    for context, scopes in contexts().items():
        seen: dict[str, str] = {}
        for binding_id, key_list in keys.items():
            spec = table.get(binding_id)
            if spec is None or spec.scope not in scopes:
                continue
            for key in key_list.split(","):
                other = seen.get(key)
                if other is not None and other != binding_id:
                    problems.append(
                        f"{key} is bound to both {other} and {binding_id} (in the {context} view)"
                    )
                seen[key] = binding_id
    return sorted(set(problems))


def resolve(
    keymap: Keymap | None,
    overrides: Mapping[str, Any] | None = None,
    where: str = "config",
    notices: list[str] | None = None,
) -> dict[str, str]:
    """The keys in force: defaults, then the keymap, then overrides; clashes are an error.
    The keymap's and the overrides' deprecation notices are added to ``notices``."""
    keys = {k: normalize_keys(v, f"defaults: {k}") for k, v in default_keys().items()}
    if keymap is not None:
        keys.update(keymap.keys)
        if notices is not None:
            notices.extend(keymap.notices)
    if overrides:
        overrides, found = expand_tables(overrides, f"{where}: [keys]")
        if notices is not None:
            notices.extend(found)
        check_ids(overrides, f"{where}: [keys]")
        keys.update({k: normalize_keys(v, f"{where}: keys.{k}") for k, v in overrides.items()})
    problems = clashes(keys)
    if problems:
        origin = f"keymap {keymap.name!r}" if keymap else "the default keys"
        raise KeymapError(f"{origin} with {where} overrides: " + "; ".join(problems))
    return keys
