"""The TUI's reading of a ``sh -c`` script: the contract's split, cross-checked by bash itself.

The splitting and the cross-checks live in :mod:`console.contract.shell` (pure, usable
without Textual); this adapter adds bash's own parse (:mod:`console.tui.model.bash_parse`)
and caches the result per script, since the detail is redrawn often.
"""

from __future__ import annotations

import contextlib
import threading
from functools import lru_cache

from console.contract.shell import SHELLS, Chain, Part, PartKind, checked_chain, shell_script, split_chain
from console.tui.model.bash_parse import bash_parse

__all__ = ["SHELLS", "Chain", "Part", "PartKind", "chain_for", "shell_script", "split_chain"]


def _warm_up() -> None:
    """bashlex builds its parser tables on import (about a second): do it before the first request."""
    with contextlib.suppress(ImportError):
        import bashlex  # type: ignore[import-untyped]  # noqa: F401


threading.Thread(target=_warm_up, name="bashlex-warm-up", daemon=True).start()


@lru_cache(maxsize=256)
def chain_for(shell: str, script: str) -> Chain:
    """The split of ``script`` as ``shell`` runs it, with every reason it may be uncertain."""
    return checked_chain(script, shell, bash_parse)
