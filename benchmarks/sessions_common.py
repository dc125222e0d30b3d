"""Shared pieces of the sessions benchmarks: test data and a private tmux server.

Not a benchmark itself. Every sessions benchmark measures tmux in the same run, on
the same data and terminal size, so the figures are ratios that hold on a noisy
machine.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
import uuid
from pathlib import Path

COLOURS = ["01;34", "01;32", "0", "38;5;208", "01;36", "38;2;10;200;30", "00;35"]


def ls_lines(total_bytes: int, seed: int = 1) -> bytes:
    """Coloured `ls -l`-like lines, about `total_bytes` long, ending with a unique
    marker line."""
    rnd = random.Random(seed)
    out: list[bytes] = []
    size = 0
    i = 0
    while size < total_bytes:
        name = f"file_{i:07d}.{rnd.choice(['py', 'txt', 'log', 'md', 'json'])}"
        line = (
            f"-rw-r--r-- 1 user staff {rnd.randrange(10**8):>9} Nov 30 13:{i % 60:02d} "
            f"\x1b[{rnd.choice(COLOURS)}m{name}\x1b[0m\n"
        ).encode()
        out.append(line)
        size += len(line)
        i += 1
    out.append(b"END-OF-FLOOD\n")
    return b"".join(out)


def wide_lines(count: int, cols: int = 200, seed: int = 2) -> bytes:
    """`count` lines of exactly `cols` printable columns with a little colour."""
    rnd = random.Random(seed)
    alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789 "
    out = []
    for i in range(count):
        head = b"\x1b[32m%08d\x1b[0m " % i
        out.append(head + bytes(rnd.choice(alphabet) for _ in range(cols - 9)) + b"\n")
    return b"".join(out)


class Tmux:
    """A private tmux server (own socket, no user config)."""

    def __init__(self, history_limit: int = 10_000) -> None:
        if shutil.which("tmux") is None:
            raise SystemExit("tmux is required for the comparison (apt-get install tmux)")
        self.socket = f"bench-{uuid.uuid4().hex[:8]}"
        self.history_limit = history_limit
        self._n = 0

    def cmd(self, *args: str, check: bool = True) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=check,
        )
        return out.stdout

    def start(self) -> int:
        """Start the server with an idle placeholder session; returns its PID."""
        self.cmd("new-session", "-d", "-s", "base", "-x", "120", "-y", "40", "sleep 100000")
        self.cmd("set-option", "-g", "history-limit", str(self.history_limit))
        return int(self.cmd("display-message", "-p", "-t", "base", "#{pid}").strip())

    def new_pane(self, command: str, cols: int, rows: int) -> str:
        self._n += 1
        name = f"s{self._n}"
        self.cmd("new-session", "-d", "-s", name, "-x", str(cols), "-y", str(rows), command)
        return name

    def capture(self, target: str) -> str:
        return self.cmd("capture-pane", "-p", "-t", target, check=False)

    def wait_for_text(self, target: str, needle: str, timeout: float = 120.0, poll: float = 0.005) -> float:
        """Poll capture-pane until `needle` shows; returns the monotonic time seen."""
        deadline = time.monotonic() + timeout
        while True:
            if needle in self.capture(target):
                return time.monotonic()
            if time.monotonic() > deadline:
                raise TimeoutError(f"tmux pane never showed {needle!r}")
            time.sleep(poll)

    def kill(self) -> None:
        self.cmd("kill-server", check=False)


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def write_data(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.write_bytes(data)
    return path
