"""The live policy: ``policy.toml`` in the state dir, reloaded when it changes.

A broken file never replaces a working policy, and never becomes the defaults (which
are weaker than many a policy: tripwire ``alert``, approval ``on-request``). At start a
broken file stops the daemon from starting (:class:`BrokenPolicy`, the key and what it
accepts); while it runs, the last good policy stays in force and the error is reported
(daemon status, a status event, the log, the console's header and a notification)
until the file is fixed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

import msgspec

from console.policy import PolicyConfig, PolicyError, load_policy
from console.protocol.status import PolicyConfigView, PolicyStatus

log = logging.getLogger("agent-console.policy")


class BrokenPolicy(Exception):
    """``policy.toml`` is invalid when the daemon starts: it does not start."""


def _no_check(config: PolicyConfig) -> None:
    return None


class PolicySource:
    def __init__(
        self,
        path: Path,
        on_change: Callable[[], None] | None = None,
        *,
        check: Callable[[PolicyConfig], None] = _no_check,
    ) -> None:
        """``check`` adds the host's own rules to the file's (raises PolicyError)."""
        self.path = path
        self.on_change = on_change
        self.check = check
        self.config = PolicyConfig()
        self.error = ""
        self.problem = ""  # what is wrong with the file, as PolicyError said it
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
            self.config, self.error, self.problem, self.loaded_from = PolicyConfig(), "", "", "defaults"
            log.info("%s removed; using the default policy", self.path)
            return True
        try:
            config = load_policy(self.path)
            self.check(config)
        except PolicyError as exc:
            self.problem = str(exc)
            self.error = f"{self.path}: {exc}; keeping the last good policy ({self.loaded_from})"
            log.error("%s", self.error)
            return True
        changed = config != self.config or bool(self.error) or first
        self.config, self.error, self.problem, self.loaded_from = config, "", "", str(self.path)
        if changed:
            log.info("policy loaded from %s", self.path)
        return changed

    def load_at_start(self) -> None:
        """The first read: a broken file is :class:`BrokenPolicy`, never the defaults."""
        self.reload()
        if self.error:
            raise BrokenPolicy(
                f"{self.path}: {self.problem}; "
                "the daemon does not start on a broken policy (it would run on weaker defaults): "
                "fix the file, or move it aside to use the defaults"
            )

    async def watch(self, interval_s: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval_s)
            if self.reload() and self.on_change is not None:
                self.on_change()

    def status(self) -> PolicyStatus:
        return PolicyStatus(
            source=self.loaded_from,
            error=self.error,
            config=msgspec.convert(self.config.to_dict(), PolicyConfigView),
        )
