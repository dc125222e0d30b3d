"""Shared helpers for the watcher tests (no tests here).

Timeouts below bound how long a test waits for an event before it fails; they are not
performance assertions (those live in benchmarks/watch.py).
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from console.policy.config import DEFAULT_PROTECTED
from console.policy.patterns import ProtectedPaths
from console.watch import Attributions, FileEvent, WatchStatus, WorkspaceWatcher

WAIT_S = 20.0
FAST = {"rescan_interval_s": 0.3, "settle_s": 0.5, "debounce_ms": 100, "step_ms": 10}


def write_at_once(path: Path, text: str, aside: Path) -> None:
    """Give ``path`` its content in one step (written in the directory ``aside``, under a
    name nothing protects, and renamed into place): a file created and then written is two
    changes when a loaded machine splits them across two watcher batches, and a test that
    counts changes means one."""
    temp = aside / f"aside-{os.getpid()}-{next(_asides)}.tmp"
    temp.write_text(text)
    temp.rename(path)


_asides = itertools.count()


class Recorder:
    def __init__(self) -> None:
        self.events: list[FileEvent] = []
        self.statuses: list[WatchStatus] = []

    def on_event(self, event: FileEvent) -> None:
        self.events.append(event)

    def on_status(self, status: WatchStatus) -> None:
        self.statuses.append(status)

    def find(self, pred: Callable[[FileEvent], bool]) -> list[FileEvent]:
        return [e for e in self.events if pred(e)]

    async def wait_for(self, pred: Callable[[FileEvent], bool], what: str = "event") -> FileEvent:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_S
        while True:
            found = self.find(pred)
            if found:
                return found[0]
            if loop.time() > deadline:
                seen = [(e.kind.value, e.path, e.source) for e in self.events[-40:]]
                raise AssertionError(f"no {what} within {WAIT_S}s; last events: {seen}")
            await asyncio.sleep(0.02)

    async def wait_path(self, path: str, kind: str | None = None) -> FileEvent:
        return await self.wait_for(
            lambda e: e.path == path and (kind is None or e.kind.value == kind), f"{kind or 'any'} {path!r}"
        )


async def wait_status(
    watcher: WorkspaceWatcher, pred: Callable[[WatchStatus], bool], what: str
) -> WatchStatus:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while True:
        st = watcher.status()
        if pred(st):
            return st
        if loop.time() > deadline:
            raise AssertionError(f"status never became {what}: {st}")
        await asyncio.sleep(0.02)


def codes(status: WatchStatus) -> set[str]:
    return {r.code for root in status.roots for r in root.reasons}


@asynccontextmanager
async def watching(
    *roots: Path | str,
    patterns: tuple[str, ...] = DEFAULT_PROTECTED,
    attributions: Attributions | None = None,
    **tuning: object,
) -> AsyncIterator[tuple[WorkspaceWatcher, Recorder]]:
    rec = Recorder()
    protected = ProtectedPaths(patterns)
    watcher = WorkspaceWatcher(
        protected_for=lambda _root: protected,
        attributions=attributions or Attributions(),
        on_event=rec.on_event,
        on_status=rec.on_status,
        **{**FAST, **tuning},  # type: ignore[arg-type]
    )
    try:
        for root in roots:
            await watcher.add_root(str(root))
        yield watcher, rec
    finally:
        await watcher.close()


def workspace(tmp_path: Path, name: str = "ws") -> Path:
    """A small repository-like tree."""
    ws = tmp_path / name
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "objects" / "ab").mkdir(parents=True)
    (ws / ".git" / "refs" / "heads").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (ws / ".git" / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\nexit 0\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("print('hi')\n")
    (ws / "node_modules" / "left-pad").mkdir(parents=True)
    (ws / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    (ws / ".env").write_text("TOKEN=old\n")
    return ws


def write(path: Path, text: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def replace_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp~")
    tmp.write_text(text)
    os.replace(tmp, path)
