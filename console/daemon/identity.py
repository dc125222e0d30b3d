"""Agent identities the daemon issues: who owns a request, a session, a session grant.

An identity is made by the daemon, never named into existence by a client: an id
(``a-`` and 16 hex digits, public: the operator sees it) and a secret (256 random bits,
given only to connections bound to the identity). A connection on agent.sock is bound
to exactly one identity, in one of three ways, checked in this order by ``hello``:

1. ``agent_id`` + ``agent_secret``: reconnecting under an identity; the secret must match.
2. ``agent_pid``: "I run under agent process P". P must be the peer itself or one of its
   ancestors (walked through /proc from the ``SO_PEERCRED`` pid), owned by the same uid,
   in the same session — or reached only through sessions without a terminal that
   processes below P started (Claude Code runs each hook in a session of its own) — and
   not that session's leader (an interactive shell is the leader; so two agents started
   from two terminals never share an ancestor they may name; see procs.may_name).
   The identity is the process tree rooted at (P, P's start time); the first
   connection that names P creates it.
3. Nothing: the nearest ancestor of the peer that roots an identity, and that the peer
   could have named by rule 2, gives that identity (a hook or ``agent-console exec``
   started by the agent, per call); failing that, an identity of this connection alone.
   A client that says it is one call of an agent (``per_call``: the hook, ``exec``) and
   reaches no agent process gets an *anonymous* identity: its own, shown as anonymous,
   and never given a session grant (it would hold for nothing: the next call is
   another anonymous identity). No rule merges two process trees because a supervisor
   without a terminal started both (console/protocol/procs.py ``may_name``).

A confined session (``agent-console run``, a sandboxed ``sessions new``) gets its
identity from the daemon when it starts, rooted at its sandbox: every connection from a
process inside it is that identity, before ``agent_pid`` is looked at (pids inside the
sandbox's pid namespace mean nothing out here).

The agent's own session id (Claude Code's ``session_id``) is a label for the operator,
never a key. Identities live in memory: a daemon restart forgets them (and the sessions
they owned end with the daemon).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from console.daemon import quotas
from console.daemon.errors import Conflict, InvalidParams, Unauthorized
from console.protocol.peer import PeerCred
from console.protocol.pending import AgentIdentity
from console.protocol.procs import ProcStat, ancestry, may_name, proc_stat, proc_uid

if TYPE_CHECKING:
    from console.daemon.connection import Connection
    from console.daemon.quotas import Bucket

log = logging.getLogger("agent-console.identity")

AGENT_ID = re.compile(r"a-[0-9a-f]{16}\Z")
SECRET = re.compile(r"[A-Za-z0-9_-]{43}\Z")
# Idle identities (no connection, nothing they own) beyond this many are forgotten, oldest first.
MAX_IDENTITIES = 4096


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("ascii")).digest()


@dataclass(eq=False)
class Agent:
    id: str
    secret_digest: bytes
    uid: int
    created_at: float
    root: tuple[int, int] | None = None  # (pid, start ticks) of the agent process, if bound to one
    root_comm: str = ""
    label: str = ""  # the agent's own session id, display only
    anonymous: bool = False  # a per-call client that reached no agent process
    # Made for a confined session (an agent CLI the operator started in the sandbox):
    # every process inside it is this agent, whatever it names (see AgentRegistry.confined).
    confined: bool = False
    connections: int = 0
    last_seen: float = 0.0
    # Quota state (see console/daemon/quotas.py).
    in_flight: int = 0
    in_flight_bytes: int = 0
    history: Bucket | None = None

    @property
    def owner(self) -> str:
        """The owner string of this agent's sessions."""
        return f"agent:{self.id}"

    def shown(self) -> AgentIdentity:
        """The identity as the operator sees it beside each of its requests."""
        return AgentIdentity(
            id=self.id,
            label=self.label,
            root_pid=self.root[0] if self.root else None,
            root_comm=self.root_comm,
            anonymous=self.anonymous,
        )

    def to_wire(self, *, secret: str | None = None) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.id,
            "label": self.label,
            "root_pid": self.root[0] if self.root else None,
            "root_comm": self.root_comm,
            "anonymous": self.anonymous,
        }
        if secret is not None:
            out["secret"] = secret
        return out


