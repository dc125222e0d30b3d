"""A terminal session as the daemon shows it (``sessions.list``, ``sessions.get``, the
``sessions`` event, an approved interactive operation's answer), typed, and what its
wire form says beyond its fields, worded once for every client (the console's list,
`agent-console sessions`).

Like the results (console/protocol/results.py), it allows unknown fields, so a newer
daemon may add a key; every key it has is always sent.
"""

from __future__ import annotations

import msgspec

ALIVE = ("running", "idle")


class SessionStats(msgspec.Struct, frozen=True, kw_only=True):
    """The session's processes, sampled: ``sampled_at`` is 0 before the first sample."""

    cpu_percent: float  # of one core
    rss_bytes: int
    processes: int  # the leader and its descendants
    sampled_at: float


class SessionObject(msgspec.Struct, frozen=True, kw_only=True):
    """A session (console/sessions/info.py's ``SessionInfo``) with what the daemon knows
    of it besides: ``status_text`` ("paused by tripwire (cgroup freeze)", "paused by
    tripwire (SIGSTOP, process walk)", "awaiting approval", "exited (0)"…), whether it runs in the sandbox, and its last sample (null when it has none).
    ``title``, ``argv`` and ``terminal_title`` are the agent's or a program's text."""

    id: str
    title: str
    argv: list[str]
    cwd: str
    owner: str  # "operator", or "agent:<identity>"
    mode: str  # interactive or durable
    record_input: bool
    created_at: float
    pid: int
    pid_create_time: float
    cols: int
    rows: int
    status: str  # running, idle, exited or lost
    exit_code: int | None
    exit_signal: int | None
    ended_at: float | None
    last_output_at: float | None
    output_bytes: int
    terminal_title: str
    recording_truncated: bool
    recording_pruned: bool
    status_text: str
    sandboxed: bool
    stats: SessionStats | None

    @property
    def alive(self) -> bool:
        return self.status in ALIVE


def recording_note(session: SessionObject) -> str:
    """Why the session's recording is not the whole of its output, or ''. The daemon
    sets the flags the moment they become true, so a client can show them live."""
    if session.recording_pruned:
        return "recording pruned"
    if session.recording_truncated:
        return "recording truncated"
    return ""
