"""A real daemon in a real process on real sockets, for tests.

State dirs live under /tmp with short names: a Unix socket path must fit in 107 bytes.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from console.client import Client
from console.client.spawn import running_pid
from console.locations import Locations, locate
from console.sessions.cgroups import pid_frozen

# Test workspaces live in a directory of their own (see workspace()), and pytest's
# tmp_path under its own base: the daemon trusts both unless a test's policy names its own
# `workspaces`. /tmp itself can never be trusted (it is shared), nor a parent of the
# daemon's state directory.
TEST_WORKSPACES = Path(tempfile.gettempdir()) / f"ac-ws-{os.getuid()}"
PYTEST_TMP = Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"


def trusted_test_roots(state_dir: Path | None = None) -> list[str]:
    """The roots a test daemon trusts: never one that holds its own state."""
    roots = [str(TEST_WORKSPACES), str(PYTEST_TMP)]
    if state_dir is None:
        return roots
    state = str(state_dir.resolve())
    return [r for r in roots if not (state == r or state.startswith(r + "/"))]


def trusting_test_workspaces(policy: str, state_dir: Path | None = None) -> str:
    """``policy`` with the test workspaces trusted, unless it says which to trust."""
    if re.search(r"^\s*workspaces\s*=", policy, re.MULTILINE):
        return policy
    line = f"workspaces = {json.dumps(trusted_test_roots(state_dir))}\n"
    return (policy.rstrip("\n") + "\n" if policy.strip() else "") + line


class DaemonProcess:
    def __init__(
        self,
        state_dir: Path,
        policy: str | None = None,
        env: dict[str, str] | None = None,
        prefix: list[str] | None = None,
    ) -> None:
        """``prefix``: what the daemon runs under (``ip netns exec NAME``: tests/support/netns.py)."""
        self.prefix = list(prefix or [])
        self.state_dir = state_dir
        self.env = {**os.environ, **env} if env else None
        self.loc: Locations = locate(state_dir)
        self.proc: subprocess.Popen[bytes] | None = None
        if policy is not None or not self.loc.policy.exists():
            state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.loc.policy.write_text(trusting_test_workspaces(policy or "", state_dir))

    @property
    def log_path(self) -> Path:
        return self.state_dir.parent / (self.state_dir.name + ".log")

    def start(self, timeout_s: float = 45.0) -> DaemonProcess:
        log = open(self.log_path, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                *self.prefix,
                sys.executable,
                "-m",
                "console",
                "daemon",
                "run",
                "--state-dir",
                str(self.state_dir),
                "--log-level",
                "debug",
            ],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            env=self.env,
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if running_pid(self.loc) == self.proc.pid and self._accepting():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.02)
        raise RuntimeError(f"daemon did not start:\n{self.log()}")

    def _accepting(self) -> bool:
        """Both sockets take connections (a socket file exists between bind and listen)."""
        import socket

        for path in (self.loc.operator_socket, self.loc.agent_socket):
            with socket.socket(socket.AF_UNIX) as s:
                try:
                    s.connect(str(path))
                except OSError:
                    return False
        return True

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 15.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(5)

    def operator(self, **kw) -> Client:
        return Client.connect(self.loc, role="operator", **kw)

    def agent(self, **kw) -> Client:
        return Client.connect(self.loc, role="agent", **kw)

    def cli(
        self, *args: str, stdin: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        # The state dir goes before a `--` (after it, everything is the command to run).
        args_ = list(args)
        at = args_.index("--") if "--" in args_ else len(args_)
        args_[at:at] = ["--state-dir", str(self.state_dir)]
        return subprocess.run(
            [sys.executable, "-m", "console", *args_],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def short_tmp(prefix: str = "ac-") -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


@contextmanager
def running_daemon(
    policy: str | None = None, env: dict[str, str] | None = None, prefix: list[str] | None = None
) -> Iterator[DaemonProcess]:
    """``env``: variables added to the daemon's environment (e.g. a fallback switch);
    ``prefix``: what it runs under."""
    base = short_tmp()
    d = DaemonProcess(base / "s", policy, env, prefix)
    try:
        yield d.start()
    finally:
        d.stop()
        shutil.rmtree(base, ignore_errors=True)


def trusted_dir(prefix: str = "ws-") -> Path:
    """A fresh directory under the trusted test parent (made, private, on first use)."""
    TEST_WORKSPACES.mkdir(mode=0o700, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=TEST_WORKSPACES))


def workspace(base: Path | None = None) -> Path:
    root = (base or trusted_dir("ws-")) / "project"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "README.md").write_text("hello\n")
    return root


def operation(ws: Path, **fields) -> dict:
    op = {"kind": "process", "executable": "true", "workspace_root": str(ws)}
    op.update(fields)
    return op


def wait_for(predicate, timeout_s: float = 10.0, interval_s: float = 0.02):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError("condition not met in time")


def in_background(fn, what: str = "the call"):
    """Run ``fn`` in a thread (as an agent waiting for a decision would); returns a getter
    that joins it and gives its value or raises its exception."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except Exception as exc:  # surfaced by the getter
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()

    def result(timeout=60):
        t.join(timeout)
        assert not t.is_alive(), f"{what} did not return"
        if "error" in box:
            raise box["error"]
        return box["value"]

    return result


def submit_in_thread(d: DaemonProcess, op: dict, **kw):
    """Submit from a thread and hand back a getter for the answer."""

    def submit():
        with d.agent() as agent:
            return agent.submit(op, **kw)

    return in_background(submit, "the agent's submit")


__all__ = [
    "TEST_WORKSPACES",
    "DaemonProcess",
    "in_background",
    "operation",
    "running_daemon",
    "short_tmp",
    "submit_in_thread",
    "trusted_dir",
    "trusted_test_roots",
    "trusting_test_workspaces",
    "wait_for",
    "workspace",
]


def stopped(pid: int) -> bool:
    """SIGSTOPped (process walk) or in a frozen cgroup (cgroup freeze)."""
    return psutil.Process(pid).status() == psutil.STATUS_STOPPED or pid_frozen(pid)
