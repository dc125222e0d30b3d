"""Driving terminal panes in the real console against a real daemon and real programs."""

from __future__ import annotations

from typing import Any

from console.tui.app import ConsoleApp
from console.tui.panes.terminal_pane import TerminalPane
from console.tui.screens.sessions import SessionsScreen
from support.daemon import DaemonProcess
from support.tui import until

TERM_ENV = {
    "TERM": "xterm-256color",
    "PS1": "$ ",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "HISTFILE": "/dev/null",
}
BASH = ["bash", "--norc", "--noprofile"]


def new_session(
    daemon: DaemonProcess, argv: list[str], *, cwd: str = "/tmp", title: str = "", **env: str
) -> str:
    with daemon.operator() as op:
        params: dict[str, Any] = {
            "unconfined": True,
            "argv": argv,
            "cwd": cwd,
            "title": title,
            "env": {**TERM_ENV, **env},
        }
        return str(op.call("sessions.new", params)["session"]["id"])


def sessions_screen(app: ConsoleApp) -> SessionsScreen:
    screen = app.views["sessions"]
    assert isinstance(screen, SessionsScreen)
    return screen


async def show_sessions(pilot: Any, app: ConsoleApp) -> SessionsScreen:
    if app.current_mode != "sessions":
        await pilot.press("4")
    await until(pilot, lambda: app.current_mode == "sessions")
    return sessions_screen(app)


async def open_pane(pilot: Any, app: ConsoleApp, sid: str, *, read_only: bool = False) -> TerminalPane:
    """Select ``sid`` in the list and attach it (enter, or v for read-only)."""
    screen = await show_sessions(pilot, app)
    await until(pilot, lambda: screen.view.select_session(sid))
    screen.view.focus()
    await pilot.press("v" if read_only else "enter")
    pane = await until(pilot, lambda: _pane_of(screen, sid, read_only))
    await until(pilot, lambda: pane.link.state == "live" and pane.link.screen is not None)
    return pane


def _pane_of(screen: SessionsScreen, sid: str, read_only: bool) -> TerminalPane | None:
    for state in screen.layout_tree.panes():
        if state.session_id == sid and state.link.read_only == read_only:
            return screen.pane_widget(state)
    return None


def shown(pane: TerminalPane) -> str:
    """What the pane paints, line by line (trailing blanks trimmed)."""
    lines = []
    for y in range(pane.size.height):
        strip = pane.render_line(y)
        lines.append("".join(segment.text for segment in strip).rstrip())
    return "\n".join(lines).rstrip("\n")


async def wait_shown(pilot: Any, pane: TerminalPane, needle: str, timeout: float = 20.0) -> str:
    try:
        return await until(pilot, lambda: needle in shown(pane) and shown(pane), timeout=timeout)
    except AssertionError:
        raise AssertionError(f"{needle!r} never shown; the pane shows:\n{shown(pane)}") from None


async def wait_gone(pilot: Any, pane: TerminalPane, needle: str, timeout: float = 20.0) -> str:
    try:
        return await until(pilot, lambda: needle not in (t := shown(pane)) and (t or " "), timeout=timeout)
    except AssertionError:
        raise AssertionError(f"{needle!r} still shown; the pane shows:\n{shown(pane)}") from None


async def type_line(pilot: Any, text: str) -> None:
    await pilot.press(*text, "enter")


async def prefix(pilot: Any, *keys: str) -> None:
    await pilot.press("ctrl+b", *keys)
