"""The live policy: ``policy.toml`` in the state dir, reloaded when it changes.

A broken file never replaces a working policy: the last good one stays in force and
the error is reported (daemon status, a status event, the log) until the file is fixed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

from console.policy import PolicyConfig, PolicyError, load_policy

log = logging.getLogger("agent-console.policy")


class PolicySource:
    def __init__(self, path: Path, on_change: Callable[[], None] | None = None) -> None:
        self.path = path
        self.on_change = on_change
        self.config = PolicyConfig()
        self.error = ""
        self.loaded_from = "defaults"
        self._stamp: tuple[int, int, int] | None = None

    def __call__(self) -> PolicyConfig:
        return self.config

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def reload(self) -> bool:
        """Re-read the file if it changed; True when something changed (policy or error)."""
        stamp = self._file_stamp()
        if stamp == self._stamp and self._stamp is not None:
            return False
        first = self._stamp is None and self.loaded_from == "defaults" and not self.error
        self._stamp = stamp
        if stamp is None:
            if self.loaded_from == "defaults" and not self.error:
                return False
            self.config, self.error, self.loaded_from = PolicyConfig(), "", "defaults"
            log.info("%s removed; using the default policy", self.path)
            return True
        try:
            config = load_policy(self.path)
        except PolicyError as exc:
            self.error = f"{self.path}: {exc}; keeping the last good policy ({self.loaded_from})"
            log.error("%s", self.error)
            return True
        changed = config != self.config or bool(self.error) or first
        self.config, self.error, self.loaded_from = config, "", str(self.path)
        if changed:
            log.info("policy loaded from %s", self.path)
        return changed

    async def watch(self, interval_s: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval_s)
            if self.reload() and self.on_change is not None:
                self.on_change()

    def to_dict(self) -> dict[str, object]:
        return {"source": self.loaded_from, "error": self.error, "config": self.config.to_dict()}
