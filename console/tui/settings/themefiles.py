"""Theme files: TOML with the fields of a Textual theme, checked before Textual sees them.

    name = "dark"
    dark = true
    primary = "#4aa3ff"
    background = "#11151c"
    ...
    [variables]                      # any Textual design variable
    "footer-key-foreground" = "#4aa3ff"

:mod:`console.tui.settings.themes` turns a checked spec into a ``textual.theme.Theme``; the
colours themselves are parsed there, by Textual, which knows every form it accepts.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COLOR_FIELDS = (
    "primary",
    "secondary",
    "warning",
    "error",
    "success",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)
NUMBER_FIELDS = ("luminosity_spread", "text_alpha")


class ThemeError(ValueError):
    """A theme file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class ThemeSpec:
    name: str
    fields: dict[str, Any]
    variables: dict[str, str] = field(default_factory=dict)
    path: Path | None = None


def parse_theme(text: str, name: str, path: Path | None = None) -> ThemeSpec:
    where = str(path) if path else name
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ThemeError(f"{where}: not valid TOML: {exc}") from None
    allowed = {"name", "dark", "variables", *COLOR_FIELDS, *NUMBER_FIELDS}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ThemeError(f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(allowed))}")
    declared = data.get("name", name)
    if declared != name:
        raise ThemeError(f"{where}: name = {declared!r} but the file is {name}.toml; make them match")
    if "primary" not in data:
        raise ThemeError(f'{where}: primary is required (a colour such as "#4aa3ff")')
    fields: dict[str, Any] = {}
    for key in COLOR_FIELDS:
        if key in data:
            if not isinstance(data[key], str) or not data[key].strip():
                raise ThemeError(f'{where}: {key}: expected a colour string such as "#4aa3ff"')
            fields[key] = data[key].strip()
    for key in NUMBER_FIELDS:
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ThemeError(f"{where}: {key}: expected a number between 0 and 1")
            fields[key] = float(value)
    if "dark" in data:
        if not isinstance(data["dark"], bool):
            raise ThemeError(f"{where}: dark: expected true or false")
        fields["dark"] = data["dark"]
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(isinstance(v, str) for v in variables.values()):
        raise ThemeError(f"{where}: [variables] must map variable names to strings")
    return ThemeSpec(name, fields, dict(variables), path)


def load_theme_file(path: Path) -> ThemeSpec:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ThemeError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_theme(text, path.stem, path)


def discover(dirs: Iterable[Path]) -> dict[str, Path]:
    """Theme name → file; a later directory (the user's) overrides an earlier one."""
    found: dict[str, Path] = {}
    for d in dirs:
        if d.is_dir():
            for path in sorted(d.glob("*.toml")):
                found[path.stem] = path
    return found
