"""The daemon's status and its parts, typed: what ``daemon.status`` answers, what
``subscribe`` starts with and what every ``status`` event carries, and the attention
entry (``agent.attention``, ``agent.attention_list``, the ``attention`` event).

Why Structs: the console's header, pills and notices and ``agent-console daemon status``
all read these parts; typed, a daemon that answers otherwise fails at the socket, naming
the field, instead of a screen finding a missing key later.

``daemon.status`` has two views (console/daemon/methods/core.py): the operator's, with
every part, and an agent's, with its own standing. Three parts are in both under the same
key but say less to an agent: ``policy`` (the operator's whole policy, or the facts an
agent acts on), ``sandbox`` (an agent gets the summary only) and ``sessions`` (an agent
gets its own counts only). Their keys of one view are ``may be absent`` in the other,
as the results' rule is (console/protocol/results.py): ``X | UnsetType = UNSET``.

Like the results, every Struct here allows unknown fields, so a newer daemon may add a key.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType


class PolicyConfigView(msgspec.Struct, frozen=True, kw_only=True):
    """The policy in force (console/policy/config.py ``PolicyConfig.to_dict``).
    ``network_policy`` and ``agents`` stay mappings: the egress lists and the agent CLIs'
    profiles are open-ended, are shown as the policy file writes them, and have their
    own pages (docs/policy.md)."""

    sandbox: str
    network: str
    approval: str
    protected: list[str]
    approval_timeout_s: float
    tripwire: str
    allow_degraded: bool
    watch: list[str]
    workspaces: list[str]
    readable: list[str]
    hidden: list[str]
    session_env: dict[str, str]
    recording_max_mb: int
    recordings_total_mb: int
    network_policy: dict[str, Any]
    agents: dict[str, dict[str, Any]]
    sandbox_path: list[str] | None


class PolicyStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The operator's view: where the policy came from, its last load error ("" when it
    loaded), and the policy itself. An agent's view: the facts it acts on."""

    source: str | UnsetType = UNSET  # operator view: a path, or "defaults"
    error: str | UnsetType = UNSET  # operator view
    config: PolicyConfigView | UnsetType = UNSET  # operator view
    sandbox: str | UnsetType = UNSET  # agent view
    network: str | UnsetType = UNSET  # agent view
    approval: str | UnsetType = UNSET  # agent view
    approval_timeout_s: float | UnsetType = UNSET  # agent view


class SandboxProbeStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What the start-up probe of bubblewrap found (console/sandbox/probing.py)."""

    available: bool
    backend: str
    path: str
    version: str
    user_ns: bool
    pid_ns: bool
    net_ns: bool
    ipc_ns: bool
    uts_ns: bool
    network_isolated: bool
    seccomp: bool
    disable_userns: bool
    reason: str
    duration_ms: float


class SandboxStatus(msgspec.Struct, frozen=True, kw_only=True):
    summary: str
    probe: SandboxProbeStatus | UnsetType | None = UNSET  # operator view; null while probing
    running: int | UnsetType = UNSET  # operator view
    path: list[str] | UnsetType = UNSET  # operator view: the sandbox's PATH
    path_source: str | UnsetType = UNSET  # operator view
    seccomp: str | UnsetType = UNSET  # operator view


class SessionsStatus(msgspec.Struct, frozen=True, kw_only=True):
    running: int
    total: int
    summary: str | UnsetType = UNSET  # operator view
    pause_mode: str | UnsetType = UNSET  # operator view: "cgroup freeze" or "process walk"
    pause_mode_reason: str | UnsetType = UNSET  # operator view


class EgressStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The egress broker's runs now and its connections since start."""

    runs: int
    allowed: int
    refused: int
    asked: int


class AttentionStatus(msgspec.Struct, frozen=True, kw_only=True):
    waiting: int
    entries: int
    transitions: int


class StatusHistory(msgspec.Struct, frozen=True, kw_only=True):
    unaccepted: list[tuple[int, int]]  # (from_seq, to_seq) ranges flagged at start-up


class IntegrityFinding(msgspec.Struct, frozen=True, kw_only=True):
    what: str
    first_bad_seq: int | None
    message: str
    found: str  # "at start" or "full verify"


class IntegrityStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The history's check at start (console/daemon/integrity.py)."""

    state: str  # checking | intact | tampered | failed
    checked: int
    total: int
    findings: list[IntegrityFinding]
    finished_at: float | None
    error: str


class AttentionEntry(msgspec.Struct, frozen=True, kw_only=True):
    """An agent's attention state (console/daemon/attention.py), with how the console
    names the agent. ``message`` and ``agent_label`` are the agent's text."""

    agent_id: str
    session_id: str
    state: str  # waiting, working or done
    state_text: str
    since: float
    updated_at: float
    message: str
    kind: str
    reports: int
    transitions: int
    agent_kind: str
    agent_label: str
    root_pid: int | None
    root_comm: str
    agent_alive: bool
