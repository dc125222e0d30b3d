"""How a request differs from earlier decisions about the same program.

"You approved ``pytest -q`` 12 minutes ago; this one adds ``--force``" is the question
an operator actually has. Arguments are compared as whole words (never characters), so
``--dry-run`` turning into ``--dry-runx`` shows as one removed and one added argument.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass(frozen=True, slots=True)
class ArgChange:
    sign: str  # "+" added in the new argv, "-" only in the old one
    arg: str


def argv_diff(old: Sequence[str], new: Sequence[str]) -> list[ArgChange]:
    """The words removed from ``old`` and added in ``new``, in argv order."""
    changes: list[ArgChange] = []
    matcher = SequenceMatcher(a=list(old), b=list(new), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            changes.extend(ArgChange("-", a) for a in old[i1:i2])
        if tag in ("replace", "insert"):
            changes.extend(ArgChange("+", b) for b in new[j1:j2])
    return changes


def similarity(old: Sequence[str], new: Sequence[str]) -> float:
    return SequenceMatcher(a=list(old), b=list(new), autojunk=False).ratio()


def split_command(command: str) -> list[str] | None:
    """The argv of a history ``command`` column (written with ``shlex.join``), or None."""
    try:
        return shlex.split(command)
    except ValueError:
        return None


def closest(new: Sequence[str], candidates: Sequence[Sequence[str]]) -> int | None:
    """Index of the candidate most like ``new`` (the most recent wins a tie), or None."""
    best: int | None = None
    best_score = -1.0
    for index, argv in enumerate(candidates):
        score = similarity(argv, new)
        if score > best_score:
            best, best_score = index, score
    return best
