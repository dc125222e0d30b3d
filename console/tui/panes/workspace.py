"""The panes of the sessions view and the file their arrangement is saved in.

A :class:`PaneWorkspace` owns the split tree (:class:`~console.tui.panes.pane_area.Layout`)
and every pane state in it: attaching a session in a new pane (each over its own
connection, see :mod:`console.tui.panes.pane_link`), detaching, moving the focus, zooming,
and keeping the layout file in step (:mod:`console.tui.model.layout_file`). The screen
that shows it keeps the session list and the session commands; it composes the
:class:`~console.tui.panes.pane_area.PaneArea` over :attr:`PaneWorkspace.layout` and
hands its pane keys here.

The layout is saved beside the config file whenever it changes and at quit, and
rebuilt from the sessions still running when the screen first has the session list.
Until then nothing is saved over it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from textual.screen import Screen

from console.contract.inert import inert
from console.protocol.sessions import SessionObject
from console.tui.link import DaemonLink
from console.tui.model import layout_file
from console.tui.panes.pane_area import DOWN, RIGHT, Layout, Node, PaneArea, PaneFrame, Split
from console.tui.panes.pane_link import Connect, PaneLink, connector
from console.tui.panes.state import PaneState
from console.tui.panes.terminal_pane import TerminalPane
from console.tui.settings.config import Config

Say = Callable[[str, str], None]


class PaneWorkspace:
    """Panes in a split tree on ``screen``, attached to daemon sessions, saved to a file.

    ``config`` says whether and where the layout is saved, ``link`` is the daemon link
    whose host the panes attach on; ``listed`` gives the sessions the screen knows (a restore skips the ones gone or
    ended), ``changed`` runs when a pane was attached or detached (the list marks
    attached sessions), ``say`` writes the screen's status line and ``no_pane`` moves
    the focus away when the last pane closes.
    """

    def __init__(
        self,
        screen: Screen[Any],
        *,
        config: Config,
        link: DaemonLink,
        listed: Callable[[], Sequence[SessionObject]],
        changed: Callable[[], None],
        say: Say,
        no_pane: Callable[[], None],
    ) -> None:
        self.screen = screen
        self.config = config
        self.link = link
        self.layout = Layout()
        self.connect: Connect | None = None  # how panes reach the daemon (tests replace it)
        self._listed = listed
        self._changed = changed
        self._say = say
        self._no_pane = no_pane
        self._last: PaneState | None = None
        # Until the saved layout was read (at the first session list), nothing is saved over it.
        self._restoring = True
        self._restore_started = False
        self._open_after_restore: str | None = None
        self._save_failed = False
        self._save_blocked = False

    # ------------------------------------------------------------ what is there

    def panes(self) -> list[PaneState]:
        return self.layout.panes()

    @property
    def area(self) -> PaneArea:
        return self.screen.query_one(PaneArea)

    def focused_pane(self) -> TerminalPane | None:
        focused = self.screen.focused
        return focused if isinstance(focused, TerminalPane) else None

    def current_state(self) -> PaneState | None:
        """The pane the pane commands act on: the focused one, else the last focused."""
        pane = self.focused_pane()
        if pane is not None:
            return pane.state
        panes = self.panes()
        if self._last in panes:
            return self._last
        return panes[-1] if panes else None

    def pane_widget(self, state: PaneState) -> TerminalPane | None:
        frame = self.area.frame_for(state)
        return frame.pane if frame is not None else None

    def attached(self) -> frozenset[str]:
        """The sessions shown in a pane."""
        return frozenset(p.session_id for p in self.panes())

    def _connector(self) -> Connect:
        if self.connect is None:
            # A pane on a host over SSH connects through that host's link (docs/remote.md).
            self.connect = self.link.pane_connect or connector(self.link.state_dir)
        return self.connect

    # ------------------------------------------------------------ focus

    def focus_changed(self) -> None:
        """The screen's focus moved: a pane that took it is the current one."""
        if not self.screen.app.is_running:  # quitting: widgets going away move the focus about
            return
        pane = self.focused_pane()
        if pane is not None:
            self._note_focus(pane.state)

    def _note_focus(self, state: PaneState) -> None:
        if self._last is not state:
            self._last = state
            self.save()

    def focus(self, state: PaneState) -> None:
        widget = self.pane_widget(state)
        if widget is not None:
            widget.focus()
            self._note_focus(state)

    def next_pane(self) -> None:
        panes = self.panes()
        state = self.current_state()
        if not panes:
            return
        if self.screen.maximized is not None:
            self.screen.minimize()
        at = panes.index(state) if state in panes else -1
        self.focus(panes[(at + 1) % len(panes)])

    def focus_toward(self, direction: str) -> None:
        """Focus the nearest pane to the ``left``, ``right``, ``up`` or ``down``."""
        state = self.current_state()
        if state is None:
            return
        if self.screen.maximized is not None:
            self.screen.minimize()
        here = self.area.frame_for(state)
        if here is None:
            return
        r = here.region
        cx, cy = r.x + r.width / 2, r.y + r.height / 2
        best: tuple[float, PaneFrame] | None = None
        for frame in self.area.frames():
            if frame is here:
                continue
            o = frame.region
            ox, oy = o.x + o.width / 2, o.y + o.height / 2
            ahead = {
                "left": o.right <= r.x,
                "right": o.x >= r.right,
                "up": o.bottom <= r.y,
                "down": o.y >= r.bottom,
            }.get(direction, False)
            if ahead:
                distance = abs(ox - cx) + abs(oy - cy)
                if best is None or distance < best[0]:
                    best = (distance, frame)
        if best is not None:
            self.focus(best[1].state)

    def zoom(self) -> None:
        """Zoom the current pane to the whole body, or back."""
        state = self.current_state()
        if state is None:
            return
        if self.screen.maximized is not None:
            self.screen.minimize()
            self.focus(state)
            return
        frame = self.area.frame_for(state)
        if frame is not None:
            self.screen.maximize(frame, container=False)
            self.focus(state)

    # ------------------------------------------------------------ attach and detach

    def size_guess(self, direction: str | None) -> tuple[int, int]:
        """Columns and rows of a pane about to open beside the current one."""
        pane = self.focused_pane()
        if pane is not None:
            w, h = pane.size.width, pane.size.height
            if direction == RIGHT:
                w = (w - 1) // 2
            elif direction == DOWN:
                h = (h - 1) // 2
            return max(20, w), max(5, h)
        return max(20, self.screen.size.width), max(5, self.screen.size.height - 14)

    async def open(
        self,
        session_id: str,
        *,
        read_only: bool = False,
        beside: PaneState | None = None,
        direction: str | None = None,
    ) -> PaneState:
        """Attach ``session_id`` in a new pane (beside the current one) and focus it."""
        for state in self.panes():
            if state.session_id == session_id and state.link.read_only == read_only and beside is None:
                self.focus(state)
                return state
        beside = beside or self.current_state()
        if direction is None:
            direction = RIGHT
            widget = self.pane_widget(beside) if beside is not None else None
            if widget is not None and widget.size.width < 2.5 * widget.size.height:
                direction = DOWN
        state = self._attached_state(session_id, read_only)
        self.layout.add(state, beside, direction)
        await self._relayout()
        self.focus(state)
        self._changed()
        return state

    def _attached_state(self, session_id: str, read_only: bool) -> PaneState:
        """A pane's state, its link already attaching (over its own connection)."""
        link = PaneLink(session_id, self._connector(), read_only=read_only)
        state = PaneState(link)
        state.task = self.screen.run_worker(
            link.run(), name=f"pane-{state.pane_id}", group=f"pane-{state.pane_id}", exit_on_error=False
        )
        return state

    async def close(self, state: PaneState) -> None:
        """Detach: the session keeps running."""
        panes = self.panes()
        if state not in panes:
            return
        at = panes.index(state)
        self.layout.remove(state)
        if state.task is not None:
            state.task.cancel()
        await state.link.close()
        await self._relayout()
        rest = self.panes()
        if rest:
            self.focus(rest[min(at, len(rest) - 1)])
        else:
            self._no_pane()
        self._changed()
        self._say(f"detached from {state.session_id}; it keeps running (enter attaches again)", "ok")

    async def _relayout(self) -> None:
        if self.screen.maximized is not None:
            self.screen.minimize()
        self.screen.set_class(self.layout.root is not None, "-panes")
        await self.area.rebuild()
        self.save()

    def session_changed(self, session: SessionObject) -> None:
        """A pane shows its session's own state."""
        for state in self.panes():
            if state.session_id == session.id:
                state.link.info = session
                state.link.on_update()

    # ------------------------------------------------------------ the saved layout

    def layout_path(self) -> Path | None:
        """Beside the config file in use; None when restoring is off (or no config path)."""
        config = self.config
        if not config.restore_layout or config.path is None:
            return None
        return layout_file.layout_path(config.path)

    def document(self, focus: PaneState | None = None) -> layout_file.Document:
        """The layout as it stands, as plain data (a split left with one child is that child)."""

        def node(n: Node) -> layout_file.Node | None:
            if isinstance(n, Split):
                kids = [k for k in (node(c) for c in n.children) if k is not None]
                if len(kids) < 2:
                    return kids[0] if kids else None
                return layout_file.Box(n.direction, tuple(kids))
            return layout_file.Pane(n.session_id, n.link.read_only)

        panes = self.panes()

        def index(state: PaneState | None) -> int | None:
            return next((i for i, p in enumerate(panes) if p is state), None)

        maximized = self.screen.maximized
        zoomed = maximized.state if isinstance(maximized, PaneFrame) else None
        root = None if self.layout.root is None else node(self.layout.root)
        return layout_file.Document(root, index(zoomed), index(focus or self.current_state()))

    def save(self, *, quitting: bool = False) -> None:
        if self._restoring or self._save_blocked or (not quitting and not self.screen.app.is_running):
            return
        path = self.layout_path()
        if path is None:
            return
        try:
            # Quitting: the focus last seen, not where removing the widgets moved it.
            layout_file.save(path, self.document(self._last if quitting else None))
        except (OSError, layout_file.LayoutError) as exc:
            if not self._save_failed:  # once: a full disk would say it on every keystroke
                self._save_failed = True
                self.screen.notify(
                    inert(f"cannot save the pane layout to {path}: {exc}")[:300],
                    severity="warning",
                    markup=False,
                )
            return
        self._save_failed = False

    def open_at_start(self, session_id: str) -> None:
        """Open ``session_id`` once the saved panes are back (focused if among them)."""
        if self.layout_path() is not None:
            self._open_after_restore = session_id
        else:
            self.screen.call_after_refresh(self.open, session_id)

    def restore_once(self) -> None:
        """At the first session list: rebuild the saved layout, in a worker of its own."""
        if not self._restore_started:
            self._restore_started = True
            # Its own worker: the screen's next reload would cancel its exclusive one mid-rebuild.
            self.screen.run_worker(self._restore(), group="layout-restore", exit_on_error=False)

    async def _restore(self) -> None:
        """Rebuild the saved layout from the sessions that are still running; say what is not."""
        try:
            path = self.layout_path()
            if path is not None and self.layout.root is None:
                await self._restore_from(path)
        except Exception as exc:  # a restore must never take the console down; keep the file
            self._save_blocked = True
            self.screen.notify(
                inert(f"pane layout not restored: {type(exc).__name__}: {exc}")[:300],
                title="layout",
                severity="error",
                markup=False,
            )
        finally:
            self._restoring = False
        self.save()  # what was restored: the ended and gone panes drop out
        start, self._open_after_restore = self._open_after_restore, None
        if start:
            await self.open(start)

    async def _restore_from(self, path: Path) -> None:
        try:
            doc = layout_file.load(path)
        except layout_file.LayoutError as exc:
            try:
                kept = f"kept as {layout_file.set_aside(path).name}"
            except (OSError, layout_file.LayoutError) as err:
                kept = f"and cannot be moved aside ({err}); it is left as it is"
                self._save_blocked = True  # nor overwritten: this run saves no layout
            self.screen.notify(
                inert(f"pane layout not restored: {path.name}: {exc}; {kept}")[:400],
                title="layout",
                severity="error",
                markup=False,
            )
            return
        if doc is None or doc.root is None:
            return
        known = {s.id: s for s in self._listed()}
        skipped: list[str] = []
        made: dict[int, PaneState] = {}
        count = iter(range(layout_file.MAX_PANES + 1))

        def build(n: layout_file.Node) -> Node | None:
            if isinstance(n, layout_file.Pane):
                at = next(count)
                session = known.get(n.session)
                if session is None or not session.alive:
                    skipped.append(f"session {n.session} {'gone' if session is None else 'ended'}")
                    return None
                made[at] = self._attached_state(n.session, n.read_only)
                return made[at]
            kids: list[Node] = []
            for child in n.children:
                built = build(child)
                if isinstance(built, Split) and built.direction == n.direction:
                    kids.extend(built.children)  # a split that lost children merges into its parent
                elif built is not None:
                    kids.append(built)
            if len(kids) < 2:
                return kids[0] if kids else None
            return Split(n.direction, kids)

        self.layout.root = build(doc.root)
        if skipped:
            self.screen.notify(
                inert(
                    f"{len(skipped)} pane{'s' if len(skipped) != 1 else ''} not restored: "
                    + ", ".join(skipped)
                )[:400],
                title="layout",
                severity="warning",
                markup=False,
            )
        if self.layout.root is None:
            return
        await self._relayout()
        panes = self.panes()
        focus = made.get(doc.focus) if doc.focus is not None else None
        self.focus(focus if focus is not None else panes[-1])
        zoomed = made.get(doc.zoom) if doc.zoom is not None else None
        if zoomed is not None and (frame := self.area.frame_for(zoomed)) is not None:
            self.screen.maximize(frame, container=False)
            self.focus(zoomed)
        self._changed()
