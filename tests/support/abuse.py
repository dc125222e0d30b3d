"""Helpers for the identity and quota attack tests: raw sockets, daemon memory, agents.

Each helper talks to a real daemon over its real sockets; nothing here fakes the daemon.
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

from console.client import Client


def rss_kib(pid: int) -> int:
    """The daemon's resident memory (VmRSS of /proc/PID/status), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def frame(msg_id: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if msg_id is not None:
        msg["id"] = msg_id
    return json.dumps(msg).encode() + b"\n"


def raw(path: Path, timeout_s: float = 30) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(path))
    s.settimeout(timeout_s)
    return s


def read_lines(s: socket.socket, count: int = 1) -> list[dict[str, Any]]:
    """Read until ``count`` whole frames arrived or the daemon hung up."""
    data = b""
    while data.count(b"\n") < count:
        try:
            chunk = s.recv(1 << 16)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        data += chunk
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def hung_up(s: socket.socket) -> bool:
    """True once the daemon closed this connection (reads drain what was already sent)."""
    try:
        while chunk := s.recv(1 << 16):
            del chunk
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def same_agent(daemon: Any, identity: dict[str, Any]) -> Client:
    """Another connection of the agent ``identity`` (reconnecting by its secret)."""
    client = daemon.agent()
    client.call("hello", {"agent_id": identity["id"], "agent_secret": identity["secret"]})
    return client


def in_thread(fn: Any) -> Any:
    """Run ``fn`` in a thread; the returned getter joins it and returns its result."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except Exception as exc:
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()

    def result(timeout: float = 30) -> Any:
        t.join(timeout)
        if "error" in box:
            raise box["error"]
        return box.get("value")

    return result
