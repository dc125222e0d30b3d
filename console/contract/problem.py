"""Problems: the safe description of why an input was refused.

A problem names the field and a stable reason code, says whether retrying the same input
could succeed, and hints at the fix. It never carries the rejected value: that value is
untrusted and may be a secret, a terminal escape or megabytes long.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Problem:
    field: str
    reason: str
    hint: str
    retryable: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "reason": self.reason,
            "retryable": self.retryable,
            "hint": self.hint,
        }

    def __str__(self) -> str:
        where = self.field or "input"
        return f"{where}: {self.reason} — {self.hint}"


class InvalidInput(ValueError):
    """Raised with a :class:`Problem` when an operation (or other input) is invalid."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def invalid(field: str, reason: str, hint: str, *, retryable: bool = False) -> InvalidInput:
    return InvalidInput(Problem(field, reason, hint, retryable))
