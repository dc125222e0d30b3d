"""Whether the history is intact, found out at start and shown until it is fixed.

Opening the store checks the chain's tail against its anchors (a replaced database, a
truncated tail: ``Store.open_findings``); a full walk of the chain, in a thread so the
daemon answers meanwhile, finds what that cannot (a row deleted or edited inside, with
the append-only triggers dropped and restored around it). Its progress and its result
are part of the daemon's status: ``daemon status`` prints them, the console turns a
mismatch into a red header pill and a notification, and ``daemon start --check`` exits
non-zero on it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from console.protocol.status import IntegrityFinding, IntegrityStatus
from console.store import Store, StoreUnavailable

log = logging.getLogger("agent-console.integrity")

PUBLISH_EVERY_S = 0.5  # progress reaches subscribers at most this often
MAX_REST_S = 0.05  # the walk's longest pause between two stretches of rows


class IntegrityCheck:
    def __init__(self, store: Store, on_change: Callable[[], None]) -> None:
        self.store = store
        self.on_change = on_change
        self.findings: list[IntegrityFinding] = [
            IntegrityFinding(what=f.what, first_bad_seq=f.first_bad_seq, message=f.message, found="at start")
            for f in store.open_findings
        ]
        self.state = "checking"
        self.checked = 0
        self.total = store.opened_tail[0]
        self.finished_at: float | None = None
        self.error = ""
        self._published = 0.0

    def status(self) -> IntegrityStatus:
        return IntegrityStatus(
            state="tampered" if self.findings else self.state,
            checked=self.checked,
            total=self.total,
            findings=list(self.findings),
            finished_at=self.finished_at,
            error=self.error,
        )

    async def run(self) -> None:
        """The full verify, once, in a thread."""
        loop = asyncio.get_running_loop()
        last = [time.monotonic()]

        def progress(checked: int) -> None:
            # The walk shares the interpreter with the event loop: it rests as long as it
            # worked, so a long history is checked at half speed rather than at the cost of
            # the operator's latency.
            worked = time.monotonic() - last[0]
            time.sleep(min(worked, MAX_REST_S))
            last[0] = time.monotonic()
            loop.call_soon_threadsafe(self._progress, checked)

        try:
            report = await asyncio.to_thread(self.store.verify, progress=progress)
        except StoreUnavailable as exc:
            self.state, self.error = "failed", str(exc)
            log.error("history: the full verify could not run: %s", exc)
        else:
            self.checked = report.checked
            self.total = max(self.total, report.checked)
            # Rows past the head anchor have their own flag (status "history").
            if not report.ok and report.what != "unaccepted":
                found = (report.what, report.first_bad_seq)
                if not any((f.what, f.first_bad_seq) == found for f in self.findings):
                    self.findings.append(
                        IntegrityFinding(
                            what=report.what,
                            first_bad_seq=report.first_bad_seq,
                            message=report.message,
                            found="full verify",
                        )
                    )
                log.error("history TAMPERED: %s", report.message)
            self.state = "intact"
            log.info("history: %d rows verified at start", report.checked)
        self.finished_at = time.time()
        self.on_change()

    def _progress(self, checked: int) -> None:
        self.checked = checked
        now = time.monotonic()
        if now - self._published >= PUBLISH_EVERY_S:
            self._published = now
            self.on_change()
