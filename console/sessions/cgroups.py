"""One cgroup v2 per PTY session, so that pause stops every process of it.

A process group, a session id or a parent link can all be left (``setsid``, a
double fork, job control puts each job in its own group), but a cgroup cannot be left
by an unprivileged process. When the daemon can create cgroups (root, or a delegated
subtree), each session is created in its own one::

    <the daemon's own cgroup>/agent-console-<pid>-<tag>/s-<session id>

The child joins it before exec (it writes ``0`` to ``cgroup.procs`` in the spawn's
pre-exec hook), so there is no moment in which the program runs outside it, and
everything it starts is born inside. Freezing writes ``1`` to ``cgroup.freeze`` and
waits (bounded) for ``frozen 1`` in ``cgroup.events``; thawing writes ``0``;
``cgroup.kill`` sends SIGKILL to every member at once. A session's directory goes
when it ends, the parent at daemon stop.

When cgroups are not available (or ``AGENT_CONSOLE_NO_CGROUP=1``), ``procs.py``'s
environment-marker walk is the fallback: it SIGSTOPs every process carrying the
session's marker, repeatedly, until a walk finds no new one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

DISABLE_VAR = "AGENT_CONSOLE_NO_CGROUP"
CGROUP_MODE = "cgroup freeze"
WALK_MODE = "process walk"
PARENT_PREFIX = "agent-console-"


def _v2_mount() -> Path | None:
    """Where the unified (v2) hierarchy is mounted: /sys/fs/cgroup, or
    /sys/fs/cgroup/unified on a hybrid system."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    found: list[str] = []
    for line in lines:
        left, sep, right = line.partition(" - ")
        if sep and right.split(" ", 1)[0] == "cgroup2":
            fields = left.split(" ")
            if len(fields) > 4:
                found.append(fields[4].replace("\\040", " "))
    if not found:
        return None
    found.sort(key=lambda p: (p != "/sys/fs/cgroup", len(p)))
    return Path(found[0])


def _own_cgroup() -> str | None:
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            for line in f:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        return None
    return None


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _events(directory: Path) -> dict[str, str]:
    try:
        text = (directory / "cgroup.events").read_text()
    except OSError:
        return {}
    return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SessionCgroup:
    """One session's cgroup directory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def joiner(self) -> Callable[[], None]:
        """For the spawn's pre-exec hook: move the forked child into the cgroup.

        A failure is swallowed here (the pre-exec hook cannot log); the caller checks
        membership after spawn with ``contains`` and falls back to the walk."""
        procs = os.fspath(self.path / "cgroup.procs").encode()

        def join() -> None:
            try:
                fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
            except OSError:
                pass

        return join

    def pids(self) -> list[int]:
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(x) for x in text.split()]

    def contains(self, pid: int) -> bool:
        return pid in self.pids()

    def populated(self) -> bool:
        return _events(self.path).get("populated") == "1"

    def frozen(self) -> bool:
        return _events(self.path).get("frozen") == "1"

    def freeze(self, wait_s: float = 1.0) -> bool:
        """Freeze every member; True once the kernel reports the whole cgroup frozen."""
        _write(self.path / "cgroup.freeze", "1")
        deadline = time.monotonic() + wait_s
        while True:
            if self.frozen() or not self.populated():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)

    def freeze_requested(self) -> bool:
        """What ``cgroup.freeze`` holds: whether a freeze is asked for (by anyone)."""
        try:
            return (self.path / "cgroup.freeze").read_text().strip() == "1"
        except OSError:
            return True  # gone: nothing runs there to be thawed

    def thaw(self) -> None:
        _write(self.path / "cgroup.freeze", "0")

    def kill(self) -> None:
        """SIGKILL to every member (frozen ones included)."""
        with contextlib.suppress(OSError):
            _write(self.path / "cgroup.kill", "1")

    def remove(self, wait_s: float = 0.5) -> bool:
        """rmdir, retried briefly while the last members are being reaped."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                os.rmdir(self.path)
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.01)


class CgroupTree:
    """The daemon's parent cgroup and a child per session, or nothing (``available``
    False) when the daemon cannot create them."""

    def __init__(self, parent: Path | None, reason: str = "") -> None:
        self.parent = parent
        self.reason = reason
        self._children: dict[str, SessionCgroup] = {}

    @property
    def available(self) -> bool:
        return self.parent is not None

    @property
    def mode(self) -> str:
        return CGROUP_MODE if self.available else WALK_MODE

    @classmethod
    def create(cls) -> CgroupTree:
        if os.environ.get(DISABLE_VAR) == "1":
            return cls(None, f"{DISABLE_VAR}=1")
        mount = _v2_mount()
        own = _own_cgroup()
        if mount is None or own is None:
            return cls(None, "no cgroup v2 hierarchy")
        base = mount / own.lstrip("/")
        _clean_stale(base)
        parent = base / f"{PARENT_PREFIX}{os.getpid()}-{secrets.token_hex(3)}"
        try:
            parent.mkdir(mode=0o755)
        except OSError as exc:
            return cls(None, f"cannot create a cgroup under {base}: {exc.strerror}")
        probe = parent / "probe"
        try:
            probe.mkdir()
            ok = (probe / "cgroup.freeze").exists() and (probe / "cgroup.kill").exists()
            probe.rmdir()
        except OSError as exc:
            ok = False
            log.info("cgroup probe failed: %s", exc)
        if not ok:
            with contextlib.suppress(OSError):
                parent.rmdir()
            return cls(None, "the cgroup hierarchy has no freezer or kill")
        return cls(parent)

    def for_session(self, session_id: str) -> SessionCgroup | None:
        if self.parent is None:
            return None
        path = self.parent / f"s-{session_id}"
        try:
            path.mkdir(mode=0o755)
        except OSError as exc:
            log.warning("could not create a cgroup for session %s: %s", session_id, exc)
            return None
        cg = SessionCgroup(path)
        self._children[session_id] = cg
        return cg

    def release(self, session_id: str) -> bool:
        """Remove the session's cgroup if it is empty; False if members remain."""
        cg = self._children.get(session_id)
        if cg is None:
            return True
        if cg.populated():
            return False
        if cg.remove():
            self._children.pop(session_id, None)
            return True
        return False

    def close(self) -> None:
        """Daemon stop: kill whatever is left in session cgroups and remove them all."""
        if self.parent is None:
            return
        for sid, cg in list(self._children.items()):
            with contextlib.suppress(OSError):
                cg.thaw()
            cg.kill()
            if cg.remove(wait_s=2.0):
                self._children.pop(sid, None)
            else:
                log.warning("could not remove cgroup %s", cg.path)
        _remove_tree(self.parent)


def _remove_tree(parent: Path) -> bool:
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            if child.is_dir():
                SessionCgroup(child).remove(wait_s=0.2)
    try:
        os.rmdir(parent)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _clean_stale(base: Path) -> None:
    """Parents left by a daemon that died without cleaning up: removed when empty."""
    try:
        entries = list(base.iterdir())
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if not name.startswith(PARENT_PREFIX):
            continue
        pid = name[len(PARENT_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            _remove_tree(entry)


def pid_frozen(pid: int) -> bool:
    """Whether ``pid`` sits in a frozen cgroup v2 (its state in /proc stays "S")."""
    mount = _v2_mount()
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as f:
            own = next((line[3:].strip() for line in f if line.startswith("0::")), None)
    except OSError:
        return False
    if mount is None or own is None:
        return False
    return _events(mount / own.lstrip("/")).get("frozen") == "1"
