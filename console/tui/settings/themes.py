"""Theme files made into Textual themes: bundled ``themes/*.toml`` plus the user's own."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from textual.color import Color, ColorParseError
from textual.theme import Theme

from console.tui.settings.themefiles import COLOR_FIELDS, ThemeError, ThemeSpec, discover, load_theme_file

FALLBACK = Theme(
    name="dark",
    primary="#5fa8ff",
    secondary="#2e5f8a",
    accent="#f5b342",
    warning="#f0a020",
    error="#ff5f6d",
    success="#4ec27a",
    foreground="#d8dee9",
    background="#0f1419",
    surface="#161b22",
    panel="#1f2630",
    dark=True,
)


def to_theme(spec: ThemeSpec) -> Theme:
    where = str(spec.path) if spec.path else spec.name
    for key in COLOR_FIELDS:
        if key in spec.fields:
            try:
                Color.parse(spec.fields[key])
            except ColorParseError:
                raise ThemeError(
                    f'{where}: {key}: {spec.fields[key]!r} is not a colour (use e.g. "#4aa3ff")'
                ) from None
    return Theme(name=spec.name, variables=dict(spec.variables), **spec.fields)


def load_themes(dirs: Iterable[Path]) -> dict[str, Theme]:
    """Every theme in ``dirs`` (later directories override); a broken file is an error."""
    themes = {FALLBACK.name: FALLBACK}
    for name, path in discover(dirs).items():
        themes[name] = to_theme(load_theme_file(path))
    return themes
