"""Attention: which agent waits for the person, which one works, which one is done.

Claude Code's Notification hook says it waits (for a permission, or for the next
prompt), UserPromptSubmit and every supervised tool call say it works again, Stop says
it is done (console/adapters/attention.py turns them into ``agent.attention``).
The table keeps one entry per (daemon-issued agent identity, the agent's own session id):
the identity is the key's first half, so no agent can name another one's entry, and the
session id (Claude Code's, untrusted) only tells one agent's sessions apart.

A report of the state an entry already has changes nothing visible: no event, no new
``since``. Only a real transition publishes one event on :data:`Topic.ATTENTION` (the TUI
notifies once per transition into ``waiting``). The table is bounded: at most
:data:`MAX_PER_AGENT` entries per identity and :data:`MAX_ENTRIES` in all, the least
recently reported dropped first; every text field is capped.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from console.daemon.events import EventHub
from console.protocol.events import AttentionChanged
from console.protocol.requests import MAX_KIND_CHARS, MAX_MESSAGE_CHARS, MAX_SESSION_CHARS, AttentionState
from console.protocol.status import AttentionEntry, AttentionStatus

MAX_ENTRIES = 1024
MAX_PER_AGENT = 32


LABELS = {
    AttentionState.WAITING: "waiting for you",
    AttentionState.WORKING: "working",
    AttentionState.DONE: "done",
}


@dataclass(slots=True)
class Entry:
    agent: str  # the daemon-issued agent id
    session: str  # the agent's own session id (display and per-agent key only)
    state: AttentionState
    since: float  # when the entry entered ``state``
    updated_at: float  # the last report, of any state
    message: str = ""
    kind: str = ""  # what said so: permission_prompt, idle_prompt, prompt, tool, stop...
    reports: int = 0
    transitions: int = 0


@dataclass(frozen=True, slots=True)
class AgentNaming:
    """How the console names an entry's agent (the daemon's identity registry knows)."""

    label: str = ""
    root_pid: int | None = None
    root_comm: str = ""
    alive: bool = False


UNKNOWN_AGENT = AgentNaming()  # an agent the registry does not know (or a table without a daemon)


class AttentionTable:
    def __init__(
        self,
        events: EventHub,
        clock: Callable[[], float] = time.time,
        *,
        describe: Callable[[str], AgentNaming] = lambda _agent: UNKNOWN_AGENT,
    ) -> None:
        self.events = events
        self.clock = clock
        self._entries: OrderedDict[tuple[str, str], Entry] = OrderedDict()
        self.transitions = 0  # every real transition since the daemon started
        # Agent id -> the kind of agent its requests say it is (their tools' ``<kind>:``).
        self._kinds: dict[str, str] = {}
        # Agent id -> extra facts for the wire form (label, root pid...); set by the daemon.
        self.describe = describe  # an agent id -> how the console names it

    def __len__(self) -> int:
        return len(self._entries)

    def report(
        self, agent: str, session: str, state: AttentionState, *, message: str = "", kind: str = ""
    ) -> tuple[Entry, bool]:
        """Record ``state`` for (agent, session); (the entry, whether it changed state)."""
        session = session[:MAX_SESSION_CHARS]
        message = message[:MAX_MESSAGE_CHARS]
        kind = kind[:MAX_KIND_CHARS]
        now = self.clock()
        key = (agent, session)
        entry = self._entries.get(key)
        if entry is None:
            entry = Entry(agent, session, state, since=now, updated_at=now)
            self._entries[key] = entry
            self._bound(agent)
            previous: AttentionState | None = None
        else:
            self._entries.move_to_end(key)
            previous = entry.state
        entry.reports += 1
        entry.updated_at = now
        if previous is state:
            if message:
                entry.message = message  # the latest words, without a new notification
            return entry, False
        entry.state = state
        entry.since = now
        entry.message = message
        entry.kind = kind
        entry.transitions += 1
        self.transitions += 1
        self.events.publish(
            AttentionChanged(
                entry=self.wire(entry),
                previous=previous.value if previous is not None else None,
                waiting=self.waiting(),
            )
        )
        return entry, True

    def activity(self, agent: str, session: str, kind: str = "tool", tool: str = "") -> None:
        """The agent acts (a supervised tool call): an entry it has is ``working`` again.
        ``tool`` (``<agent kind>:<name>``) tells what kind of agent it is.

        Creates no entry: an agent that never reported attention has none.
        """
        if ":" in tool:
            if agent not in self._kinds and len(self._kinds) >= MAX_ENTRIES:
                self._kinds.pop(next(iter(self._kinds)))
            self._kinds[agent] = tool.split(":", 1)[0][:64]
        entry = self._entries.get((agent, session[:MAX_SESSION_CHARS]))
        if entry is not None and entry.state is not AttentionState.WORKING:
            self.report(agent, session, AttentionState.WORKING, kind=kind)

    def _bound(self, agent: str) -> None:
        mine = [k for k in self._entries if k[0] == agent]
        for key in mine[: max(0, len(mine) - MAX_PER_AGENT)]:
            del self._entries[key]
        while len(self._entries) > MAX_ENTRIES:
            self._entries.popitem(last=False)

    def entries(self, agent: str | None = None) -> list[Entry]:
        """Every entry (or one agent's), the most recently reported first."""
        return [e for e in reversed(self._entries.values()) if agent is None or e.agent == agent]

    def waiting(self) -> int:
        return sum(1 for e in self._entries.values() if e.state is AttentionState.WAITING)

    def wire(self, entry: Entry) -> AttentionEntry:
        """The entry as clients see it, with how the console names its agent."""
        naming = self.describe(entry.agent)
        return AttentionEntry(
            agent_id=entry.agent,
            session_id=entry.session,
            state=entry.state.value,
            state_text=LABELS[entry.state],
            since=entry.since,
            updated_at=entry.updated_at,
            message=entry.message,
            kind=entry.kind,
            reports=entry.reports,
            transitions=entry.transitions,
            agent_kind=self._kinds.get(entry.agent, ""),
            agent_label=naming.label,
            root_pid=naming.root_pid,
            root_comm=naming.root_comm,
            agent_alive=naming.alive,
        )

    def status(self) -> AttentionStatus:
        return AttentionStatus(
            waiting=self.waiting(), entries=len(self._entries), transitions=self.transitions
        )
