"""The typed-ahead guard: an approval key does nothing until the operator could have read.

A request that pops up while the operator is typing must not be approved by the next
keystroke. An approve key counts only when the selected request has been on screen,
unchanged, for ``idle_s`` and nothing of it is truncated (or it was expanded). The
clock is injected so the rule is testable without sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    why: str = ""


class TypeAheadGuard:
    def __init__(self, idle_s: float = 0.5, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_s = idle_s
        self.clock = clock
        self._shown: str | None = None
        self._since = 0.0
        self._truncated = False

    def shown(self, key: str | None, *, truncated: bool) -> None:
        """The detail now shows ``key`` (a request id plus what of it is displayed)."""
        if key != self._shown:
            self._shown = key
            self._since = self.clock()
        self._truncated = truncated

    def hidden(self) -> None:
        """Nothing is on screen (another screen, a modal): the interval starts over."""
        self._shown = None

    def check(self, key: str | None) -> Verdict:
        if key is None or key != self._shown:
            return Verdict(False, "ignored: the request is not on screen yet")
        if self._truncated:
            return Verdict(False, "ignored: part of this request is hidden — press x to expand it first")
        waited = self.clock() - self._since
        if waited < self.idle_s:
            return Verdict(
                False,
                f"ignored: shown {waited:.1f} s ago; approval keys work after {self.idle_s:g} s on screen",
            )
        return Verdict(True)
