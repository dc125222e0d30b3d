"""Everything the console is configured with, resolved and checked before Textual starts.

A bad theme name, a broken theme file, a keymap clash or a wrong config value is
reported as one clear error while the terminal is still a terminal, not as a crash
inside the app.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from textual.theme import Theme

from console.tui.settings.config import Config
from console.tui.settings.keymaps import Keymap, KeymapError, discover, load_keymap_file, resolve
from console.tui.settings.resources import bundled_dir
from console.tui.settings.themes import load_themes


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

    def keymap_keys(self, name: str) -> dict[str, str]:
        """The keys in force with keymap ``name`` and the config's overrides."""
        path = self.keymaps.get(name)
        if path is None:
            raise SettingsError(f"no keymap {name!r}; available: {', '.join(sorted(self.keymaps))}")
        keymap: Keymap = load_keymap_file(path)
        where = str(self.config.path) if self.config.path else "config"
        found: list[str] = []
        keys = resolve(keymap, self.config.keys, where, found)
        self.notices.extend(n for n in found if n not in self.notices)
        return keys


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
    settings = Settings(config, themes, theme_name, keymaps, keymap_name)
    if keymap_name not in keymaps and keymap_name != "default":
        raise SettingsError(
            f"no keymap {keymap_name!r}; available: {', '.join(sorted(keymaps))} "
            f"(add your own as {search_dirs(config, 'keymaps')[-1]}/NAME.toml)"
        )
    try:
        settings.keys = (
            settings.keymap_keys(keymap_name)
            if keymap_name in keymaps
            else resolve(None, config.keys, str(config.path or "config"), settings.notices)
        )
    except KeymapError as exc:
        raise SettingsError(str(exc)) from None
    return settings
