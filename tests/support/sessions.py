"""Shared helpers for the session tests (no tests here): a real manager in a temp state dir."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from console.sessions import SessionManager


def child_env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}


async def until(cond: Callable[[], object], timeout: float = 15.0, what: str = "condition") -> None:
    """Poll `cond` until true; a deadline, not a timing assertion."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def start_manager(state: Path, **kw: object) -> SessionManager:
    kw.setdefault("sample_interval_s", 0.2)
    m = SessionManager(state, **kw)  # type: ignore[arg-type]
    await m.start()
    return m


def shell(m: SessionManager, home: Path, script: str, **kw: object) -> str:
    """A session running `sh -c script`."""
    kw.setdefault("owner", "operator")
    info = m.create(["sh", "-c", script], cwd=str(home), env=child_env(home), **kw)  # type: ignore[arg-type]
    return info.id
