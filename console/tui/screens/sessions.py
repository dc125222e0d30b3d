"""The sessions view: every session the daemon keeps, and terminal panes attached to them.

The list (top) follows the ``sessions`` topic and re-reads CPU and memory every two
seconds while it is shown; the pending queue's events refresh it too, since a
session's status says when its agent waits for an approval. Below it, panes: each
attached over its own connection (see :mod:`console.tui.panes.pane_link`), split
side by side or stacked, zoomed, closed. Closing a pane detaches: the session keeps
running in the daemon, and attaching again shows it as it is.

The panes and their saved layout are a :class:`~console.tui.panes.workspace.PaneWorkspace`:
the layout (splits, zoom, focus, which session is in which pane) is saved beside the
config file whenever it changes and at quit, and rebuilt when the view first has the
session list (see :mod:`console.tui.model.layout_file`), unless ``[sessions] restore_layout``
is false.
"""

from __future__ import annotations

import os
import shlex
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.timer import Timer

from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.events import SessionChanged
from console.protocol.requests import (
    SessionsAdopt,
    SessionsKill,
    SessionsList,
    SessionsNew,
    SessionsRemove,
    TripwireList,
    TripwireResolution,
    TripwireResolve,
    WorkspacesList,
)
from console.protocol.sessions import SessionObject
from console.remote.workdir import NoRemoteWorkspace, remote_cwd
from console.tui.link import DaemonLink
from console.tui.panes.pane_area import Layout, PaneArea
from console.tui.panes.pane_link import Connect
from console.tui.panes.state import PaneState
from console.tui.panes.terminal_pane import TerminalPane
from console.tui.panes.workspace import PaneWorkspace
from console.tui.screens.base import ConsoleScreen, Services
from console.tui.screens.prompts import ConfirmPrompt, TextPrompt
from console.tui.settings.bindings import bindings
from console.tui.widgets.column_header import ColumnHeader
from console.tui.widgets.line_list import LineList
from console.tui.widgets.sessions_view import COLUMNS, SessionsView, command_line

POLL_S = 2.0  # CPU and memory are sampled by the daemon about once a second
EVENT_COALESCE_S = 0.3
# What a new session's terminal says it is: the pane's emulator (libghostty-vt).
SESSION_ENV = {"TERM": "xterm-256color", "COLORTERM": "truecolor"}
# A new session's command line that starts with this runs unconfined, once the word is typed.
UNCONFINED_MARK = "!"
UNCONFINED_WORD = "unconfined"


