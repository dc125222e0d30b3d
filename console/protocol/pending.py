"""A pending request as the daemon shows it to the operator: the item of ``pending.list``,
``request.get`` and the ``pending`` event, typed.

Why a type: the item is what the operator decides on, and the console reads nearly every
field of it (the queue's row and badges, the detail, the typed confirmation). As a
mapping, a daemon of another version or a daemon bug surfaced as a wrong badge or a
``KeyError`` deep in a screen; as a Struct, checked at the socket like every result and
event, it is refused there, and the console reads attributes mypy knows.

Like the results (console/protocol/results.py), these allow unknown fields, so a newer
daemon may add a key, and a key the daemon sometimes leaves out is ``UNSET`` (absent on
the wire, never ``null``). Values are the daemon's canonical ones (console/contract/):
enumerations stay strings here, as the contract's wire form has them.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType


class CapabilityWire(msgspec.Struct, frozen=True, kw_only=True):
    """A capability: ``kind`` and, for the path-scoped ones, ``scope``."""

    kind: str
    scope: str | UnsetType = UNSET

    @property
    def label(self) -> str:
        """``kind(scope)``, or ``kind`` when it has no scope."""
        return f"{self.kind}({self.scope})" if self.scope else self.kind


class DiffLine(CapabilityWire, frozen=True, kw_only=True):
    """One line of the capability diff: a capability and why it is on that side; ``code``
    tells apart the causes of one kind (``new_workspace``)."""

    reason: str
    code: str | UnsetType = UNSET


class Evaluation(msgspec.Struct, frozen=True, kw_only=True):
    """What the policy said of the request, and the capability diff the operator sees
    (console/policy/diff.py): what it asks for, the sandbox's ceiling, what stays within
    it, the escalations beyond it, the part of the ceiling left unused, what the sandbox
    still forbids, and, for ``unrestricted``, what approving lifts."""

    verdict: str
    reason: str
    requested: list[CapabilityWire]
    ceiling: list[CapabilityWire]
    escalations: list[DiffLine]
    within: list[DiffLine]
    unused: list[DiffLine]
    forbidden: list[DiffLine]
    lifted: list[DiffLine]


class OutputLimits(msgspec.Struct, frozen=True, kw_only=True):
    capture_bytes: int
    max_bytes: int


class OperationWire(msgspec.Struct, frozen=True, kw_only=True):
    """The canonical operation (``Operation.to_wire``): ``cwd`` relative to
    ``workspace_root``, ``stdin`` base64, every path canonical."""

    origin: str
    mode: str
    kind: str
    tool: str
    executable: str
    args: list[str]
    workspace_root: str
    cwd: str
    env: dict[str, str]
    stdin: str
    timeout_ms: int
    output: OutputLimits
    workspace_access: str
    write_dirs: list[str]
    network: str
    capabilities: list[CapabilityWire]
    justification: str
    session_id: str

    @property
    def argv(self) -> list[str]:
        return [self.executable, *self.args]


class ProposedChange(msgspec.Struct, frozen=True, kw_only=True):
    """The file a Write or Edit would leave, against the file now (console/daemon/proposed.py);
    ``diff`` is empty, and ``note`` says why, when it cannot be shown."""

    path: str
    diff: str
    new_file: bool
    old_bytes: int
    new_bytes: int
    note: str


class AgentIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """An agent identity as the daemon shows it: the identity of a pending request, the
    caller's own in ``daemon.status`` on agent.sock."""

    id: str
    label: str  # the agent's own session id: a label, never a key
    root_pid: int | None  # the agent process the identity is bound to, if any
    root_comm: str
    anonymous: bool  # one call of an agent that reached no agent process: no session grants

    @property
    def shown(self) -> str:
        """``a-1234abcd label claude[4321]``, or ``anonymous a-1234abcd`` (untrusted label:
        the caller escapes it)."""
        short = self.id[:10]
        if self.anonymous:
            return f"anonymous {short}"
        process = f"{self.root_comm or '?'}[{self.root_pid}]" if self.root_pid else "no process"
        return " ".join(p for p in (short, self.label, process) if p)


class PendingItem(msgspec.Struct, frozen=True, kw_only=True):
    """A request waiting for the operator. ``agent_id`` is the identity that asked,
    ``session_id`` the label it gave; ``content`` the files whose bytes the decision is
    bound to (path, sha256, or None for a file that does not exist yet: creating it
    changes the fingerprint), ``unbound`` those it could not bind; ``supersedes`` the request
    this one replaces because its bound content changed."""

    request_id: str
    fingerprint: str
    submitted_at: float
    deadline: float
    peer_pid: int
    agent_id: str
    session_id: str
    command: str
    operation: OperationWire
    content: list[tuple[str, str | None]]  # (path, sha256), None: the file is absent
    unbound: list[str]
    supersedes: str
    proposed: ProposedChange | None
    evaluation: Evaluation
    agent: AgentIdentity | UnsetType = UNSET  # who asked (absent in records of older daemons)


# An operation and an evaluation with nothing in them: what fills the parts of an item
# that a record does not hold (a history entry, one written by an older daemon).
EMPTY_OPERATION: MappingProxyType[str, Any] = MappingProxyType(
    {
        "origin": "",
        "mode": "",
        "kind": "",
        "tool": "",
        "executable": "",
        "args": [],
        "workspace_root": "",
        "cwd": ".",
        "env": {},
        "stdin": "",
        "timeout_ms": 0,
        "output": {"capture_bytes": 0, "max_bytes": 0},
        "workspace_access": "",
        "write_dirs": [],
        "network": "",
        "capabilities": [],
        "justification": "",
        "session_id": "",
    }
)
EMPTY_EVALUATION: MappingProxyType[str, Any] = MappingProxyType(
    {
        "verdict": "",
        "reason": "",
        **{k: [] for k in ("requested", "ceiling", "escalations", "within", "unused", "forbidden", "lifted")},
    }
)
