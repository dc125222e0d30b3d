"""The daemon's session manager and the one place its session events fan out from.

It is built first (console/daemon/app.py), so the watcher gets its
:class:`~console.daemon.ports.SessionControl` and the session service gets the manager,
each at construction: the two services then never hold each other whole. The session
service listens here for what it publishes (a session created, exited, or changed by
the tripwire).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from console.policy import PolicyConfig
from console.sessions import SessionEvent, SessionManager, UnknownSession
from console.sessions.session import Session


class ManagedSessions:
    """:class:`SessionManager` seen through :class:`~console.daemon.ports.SessionControl`."""

    def __init__(self, state_dir: Path, policy: Callable[[], PolicyConfig] | None = None) -> None:
        self.manager = SessionManager(state_dir, on_event=self._event, policy=policy)
        self._on_event: list[Callable[[SessionEvent], None]] = []
        self._on_changed: list[Callable[[str], None]] = []

    def listen(self, *, on_event: Callable[[SessionEvent], None], on_changed: Callable[[str], None]) -> None:
        """Hear the manager's events and the changes others report (:meth:`changed`)."""
        self._on_event.append(on_event)
        self._on_changed.append(on_changed)

    def _event(self, event: SessionEvent) -> None:
        for listener in self._on_event:
            listener(event)

    # ------------------------------------------------------------ SessionControl

    @property
    def cgroups_available(self) -> bool:
        return self.manager.cgroups.available

    def sessions(self) -> Sequence[Session]:
        return self.manager.sessions()

    def session(self, session_id: str) -> Session:
        return self.manager.session(session_id)

    async def pause(self, session_id: str) -> bool:
        return await self.manager.pause(session_id)

    async def resume(self, session_id: str) -> None:
        await self.manager.resume(session_id)

    async def kill(self, session_id: str) -> object:
        return await self.manager.kill(session_id)

    def changed(self, session_id: str) -> None:
        for listener in self._on_changed:
            listener(session_id)


class NoSessions:
    """A watcher without sessions (tools, tests): every change is nobody's, nothing to stop."""

    cgroups_available = False

    def sessions(self) -> Sequence[Session]:
        return ()

    def session(self, session_id: str) -> Session:
        raise UnknownSession(session_id)

    async def pause(self, session_id: str) -> bool:
        return False

    async def resume(self, session_id: str) -> None:
        return None

    async def kill(self, session_id: str) -> object:
        return None

    def changed(self, session_id: str) -> None:
        return None