class SessionsScreen(ConsoleScreen):
    CONTEXT = "sessions"
    BINDINGS: ClassVar[list[BindingType]] = bindings("sessions")
    ESCAPE_TO_MINIMIZE = False  # escape belongs to the program in a zoomed pane
    CSS_PATH = "sessions.tcss"

    def __init__(self, services: Services) -> None:
        super().__init__(services, id="sessions")
        self.sessions: list[SessionObject] = []
        self.workspace = PaneWorkspace(
            self,
            config=services.config,
            link=services.link,
            listed=lambda: self.sessions,
            changed=self._show_list,
            say=self.say,
            no_pane=self._focus_list,
        )
        self._live: Timer | None = None
        self._poll: Timer | None = None
        self._started = False

    # ------------------------------------------------------------ parts

    def compose_body(self) -> ComposeResult:
        with Vertical(id="sessions-top"):
            yield ColumnHeader(COLUMNS, "sessions-list", id="sessions-header")
            yield SessionsView(clock=self.services.clock, id="sessions-list")
        yield PaneArea(self.workspace.layout, id="panes")

    @property
    def view(self) -> SessionsView:
        return self.query_one(SessionsView)

    def _focus_list(self) -> None:
        self.view.focus()

    @property
    def area(self) -> PaneArea:
        return self.workspace.area

    @property
    def layout_tree(self) -> Layout:
        return self.workspace.layout

    @property
    def connect(self) -> Connect | None:
        """How panes reach the daemon (tests replace it)."""
        return self.workspace.connect

    @connect.setter
    def connect(self, connect: Connect | None) -> None:
        self.workspace.connect = connect

    def on_mount(self) -> None:
        self.view.focus()
        self.reload()
        start = getattr(self.app, "start_session", None)
        if start and not self._started:
            self._started = True
            self.workspace.open_at_start(str(start))

    def on_unmount(self) -> None:
        """Quitting saves the layout as it stands (the focus is not saved as it moves)."""
        self.workspace.save(quitting=True)

    def on_screen_resume(self) -> None:
        self.reload()
        self._poll = self.set_interval(POLL_S, self.reload)

    def on_screen_suspend(self) -> None:
        if self._poll is not None:
            self._poll.stop()
            self._poll = None

    # ------------------------------------------------------------ the list

    def reload(self) -> None:
        self._load()

    @work(group="sessions-load", exclusive=True)
    async def _load(self) -> None:
        try:
            result = await self.services.link.request(SessionsList())
        except (RPCError, DaemonUnreachable) as exc:
            self.say(f"sessions unavailable: {inert(str(exc))[:200]}", "error")
            return
        self.sessions = list(result.sessions)
        self._show_list()
        self.workspace.restore_once()

    def _show_list(self) -> None:
        attached = self.workspace.attached()
        # A load that finishes while the app shuts down finds the screen mounted and its
        # list already removed: nothing to show then.
        for view in self.query(SessionsView):
            view.set_rows(self.sessions, attached)
        waiting = sum(1 for s in self.sessions if s.status_text == "awaiting approval")
        self.services.pills.set(
            "sessions",
            f"{waiting} session{'s' if waiting != 1 else ''} awaiting approval" if waiting else "",
            "warning",
        )

    DAEMON_EVENTS: ClassVar[tuple[type[DaemonLink.DaemonEvent[Any]], ...]] = (
        DaemonLink.SessionChanged,
        DaemonLink.PendingAdded,
        DaemonLink.Decided,
    )

    @on(DaemonLink.SessionChanged)
    def _session_changed(self, message: DaemonLink.SessionChanged) -> None:
        """Sessions come, change and go."""
        self._apply(message.event)
        self._coalesce()

    @on(DaemonLink.PendingAdded)
    @on(DaemonLink.Decided)
    def _queue_changed(self, message: DaemonLink.PendingAdded | DaemonLink.Decided) -> None:
        """A pending request changes its agent's sessions' status ("awaiting approval")."""
        self._coalesce()

    def _coalesce(self) -> None:
        if self.is_mounted and self._live is None:
            self._live = self.set_timer(EVENT_COALESCE_S, self._catch_up)

    def _apply(self, event: SessionChanged) -> None:
        session = event.session
        removed = event.change == "removed"
        rows = [s for s in self.sessions if s.id != session.id]
        if not removed:
            for i, s in enumerate(self.sessions):
                if s.id == session.id:
                    rows.insert(i, session)
                    break
            else:
                rows.append(session)
        self.sessions = rows
        if not removed:
            self.workspace.session_changed(session)

    def _catch_up(self) -> None:
        self._live = None
        self._show_list()
        self.reload()

    def selected_session(self) -> tuple[str, SessionObject | None] | None:
        """The session a sessions-view key acts on, by id: the focused pane's (which the
        list may not know yet: then its object is None), else the list's."""
        pane = self.focused_pane()
        if pane is not None:
            sid = pane.state.session_id
            return sid, next((s for s in self.sessions if s.id == sid), None)
        session = self.view.selected()
        return None if session is None else (session.id, session)

    def on_line_list_opened(self, message: LineList.Opened) -> None:
        if isinstance(message.source, SessionsView):
            self.action_attach(False)

    # ------------------------------------------------------------ session actions

    def action_attach(self, read_only: bool = False) -> None:
        session = self.view.selected()
        if session is None:
            self.say("no session selected", "warning")
            return
        self.run_worker(self.open_pane(session.id, read_only=read_only), group="panes-open")

    def action_new_session(self) -> None:
        def answered(line: str | None) -> None:
            if not line:
                return
            if line.lstrip().startswith(UNCONFINED_MARK):
                self._confirm_unconfined(shlex.split(line.lstrip()[1:]))
            else:
                self._new_session(shlex.split(line))

        remote = self._remote_host()
        where = (
            f"the workspace trusted most recently on {inert(remote)[:40]}"
            if remote is not None
            else f"the console's directory ({inert(os.getcwd())[:80]})"
        )
        self.app.push_screen(
            TextPrompt(
                "New session",
                f"A command line to run on its own terminal, in the sandbox: {where} "
                "is its workspace, the network goes through the egress "
                "broker. It keeps running when you close its pane or quit the console. Start the line "
                f"with {UNCONFINED_MARK} to run it unconfined, as you, outside any sandbox.",
                placeholder=os.environ.get("SHELL", "/bin/sh"),
                value=os.environ.get("SHELL", "/bin/sh"),
                check=_check_command,
            ),
            answered,
        )

    def _confirm_unconfined(self, argv: list[str]) -> None:
        """The typed-word gesture: an unconfined session has every power of your account."""
        if not argv:
            self.say("nothing to run", "warning")
            return

        def typed(text: str | None) -> None:
            if text is not None:
                self._new_session(argv, unconfined=True)

        self.app.push_screen(
            TextPrompt(
                "Unconfined session",
                f"{inert(shlex.join(argv))[:200]} will run outside any sandbox with every power of your "
                "account: your home, your keys, the console's own state and sockets, the whole network. "
                f"Type {UNCONFINED_WORD} to start it; Escape cancels.",
                placeholder=UNCONFINED_WORD,
                check=lambda text: (
                    None if text.strip().lower() == UNCONFINED_WORD else f"type {UNCONFINED_WORD} to start it"
                ),
            ),
            typed,
        )

    @work(group="sessions-new")
    async def _new_session(
        self,
        argv: list[str],
        beside: PaneState | None = None,
        direction: str | None = None,
        *,
        unconfined: bool = False,
    ) -> None:
        cwd = ""
        if beside is not None:
            cwd = beside.link.info.cwd if beside.link.info is not None else ""
        remote = self._remote_host()
        if not cwd and remote is None:
            cwd = os.getcwd()
        elif not cwd and remote is not None:
            # This machine's directory means nothing on that host: one of its workspaces.
            try:
                listed = [] if unconfined else (await self.services.link.request(WorkspacesList())).workspaces
                cwd = remote_cwd(remote, None, listed, unconfined=unconfined)
            except (RPCError, DaemonUnreachable, NoRemoteWorkspace) as exc:
                self.say(f"could not start {inert(shlex.join(argv))[:80]}: {inert(str(exc))[:200]}", "error")
                return
        cols, rows = self.workspace.size_guess(direction)
        params = SessionsNew(
            argv=tuple(argv), cwd=cwd, cols=cols, rows=rows, env=dict(SESSION_ENV), unconfined=unconfined
        )
        try:
            result = await self.services.link.request(params)
        except (RPCError, DaemonUnreachable) as exc:
            hint = "" if unconfined else f" (start the line with {UNCONFINED_MARK} to run it unconfined)"
            self.say(
                f"could not start {inert(shlex.join(argv))[:80]}: {inert(str(exc))[:160]}{hint}", "error"
            )
            return
        session = result.session
        self.sessions = [*self.sessions, session]
        self._show_list()
        await self.open_pane(session.id, beside=beside, direction=direction)

    def _remote_host(self) -> str | None:
        """The name of the host this view shows when it is another machine, else None."""
        hosts = self.app.hosts
        if hosts is None or not hosts.names or hosts.names[0] not in hosts.remote:
            return None
        return hosts.names[0]

    def action_resume(self) -> None:
        target = self.selected_session()
        if target is None:
            return
        sid, session = target
        if session is None or not session.status_text.startswith("paused by tripwire"):
            self.say(f"{sid} is not paused by the tripwire", "warning")
            return
        text = Text(
            f"Every process of session {inert(sid)} goes on, and what it wrote to protected paths "
            "becomes their baseline: later diffs start from it. To put a file back instead, answer "
            "its item in the queue with kill or keep paused and revert."
        )

        def resumed(yes: bool | None) -> None:
            if yes:
                self._resume(sid)

        self.app.push_screen(
            ConfirmPrompt(f"Resume session {inert(sid)}?", text, yes="Resume, keep the new content"), resumed
        )

    @work(group="sessions-resume", exclusive=True)
    async def _resume(self, sid: str) -> None:
        """Resume answers the session's open tripwire items, as `r` in the queue does."""
        try:
            listed = await self.services.link.request(TripwireList(open=True))
            mine = [i for i in listed.items if i.session == sid]
            for item in mine:
                await self.services.link.request(
                    TripwireResolve(id=item.id, action=TripwireResolution.RESUME, accept=True)
                )
        except (RPCError, DaemonUnreachable) as exc:
            self.say(f"resume {sid}: {inert(str(exc))[:200]}", "error")
            return
        self.say(f"resumed {sid}" if mine else f"{sid}: no open tripwire item", "ok" if mine else "warning")
        self.reload()

    def action_kill(self) -> None:
        target = self.selected_session()
        if target is None:
            return
        sid, session = target
        text = Text(f"{sid}: ")
        text.append(inert(_described(session))[:300], "bold")
        text.append("\n\nTERM to its process group and every descendant, then KILL after 3 s.")

        def answered(yes: bool | None) -> None:
            if yes:
                self._call(SessionsKill(session=sid, grace_s=3.0), f"killed {sid}")

        self.app.push_screen(ConfirmPrompt("Kill this session?", text, yes="Kill"), answered)

    def action_remove(self) -> None:
        target = self.selected_session()
        if target is None:
            return
        sid, session = target
        alive = session is not None and session.alive
        text = Text(f"{sid}: ")
        text.append(inert(_described(session))[:300], "bold")
        text.append(
            "\n\nIts recording is deleted."
            + (" It is still running and will be killed first." if alive else "")
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._remove(sid)

        self.app.push_screen(ConfirmPrompt("Remove this session?", text, yes="Remove"), answered)

    @work(group="sessions-remove")
    async def _remove(self, sid: str) -> None:
        for state in [p for p in self.workspace.panes() if p.session_id == sid]:
            await self.close_pane(state)
        self._call(SessionsRemove(session=sid), f"removed {sid}")

    def action_adopt(self) -> None:
        target = self.selected_session()
        if target is None:
            return
        sid, session = target
        if session is not None and session.owner == "operator":
            self.say(f"{sid} is already yours", "warning")
            return
        self._call(SessionsAdopt(session=sid), f"adopted {sid}: it keeps running without its agent")

    @work(group="sessions-call")
    async def _call(self, params: SessionsKill | SessionsRemove | SessionsAdopt, done: str) -> None:
        """One call on the session ``params`` name; what it answers is the session's news,
        which the list hears as an event."""
        try:
            await self.services.link.request(params)
        except (RPCError, DaemonUnreachable) as exc:
            what = type(params).__name__.removeprefix("Sessions").lower()
            self.say(f"{what} {params.session}: {inert(str(exc))[:200]}", "error")
            return
        self.say(done, "ok")
        self.reload()

    # ------------------------------------------------------------ panes

    def focused_pane(self) -> TerminalPane | None:
        return self.workspace.focused_pane()

    def current_state(self) -> PaneState | None:
        return self.workspace.current_state()

    def on_descendant_focus(self, event: Any) -> None:
        self.workspace.focus_changed()

    def pane_widget(self, state: PaneState) -> TerminalPane | None:
        return self.workspace.pane_widget(state)

    async def open_pane(
        self,
        session_id: str,
        *,
        read_only: bool = False,
        beside: PaneState | None = None,
        direction: str | None = None,
    ) -> PaneState:
        """Attach ``session_id`` in a new pane (beside the current one) and focus it."""
        return await self.workspace.open(session_id, read_only=read_only, beside=beside, direction=direction)

    def focus_state(self, state: PaneState) -> None:
        self.workspace.focus(state)

    async def close_pane(self, state: PaneState) -> None:
        """Detach: the session keeps running."""
        await self.workspace.close(state)

    def watch_maximized(self, maximized: Any) -> None:
        """Zoom in or out is a layout change (Screen's own watcher sets the classes)."""
        self.workspace.save()

    async def close_all(self) -> None:
        for state in self.workspace.panes():
            await self.close_pane(state)

    def on_terminal_pane_said(self, message: TerminalPane.Said) -> None:
        self.say(message.text, message.severity)

    # the pane commands that change the layout (see TerminalPane for the others)

    def action_split(self, direction: str) -> None:
        state = self.current_state()
        if state is None:
            self.action_attach(False)
            return
        shell = os.environ.get("SHELL") or "/bin/sh"
        self._new_session([shell], beside=state, direction=direction)

    def action_detach(self) -> None:
        state = self.current_state()
        if state is not None:
            self.run_worker(self.close_pane(state), group="panes-close")

    def action_zoom(self) -> None:
        self.workspace.zoom()

    def action_next_pane(self) -> None:
        self.workspace.next_pane()

    def action_focus_pane(self, direction: str) -> None:
        self.workspace.focus_toward(direction)

    def action_to_list(self) -> None:
        if self.maximized is not None:
            self.minimize()
        self.view.focus()

    # ------------------------------------------------------------ bindings in force

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        pane = self.focused_pane()
        return not (pane is not None and pane.takes_every_key)


def _check_command(text: str) -> str | None:
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        return f"cannot split that command line: {exc}"
    if not argv:
        return "give a command, e.g. bash or python3"
    return None


def _described(session: SessionObject | None) -> str:
    """What a confirmation names a session by: its command, else its title."""
    if session is None:
        return ""
    return command_line(session) or session.title
