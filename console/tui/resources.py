"""Where the bundled themes and keymaps are: ``themes/`` and ``keymaps/`` at the project root."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bundled_dir(kind: str) -> Path:
    """``themes`` or ``keymaps`` shipped with agent-console."""
    if kind not in ("themes", "keymaps"):
        raise ValueError(kind)
    return ROOT / kind
