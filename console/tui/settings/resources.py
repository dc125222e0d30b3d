"""Where the bundled themes and keymaps are: ``themes/`` and ``keymaps/`` at the project
root in a checkout, ``<prefix>/share/agent-console/`` in an installed wheel."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def bundled_dir(kind: str) -> Path:
    """``themes`` or ``keymaps`` shipped with agent-console."""
    if kind not in ("themes", "keymaps"):
        raise ValueError(kind)
    checkout = ROOT / kind
    if checkout.is_dir():
        return checkout
    return Path(sys.prefix) / "share" / "agent-console" / kind
