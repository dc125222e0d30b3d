"""Everything the console is configured with, resolved and checked before Textual starts.

A bad theme name, a broken theme file, a keymap clash or a wrong config value is
reported as one clear error while the terminal is still a terminal, not as a crash
inside the app.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from textual.theme import Theme

from console.tui.settings.config import Config
from console.tui.settings.keymaps import (
    Keymap,
    KeymapError,
    clashes,
    discover,
    expand_tables,
    load_keymap_file,
    resolve,
)
from console.tui.settings.resources import bundled_dir
from console.tui.settings.themes import load_themes

PREFIX = "pane-prefix"
TMUX_PREFIX = "ctrl+b"  # tmux's own prefix
BESIDE_TMUX = "ctrl+a"  # screen's, the usual choice for a multiplexer inside tmux


class SettingsError(ValueError):
    """A setting that cannot be used; the message says which and how to fix it."""


@dataclass
class Settings:
    config: Config
    themes: dict[str, Theme]
    theme: str
    keymaps: dict[str, Path]
    keymap: str
    keys: dict[str, str] = field(default_factory=dict)
    # Old names a keymap or the config still uses (each once), for the console to show.
    notices: list[str] = field(default_factory=list)
    # The console runs inside tmux ($TMUX), whose own prefix is ctrl+b.
    in_tmux: bool = False

    def keymap_keys(self, name: str) -> dict[str, str]:
        """The keys in force with keymap ``name`` and the config's overrides."""
        path = self.keymaps.get(name)
        if path is None:
            raise SettingsError(f"no keymap {name!r}; available: {', '.join(sorted(self.keymaps))}")
        keymap: Keymap = load_keymap_file(path)
        return self.resolved(keymap)

    def resolved(self, keymap: Keymap | None) -> dict[str, str]:
        """:func:`resolve` with the config's overrides, and the pane prefix moved off tmux's."""
        where = str(self.config.path) if self.config.path else "config"
        found: list[str] = []
        keys = resolve(keymap, self.config.keys, where, found)
        if self.in_tmux:
            found.extend(self._beside_tmux(keys, where))
        self.notices.extend(n for n in found if n not in self.notices)
        return keys

    def _beside_tmux(self, keys: dict[str, str], where: str) -> list[str]:
        """Inside tmux, ctrl+b is tmux's prefix: every pane command became ``C-b C-b …``.
        The pane prefix becomes ctrl+a (screen's), unless the config chose one; either
        way the console says so once, with how to change it."""
        if keys.get(PREFIX) != TMUX_PREFIX:
            return []
        explicit = PREFIX in expand_tables(self.config.keys, where)[0]
        change = f"change it: pane-prefix under [keys.root] in {where}"
        shared = f"inside tmux, {TMUX_PREFIX} is tmux's prefix too: press it twice for a pane's; {change}"
        if explicit:
            return [shared]
        keys[PREFIX] = BESIDE_TMUX
        if clashes(keys):
            keys[PREFIX] = TMUX_PREFIX
            return [shared]
        return [f"inside tmux: the pane prefix is {BESIDE_TMUX} ({TMUX_PREFIX} stays tmux's); {change}"]


def search_dirs(config: Config, kind: str) -> list[Path]:
    dirs = [bundled_dir(kind)]
    if config.directory is not None:
        dirs.append(config.directory / kind)
    return dirs


def prepare(config: Config, *, theme: str | None = None, keymap: str | None = None) -> Settings:
    """Load themes and keymaps and pick the ones asked for (argument, else config)."""
    themes = load_themes(search_dirs(config, "themes"))
    theme_name = theme or config.theme
    if theme_name not in themes:
        raise SettingsError(
            f"no theme {theme_name!r}; available: {', '.join(sorted(themes))} "
            f"(add your own as {search_dirs(config, 'themes')[-1]}/NAME.toml)"
        )
    keymaps = discover(search_dirs(config, "keymaps"))
    keymap_name = keymap or config.keymap
    settings = Settings(
        config, themes, theme_name, keymaps, keymap_name, in_tmux=bool(os.environ.get("TMUX"))
    )
    if keymap_name not in keymaps and keymap_name != "default":
        raise SettingsError(
            f"no keymap {keymap_name!r}; available: {', '.join(sorted(keymaps))} "
            f"(add your own as {search_dirs(config, 'keymaps')[-1]}/NAME.toml)"
        )
    try:
        settings.keys = (
            settings.keymap_keys(keymap_name) if keymap_name in keymaps else settings.resolved(None)
        )
    except KeymapError as exc:
        raise SettingsError(str(exc)) from None
    return settings