class AgentRegistry:
    def __init__(self, in_use: Callable[[Agent], bool] = lambda _a: False) -> None:
        self.by_id: dict[str, Agent] = {}
        self._by_root: dict[tuple[int, int], Agent] = {}
        self._secrets: dict[str, str] = {}  # id -> secret, to hand to connections bound later
        self.in_use = in_use

    def __len__(self) -> int:
        return len(self.by_id)

    def secret_of(self, agent: Agent) -> str:
        return self._secrets[agent.id]

    # ------------------------------------------------------------------ making

    def _new(self, uid: int, root: ProcStat | None = None, *, anonymous: bool = False) -> Agent:
        self._prune()
        secret = secrets.token_urlsafe(32)
        agent = Agent(
            id="a-" + secrets.token_hex(8),
            secret_digest=_digest(secret),
            uid=uid,
            created_at=time.time(),
            root=(root.pid, root.start_ticks) if root else None,
            root_comm=root.comm[:64] if root else "",
            anonymous=anonymous,
        )
        self.by_id[agent.id] = agent
        self._secrets[agent.id] = secret
        if agent.root is not None:
            self._by_root[agent.root] = agent
        return agent

    def forget(self, agent: Agent) -> None:
        self.by_id.pop(agent.id, None)
        self._secrets.pop(agent.id, None)
        if agent.root is not None and self._by_root.get(agent.root) is agent:
            del self._by_root[agent.root]

    def _prune(self) -> None:
        if len(self.by_id) < MAX_IDENTITIES:
            return
        idle = sorted(
            (a for a in self.by_id.values() if a.connections == 0 and not self.in_use(a)),
            key=lambda a: a.last_seen,
        )
        for agent in idle[: max(1, len(self.by_id) - MAX_IDENTITIES + 1)]:
            self.forget(agent)

    # ------------------------------------------------------------------ binding

    def by_secret(self, agent_id: str, secret: str) -> Agent:
        """Reconnect: the identity whose secret this is (a wrong one is refused, not created)."""
        if not AGENT_ID.match(agent_id):
            raise InvalidParams("agent_id: a- and 16 lowercase hex digits", {"param": "agent_id"})
        agent = self.by_id.get(agent_id)
        if (
            agent is None
            or not SECRET.match(secret)
            or not hmac.compare_digest(agent.secret_digest, _digest(secret))
        ):
            # One answer for "unknown" and "wrong secret": an id alone tells nothing.
            raise Unauthorized(
                "agent_id/agent_secret: no identity with that secret (identities end when the daemon restarts); "
                "say hello without them to get a new one",
            )
        return agent

    def by_process(self, peer: PeerCred, agent_pid: int) -> Agent:
        """The identity of the process tree rooted at ``agent_pid``, an ancestor of the peer."""
        chain = ancestry(peer.pid)
        root = next((st for st in chain if st.pid == agent_pid), None)
        if root is None:
            raise Unauthorized(
                "agent_pid: not this connection's process or one of its ancestors; name the agent "
                "process you run under",
                {"param": "agent_pid"},
            )
        if not may_name(chain, chain.index(root)):
            raise Unauthorized(
                "agent_pid: must be in this process's session (or reached only through sessions without "
                "a terminal) and not its leader (a login or terminal shell): name the agent process itself",
                {"param": "agent_pid"},
            )
        if proc_uid(root.pid) != peer.uid:
            raise Unauthorized("agent_pid: owned by another user", {"param": "agent_pid"})
        key = (root.pid, root.start_ticks)
        agent = self._by_root.get(key)
        if agent is None:
            agent = self._new(peer.uid, root)
            log.info("new agent %s for process %d (%s)", agent.id, root.pid, root.comm[:64])
        return agent

    def by_ancestry(self, peer: PeerCred) -> Agent | None:
        """The identity rooted at the nearest ancestor (or the peer itself) that the peer
        may name (procs.may_name), if any."""
        if not self._by_root:
            return None
        chain = ancestry(peer.pid)
        for index, st in enumerate(chain):
            agent = self._by_root.get((st.pid, st.start_ticks))
            if agent is not None and agent.uid == peer.uid:
                return agent if may_name(chain, index) else None
        return None

    def fresh(self, peer: PeerCred, *, anonymous: bool = False) -> Agent:
        return self._new(peer.uid, anonymous=anonymous)

    def for_confined_session(self, uid: int, label: str) -> Agent:
        """The identity of a confined session, before it starts (:meth:`root_at` once it has)."""
        agent = self._new(uid)
        agent.confined = True
        agent.label = label
        return agent

    def root_at(self, agent: Agent, pid: int) -> bool:
        """Root ``agent`` at the process ``pid`` (the session's sandbox); False if it is gone."""
        st = proc_stat(pid)
        if st is None:
            return False
        if agent.root is not None and self._by_root.get(agent.root) is agent:
            del self._by_root[agent.root]
        agent.root = (st.pid, st.start_ticks)
        agent.root_comm = st.comm[:64]
        self._by_root[agent.root] = agent
        return True

    def confined(self, peer: PeerCred) -> Agent | None:
        """The confined session's identity when the peer runs inside one. A process in the
        sandbox cannot name another identity by pid (its pids are the sandbox's own, and
        it must not split itself from its session's approvals), so this comes first.

        The session rules of procs.may_name do not apply: they tell agents apart on a
        host where any process may start any other, while the sandbox is the boundary
        here. Its root (bwrap, leading the session's terminal) has every process inside
        below it — an orphan inside is reparented to the sandbox's own pid 1 — and no
        process outside below it."""
        if not any(a.confined for a in self._by_root.values()):
            return None
        for st in ancestry(peer.pid):
            agent = self._by_root.get((st.pid, st.start_ticks))
            if agent is not None and agent.confined and agent.uid == peer.uid:
                return agent
        return None

    def root_alive(self, agent: Agent) -> bool:
        if agent.root is None:
            return False
        st = proc_stat(agent.root[0])
        return st is not None and st.start_ticks == agent.root[1]


