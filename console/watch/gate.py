"""Opens in the hot directories wait until the daemon has read who opens.

A write names its writer by pid, but a short-lived writer (``sh -c 'echo … >
.git/hooks/x'``, ``cp``, ``git config``'s lock file) can be gone before anyone reads
``/proc/PID``. A ``FAN_OPEN_PERM`` mark on a hot directory makes the kernel hold every
open of a file in it until the daemon answers; the gate reads the opener then (its
cgroup, its marker: console/sessions/lineage.py, ``Lineage.seen``) and always answers
"allow". It decides nothing; it only makes sure the writer is still there to be read.

One thread, which never opens anything but ``/proc`` files (an open of a held file
from this thread would wait for itself). If it fails, the group is closed, which lets
every held open go on (the kernel's answer for a closed group), and the lane falls
back to the other evidence.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
from collections.abc import Callable

from console.watch import fanotify

log = logging.getLogger("console.watch")

NO_GATE_VAR = "AGENT_CONSOLE_NO_OPEN_GATE"  # "1": no permission events
GATE_MASK = fanotify.FAN_OPEN_PERM | fanotify.FAN_EVENT_ON_CHILD


class OpenGate:
    def __init__(self, on_open: Callable[[int], object]) -> None:
        self._on_open = on_open
        self._group = -1
        if fanotify.available() and os.environ.get(NO_GATE_VAR) != "1":
            self._group = fanotify.init(fanotify.FAN_CLASS_CONTENT | fanotify.FAN_UNLIMITED_QUEUE)
        self._lock = threading.Lock()
        self._marked: set[str] = set()
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._thread: threading.Thread | None = None
        self.held = 0  # opens held and answered

    @property
    def active(self) -> bool:
        return self._group >= 0

    def mark(self, path: str) -> None:
        with self._lock:
            if self._group < 0 or path in self._marked:
                return
            if fanotify.mark(self._group, path, GATE_MASK):
                self._marked.add(path)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="watch:open-gate", daemon=True)
                self._thread.start()

    def unmark(self, path: str) -> None:
        with self._lock:
            if path in self._marked:
                self._marked.discard(path)
                fanotify.mark(self._group, path, GATE_MASK, remove=True)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(2)
        self._shut()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake_r = self._wake_w = -1

    def _shut(self) -> None:
        with self._lock:
            group, self._group = self._group, -1
            self._marked.clear()
        if group >= 0:
            with contextlib.suppress(OSError):
                os.close(group)  # every open still held goes on

    def _run(self) -> None:
        group = self._group
        poller = select.poll()
        poller.register(group, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        try:
            while True:
                ready = poller.poll()
                if any(fd == self._wake_r for fd, _ in ready):
                    return
                try:
                    data = os.read(group, 64 * 1024)
                except BlockingIOError:
                    continue
                for event in fanotify.read_opens(data):
                    try:
                        self._on_open(event.pid)
                    except Exception:
                        log.exception("could not read the process %d opening in a hot directory", event.pid)
                    finally:
                        fanotify.allow(group, event)
                        self.held += 1
        except Exception:
            log.exception("the open gate failed; held opens go on and it is off")
            self._shut()
