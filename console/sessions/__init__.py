"""Daemon-owned PTY sessions: processes, screens, ring buffers, recordings.

See ARCHITECTURE.md, "Sessions". The emulator itself is `console.terminal`, shared
with the TUI's panes.
"""

from .attach import AttachEvent, Attachment, Ended, Output, Resized, Snapshot
from .info import (
    InputOverflow,
    ReadOnlyClient,
    SessionError,
    SessionEvent,
    SessionInfo,
    SessionNotRunning,
    SessionStats,
    UnknownSession,
)
from .manager import SessionManager
from .procs import ProcHandle
from .recording import RecordingError, read_recording, replay, screen_from_recording
from .ring import ReadResult, RingBuffer

__all__ = [
    "AttachEvent",
    "Attachment",
    "Ended",
    "InputOverflow",
    "Output",
    "ProcHandle",
    "ReadOnlyClient",
    "ReadResult",
    "RecordingError",
    "Resized",
    "RingBuffer",
    "SessionError",
    "SessionEvent",
    "SessionInfo",
    "SessionManager",
    "SessionNotRunning",
    "SessionStats",
    "Snapshot",
    "UnknownSession",
    "read_recording",
    "replay",
    "screen_from_recording",
]