# ---------------------------------------------------------------------- connections


def default_agent(conn: Connection) -> Agent:
    """The identity of a connection that named none: its confined session's, its process
    tree's, else a new one."""
    registry = conn.daemon.agents
    return registry.confined(conn.peer) or registry.by_ancestry(conn.peer) or registry.fresh(conn.peer)


def bind(conn: Connection, agent: Agent) -> None:
    """Bind ``conn`` to ``agent``, replacing an identity it has not acted for."""
    old = conn.agent
    if old is agent:
        return
    registry = conn.daemon.agents
    if agent.connections >= quotas.MAX_CONNECTIONS_PER_AGENT:
        raise quotas.refuse(
            conn.daemon,
            "connections_per_agent",
            f"agent {agent.id} already has {agent.connections} connections open; at most "
            f"{quotas.MAX_CONNECTIONS_PER_AGENT} (close the ones it no longer uses)",
            who=agent.id,
            limit=quotas.MAX_CONNECTIONS_PER_AGENT,
        )
    if old is not None:
        if conn.acted:
            raise Conflict(
                f"this connection already acts for agent {old.id}; open a new connection for another identity",
            )
        old.connections -= 1
        if old.connections <= 0 and old.root is None and not registry.in_use(old):
            registry.forget(old)  # made for this connection's first hello, never used
    else:
        conn.on_close.append(lambda: _unbind(conn))
    conn.agent = agent
    agent.connections += 1
    agent.last_seen = time.time()


def _unbind(conn: Connection) -> None:
    agent = conn.agent
    if agent is not None:
        agent.connections -= 1
        agent.last_seen = time.time()


__all__ = ["AGENT_ID", "Agent", "AgentRegistry", "bind", "default_agent"]
