"""Starting the daemon in the background, for `daemon start` and for the console."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from console.client.errors import DaemonUnreachable
from console.locations import Locations, ensure_private_dir
from console.protocol.peer import peer_credentials


def running_pid(loc: Locations) -> int | None:
    """The pid of the daemon answering for ``loc``, or None."""
    import socket

    if not loc.agent_socket.exists():
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2.0)
        try:
            s.connect(str(loc.agent_socket))
        except OSError:
            return None
        cred = peer_credentials(s)
        return cred.pid if cred.uid == os.geteuid() else None


def start_daemon(loc: Locations, *, wait_s: float = 15.0) -> tuple[int, bool]:
    """Start a detached daemon unless one runs; returns (pid, started_now)."""
    pid = running_pid(loc)
    if pid is not None:
        return pid, False
    ensure_private_dir(loc.state_dir)
    log = open(loc.log, "ab", buffering=0)  # noqa: SIM115 - handed to the child
    start = log.tell()  # what this start writes to the log begins here
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "console", "daemon", "run", "--state-dir", str(loc.state_dir)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        log.close()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        pid = running_pid(loc)
        # The agent socket answers first; the caller's next step is often the operator's.
        if pid is not None and _accepts(str(loc.operator_socket)):
            return pid, True
        code = proc.poll()
        if code is not None:
            pid = running_pid(loc)
            if pid is not None:  # lost a race with another starter: theirs is fine
                return pid, False
            raise DaemonUnreachable(_why_not_started(loc, start, code))
        time.sleep(0.05)
    raise DaemonUnreachable(f"the daemon did not answer within {wait_s:.0f} s; see {loc.log}")


def _accepts(path: str) -> bool:
    """Whether a daemon listens on the Unix socket at ``path`` (the file exists from bind on,
    before the daemon listens)."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2.0)
        try:
            s.connect(path)
        except OSError:
            return False
        return True


def _why_not_started(loc: Locations, start: int, code: int) -> str:
    """The daemon's own one-line reason when it gave one (``agent-console: …``), else the
    end of what this start wrote to the log; never an earlier run's lines."""
    try:
        with open(loc.log, "rb") as f:
            f.seek(start)
            written = f.read(1 << 16).decode("utf-8", "replace").splitlines()
    except OSError:
        written = []
    said = [line.removeprefix("agent-console: ") for line in written if line.startswith("agent-console: ")]
    if said:
        return f"the daemon did not start: {said[-1]}"
    tail = "\n".join(written[-5:])
    return f"the daemon exited at start (status {code}); see {loc.log}" + (f":\n{tail}" if tail else "")
