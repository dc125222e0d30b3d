"""What the rest of the console sees of a session: plain, immutable records."""

from __future__ import annotations

import json
import signal
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

Mode = Literal["interactive", "durable"]
Status = Literal["running", "idle", "exited", "lost"]
MODES: tuple[str, ...] = ("interactive", "durable")


class SessionError(Exception):
    """Base of the errors below; the message is safe to show an operator or agent."""


class UnknownSession(SessionError, LookupError):
    pass


class SessionNotRunning(SessionError):
    pass


class ReadOnlyClient(SessionError, PermissionError):
    pass


class InputOverflow(SessionError):
    """The program is not reading its input and the bounded input buffer is full."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    title: str  # given at creation (untrusted when an agent gave it)
    argv: tuple[str, ...]
    cwd: str
    owner: str  # who may act on it besides the operator (e.g. an agent id)
    mode: Mode
    record_input: bool
    created_at: float  # unix time
    pid: int
    pid_create_time: float
    cols: int
    rows: int
    status: Status
    exit_code: int | None = None
    exit_signal: int | None = None
    ended_at: float | None = None
    last_output_at: float | None = None  # unix time of the latest output
    output_bytes: int = 0  # total output so far: the stream's end offset
    terminal_title: str = ""  # what the program set with OSC 0/2 (untrusted)
    recording_truncated: bool = False  # the per-session cap was reached (set as it happens)
    recording_pruned: bool = False  # the recording was deleted to keep the total quota
    # Started in the sandbox (told by the daemon at creation, so every event and the
    # ended session say it too).
    sandboxed: bool = False

    @property
    def alive(self) -> bool:
        return self.status in ("running", "idle")

    @property
    def status_text(self) -> str:
        """'running', 'idle', 'exited (0)', 'exited (SIGKILL)', 'lost'."""
        if self.status != "exited":
            return self.status
        if self.exit_signal is not None:
            try:
                return f"exited ({signal.Signals(self.exit_signal).name})"
            except ValueError:
                return f"exited (signal {self.exit_signal})"
        return f"exited ({self.exit_code})"

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> SessionInfo:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("session metadata is not an object")
        names = {f.name for f in fields(cls)}
        data: dict[str, Any] = {k: v for k, v in raw.items() if k in names}
        data["argv"] = tuple(str(a) for a in data.get("argv", ()))
        if data.get("mode") not in MODES or data.get("status") not in ("running", "idle", "exited", "lost"):
            raise ValueError("session metadata has a bad mode or status")
        return cls(**data)


@dataclass(frozen=True, slots=True)
class SessionStats:
    cpu_percent: float  # of one core, over the session's processes
    rss_bytes: int
    processes: int  # the leader and its descendants
    sampled_at: float  # unix time; 0 before the first sample


@dataclass(frozen=True, slots=True)
class SessionEvent:
    kind: Literal["created", "status", "exited", "lost", "removed", "title"]
    session: SessionInfo
