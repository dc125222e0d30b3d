"""SVG snapshots of the sessions view and of terminal panes at a fixed size, with fixed data.

The connections are replayed (as in test_tui_snapshots.py): the list from fixed session
records, each pane's attach from a snapshot made by a real emulator fed fixed bytes, so
ids, times and contents are the same on every run. Regenerate after an intended change
with ``pytest tests/tui/test_tui_sessions_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from support.snapshot_data import NOW, ReplayClient, TypedReplay

from console.protocol.notifications import decode_notification
from console.protocol.requests import SessionsResize, read_params
from console.terminal import Screen
from console.tui.app import ConsoleApp
from console.tui.screens.sessions import SessionsScreen
from console.tui.settings.config import Config, Notifications
from console.tui.settings.prepared import prepare

SIZE = (120, 40)


def session(sid: str, title: str, argv: list[str], status: str, **kw: Any) -> dict[str, Any]:
    record = {
        "id": sid,
        "title": title,
        "argv": argv,
        "cwd": "/home/dev/project",
        "owner": "operator",
        "mode": "durable",
        "record_input": False,
        "created_at": NOW - 3600,
        "pid": 4242,
        "pid_create_time": NOW - 3600,
        "cols": 80,
        "rows": 20,
        "status": status,
        "status_text": status,
        "exit_code": None,
        "exit_signal": None,
        "ended_at": None,
        "last_output_at": NOW - 2,
        "output_bytes": 12345,
        "terminal_title": "",
        "recording_truncated": False,
        "recording_pruned": False,
        "sandboxed": False,
        "stats": {"cpu_percent": 1.5, "rss_bytes": 12 << 20, "processes": 2, "sampled_at": NOW - 1},
    }
    record.update(kw)
    return record


SESSIONS = [
    session("d6f6daf4", "", ["bash"], "running", terminal_title="dev@box: ~/project"),
    session(
        "7c01e2aa",
        "Run the dev server and watch for errors",
        ["npm", "run", "dev"],
        "running",
        owner="agent:agent-1",
        mode="interactive",
        status_text="awaiting approval",
        sandboxed=True,
        created_at=NOW - 600,
        stats={"cpu_percent": 23.4, "rss_bytes": 180 << 20, "processes": 5, "sampled_at": NOW - 1},
    ),
    session(
        "0b9f3c11",
        "pytest watcher",
        ["ptw", "--", "-q"],
        "idle",
        owner="agent:agent-2",
        last_output_at=NOW - 420,
        created_at=NOW - 7200,
    ),
    session(
        "e4a5d0c7",
        "listing\x1b[2J\u202eexe.txt [@click=app.quit]x",
        ["find", ".", "-name", "*.cfg"],
        "exited",
        status_text="exited (0)",
        exit_code=0,
        owner="agent:agent-1",
        ended_at=NOW - 300,
        created_at=NOW - 900,
    ),
]

SHELL = (
    b"\x1b]2;dev@box: ~/project\x07"
    b"\x1b[1;32mdev@box\x1b[0m:\x1b[1;34m~/project\x1b[0m$ ls -l\r\n"
    b"total 24\r\n"
    b"drwxr-xr-x 2 dev dev 4096 Nov 30 13:37 \x1b[1;34msrc\x1b[0m\r\n"
    b"drwxr-xr-x 2 dev dev 4096 Nov 30 13:37 \x1b[1;34mtests\x1b[0m\r\n"
    b"-rwxr-xr-x 1 dev dev   58 Nov 30 13:37 \x1b[1;32mbuild.sh\x1b[0m\r\n"
    b"-rw-r--r-- 1 dev dev   16 Nov 30 13:37 requirements.txt\r\n"
    b"\x1b[1;32mdev@box\x1b[0m:\x1b[1;34m~/project\x1b[0m$ python3 -m pytest -q\r\n"
    b"\x1b[32m....\x1b[0m\x1b[31mF\x1b[0m\r\n"
    b"\x1b[31m\x1b[1mFAILED\x1b[0m tests/test_app.py::test_add - assert 5 == 4\r\n"
    b"\x1b[31m1 failed\x1b[0m, \x1b[32m4 passed\x1b[0m in 0.03s \xe2\x9c\x98 \xe6\x97\xa5\xe6\x9c\xac\r\n"
    b"\x1b[1;32mdev@box\x1b[0m:\x1b[1;34m~/project\x1b[0m$ \x1b[4mgit\x1b[0m st"
)
SERVER = (
    b"\x1b[36m> app@1.0.0 dev\x1b[0m\r\n\x1b[36m> vite\x1b[0m\r\n\r\n"
    b"  \x1b[1;32mVITE v5.4.0\x1b[0m  ready in \x1b[1m312\x1b[0m ms\r\n\r\n"
    b"  \x1b[32m\xe2\x9e\x9c\x1b[0m  \x1b[1mLocal\x1b[0m:   \x1b[36mhttp://localhost:5173/\x1b[0m\r\n"
    b"\x1b[33m[vite] page reload src/app.ts\x1b[0m\r\n"
)
CONTENT = {"d6f6daf4": SHELL, "7c01e2aa": SERVER}


class ListReplay(ReplayClient):
    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        if method == "sessions.list":
            return {"sessions": SESSIONS}
        return await super().call(method, params)


class PaneReplay(TypedReplay):
    """A pane's connection: the attach snapshot from a real emulator, resizes echoed back."""

    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {}
        self.closed = asyncio.Event()
        self.sid = ""

    def on_notification(self, method: str, handler: Any) -> None:
        self.handlers[method] = handler

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        params = params or {}
        if method == "sessions.attach":
            self.sid = params["session"]
            screen = Screen(80, 20)
            screen.feed(CONTENT.get(self.sid, b""))
            snap = screen.snapshot()
            screen.close()
            return {
                "session": self.sid,
                "offset": 1000,
                "cols": 80,
                "rows": 20,
                "snapshot_base64": base64.b64encode(snap).decode(),
            }
        if method == "sessions.get":
            return {"session": next(s for s in SESSIONS if s["id"] == params["session"])}
        if method == "sessions.resize":
            # Read as the daemon reads it: a size at its default (120x40) is not sent.
            size = read_params({"session": self.sid, **params}, SessionsResize)
            # Decoded as the client decodes it before a handler sees it.
            self.handlers["session.resized"](
                decode_notification(
                    "session.resized",
                    {"session": self.sid, "offset": 1000, "cols": size.cols, "rows": size.rows},
                )
            )
            return {"cols": size.cols, "rows": size.rows}
        if method == "sessions.input":
            return {"written": len(base64.b64decode(params["data_base64"]))}
        if method == "sessions.detach":
            return {"detached": params["session"]}
        raise AssertionError(f"unexpected pane call {method}")

    async def events(self):  # type: ignore[no-untyped-def]
        await self.closed.wait()
        if False:
            yield {}

    async def close(self) -> None:
        self.closed.set()


