"""The console's config file: TOML, validated up front with errors that say what to write.

Where it is read from: ``--config FILE``; else ``<state dir>/config.toml`` when a state
dir was given (so a demo or test never reads the user's file); else the platform's
config directory (``~/.config/agent-console/config.toml`` on Linux). A missing default
file means the defaults; a missing ``--config`` file is an error. User themes and
keymaps live in ``themes/`` and ``keymaps/`` next to the config file.

    theme = "dark"            # a theme name: dark, light, high-contrast, solarized, or your own
    keymap = "default"        # default, vim, emacs, or your own

    [guard]
    idle_s = 0.5              # an approval key works after the request was on screen this long

    [notifications]           # when a request arrives and you are elsewhere
    toast = true
    bell = true
    desktop = "osc777"        # osc777 | osc9 | off

    [display]
    max_chars = 2000          # agent text longer than this is cut (expand with x)
    max_lines = 40
    copy_mode_keys = "vi"     # a pane's copy mode (prefix [) reads this key table: vi | emacs

    [sessions]
    restore_layout = true     # reopen the panes (splits, zoom, sessions) as they were at quit

    [keys]                    # per-binding overrides: binding id = keys
    approve-once = "y"
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DESKTOP_KINDS = ("osc777", "osc9", "off")
COPY_MODE_KEYS = ("vi", "emacs")


class ConfigError(ValueError):
    """The config file cannot be used; the message names the file, the key and the fix."""


@dataclass(frozen=True)
class Notifications:
    toast: bool = True
    bell: bool = True
    desktop: str = "osc777"


@dataclass(frozen=True)
class Config:
    theme: str = "dark"
    keymap: str = "default"
    copy_mode_keys: str = "vi"
    guard_idle_s: float = 0.5
    notifications: Notifications = field(default_factory=Notifications)
    max_chars: int = 2000
    max_lines: int = 40
    keys: Mapping[str, Any] = field(default_factory=dict)
    restore_layout: bool = True
    path: Path | None = None

    @property
    def directory(self) -> Path | None:
        return self.path.parent if self.path else None


def platform_config_dir() -> Path:
    try:
        from platformdirs import user_config_dir
    except ImportError:  # platformdirs comes with Textual; this is a belt for odd installs
        base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        return Path(base) / "agent-console"
    return Path(user_config_dir("agent-console", appauthor=False))


def config_path(
    explicit: str | os.PathLike[str] | None, state_dir: str | os.PathLike[str] | None
) -> tuple[Path, bool]:
    """The file to read and whether it must exist."""
    if explicit:
        return Path(explicit).expanduser(), True
    if state_dir:
        return Path(state_dir).expanduser() / "config.toml", False
    return platform_config_dir() / "config.toml", False


_TYPES = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}


class _Reader:
    def __init__(self, where: str, table: Mapping[str, Any], prefix: str = "") -> None:
        self.where = where
        self.table = table
        self.prefix = prefix

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.where}: {self.prefix}{key}: {problem}")

    def get(self, key: str, kind: type, default: Any) -> Any:
        if key not in self.table:
            return default
        value = self.table[key]
        ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise self.fail(key, f"expected {_TYPES[kind]}, got {type(value).__name__} {value!r}")
        return value

    def number(self, key: str, default: float, low: float, high: float) -> float:
        value = self.get(key, float, default)
        if not math.isfinite(value) or not low <= value <= high:
            raise self.fail(key, f"must be between {low:g} and {high:g}, got {value!r}")
        return float(value)

    def integer(self, key: str, default: int, low: int, high: int) -> int:
        value = self.get(key, int, default)
        if not low <= value <= high:
            raise self.fail(key, f"must be between {low} and {high}, got {value!r}")
        return int(value)

    def choice(self, key: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.get(key, str, default)
        if value not in allowed:
            raise self.fail(
                key, f"unknown value {value!r}; allowed: " + " | ".join(f'"{a}"' for a in allowed)
            )
        return str(value)

    def name(self, key: str, default: str) -> str:
        value = self.get(key, str, default)
        if not value.strip() or len(value) > 64 or any(not (c.isalnum() or c in "-_.") for c in value):
            raise self.fail(key, f"must be a theme or keymap name (letters, digits, - _ .), got {value!r}")
        return str(value)

    def only(self, allowed: set[str]) -> None:
        unknown = sorted(set(self.table) - allowed)
        if unknown:
            raise ConfigError(
                f"{self.where}: unknown key {self.prefix}{unknown[0]}; allowed here: "
                + ", ".join(f"{self.prefix}{a}" for a in sorted(allowed))
            )

    def table_at(self, key: str) -> _Reader:
        value = self.table.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(key, "must be a table, e.g. [" + self.prefix + key + "]")
        return _Reader(self.where, value, f"{self.prefix}{key}.")


def parse_config(text: str, where: str = "config", path: Path | None = None) -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    top = _Reader(where, data)
    top.only({"theme", "keymap", "guard", "notifications", "display", "sessions", "keys"})
    guard = top.table_at("guard")
    guard.only({"idle_s"})
    notes = top.table_at("notifications")
    notes.only({"toast", "bell", "desktop"})
    display = top.table_at("display")
    display.only({"max_chars", "max_lines", "copy_mode_keys"})
    sessions = top.table_at("sessions")
    sessions.only({"restore_layout"})
    keys = top.table_at("keys").table
    # Key overrides are checked against the action table by keymaps.resolve, which knows them.
    return Config(
        theme=top.name("theme", "dark"),
        keymap=top.name("keymap", "default"),
        copy_mode_keys=display.choice("copy_mode_keys", "vi", COPY_MODE_KEYS),
        guard_idle_s=guard.number("idle_s", 0.5, 0.0, 10.0),
        notifications=Notifications(
            toast=notes.get("toast", bool, True),
            bell=notes.get("bell", bool, True),
            desktop=notes.choice("desktop", "osc777", DESKTOP_KINDS),
        ),
        max_chars=display.integer("max_chars", 2000, 80, 1_000_000),
        max_lines=display.integer("max_lines", 40, 3, 100_000),
        keys=dict(keys),
        restore_layout=sessions.get("restore_layout", bool, True),
        path=path,
    )


def load_config(path: Path, *, must_exist: bool) -> Config:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if must_exist:
            raise ConfigError(f"{path}: no such config file") from None
        return Config(path=path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_config(text, str(path), path)