def make() -> ConsoleApp:
    settings = prepare(Config(notifications=Notifications(toast=False, bell=False, desktop="off")))

    async def connect() -> ListReplay:
        return ListReplay()

    async def pane_connect() -> PaneReplay:
        return PaneReplay()

    app = ConsoleApp(settings, connect=connect, clock=lambda: NOW, monotonic=lambda: 0.0)  # type: ignore[arg-type]
    screen = app.views["sessions"]
    assert isinstance(screen, SessionsScreen)
    screen.connect = pane_connect  # type: ignore[assignment]
    return app


async def listed(pilot) -> SessionsScreen:  # type: ignore[no-untyped-def]
    app = pilot.app
    await pilot.press("4")
    screen = app.views["sessions"]
    for _ in range(200):
        if screen.is_mounted and screen.view.row_count() == len(SESSIONS):
            break
        await pilot.pause(0.01)
    return screen


async def settle(pilot, screen: SessionsScreen) -> None:  # type: ignore[no-untyped-def]
    for _ in range(200):
        panes = screen.layout_tree.panes()
        if panes and all(p.link.state == "live" for p in panes):
            break
        await pilot.pause(0.01)
    await pilot.pause(0.2)
    await pilot.pause()


def test_sessions_list(snap_compare):
    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await listed(pilot)
        await pilot.pause(0.1)

    assert snap_compare(make(), terminal_size=SIZE, run_before=run)


def test_a_pane(snap_compare):
    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        screen = await listed(pilot)
        await screen.open_pane("d6f6daf4")
        await settle(pilot, screen)

    assert snap_compare(make(), terminal_size=SIZE, run_before=run)


def test_two_panes_side_by_side_with_the_prefix_armed(snap_compare):
    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        screen = await listed(pilot)
        await screen.open_pane("d6f6daf4")
        await screen.open_pane("7c01e2aa", read_only=True, direction="right")
        await settle(pilot, screen)
        screen.focus_state(screen.layout_tree.panes()[0])
        await pilot.press("ctrl+b")
        await pilot.pause(0.1)

    assert snap_compare(make(), terminal_size=SIZE, run_before=run)
