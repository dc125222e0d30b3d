"""The sandbox's PATH: the operator's toolchains, never a directory the agent can write.

A fixed system PATH left out everything a developer installs per user: an nvm-only
``node`` was "not found", pyenv's ``python`` was the system's. So the daemon takes the
PATH of the environment it was started from, keeps the directories that

- are absolute and exist (a directory, after following links);
- are not world- or group-writable, and are owned by root or the operator;
- are not scratch space (``/tmp``, ``/var/tmp``, ``/dev/shm``, the console's state);

and, for each run, drops those the run itself can write (the workspace, its write
dirs, an agent's state): a ``git`` the agent dropped there would otherwise win. What
is left is bound read-only into the sandbox (plan.py) and is also where the daemon
looks executables up (console/contract/host.py), so what it shows the operator is
what runs. The policy's ``[sandbox] path = [...]`` replaces the operator's PATH (the
same checks apply); ``daemon status`` shows the result.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from console.contract.host import DEFAULT_TRUSTED_PATH
from console.contract.operation import is_within

SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/proc", "/sys", "/dev", "/run")


def _fit(entry: str, hidden: Iterable[str], uid: int) -> str | None:
    """The canonical directory ``entry`` names, if the sandbox may use it."""
    if not entry.startswith("/") or "\x00" in entry:
        return None
    real = os.path.realpath(entry)
    try:
        st = os.stat(real)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & 0o022 or st.st_uid not in (0, uid):
        return None
    if any(is_within(real, s) for s in (*SCRATCH, *hidden)):
        return None
    return real


def toolchain_path(
    path: str | Iterable[str] | None,
    *,
    home: str = "",
    hidden: Iterable[str] = (),
    uid: int | None = None,
) -> tuple[str, ...]:
    """The directories of ``path`` (a PATH string or entries; ``~/`` is ``home``) fit for
    the sandbox, in order, each once; the system's default PATH when none is."""
    entries = path.split(":") if isinstance(path, str) else list(path or ())
    hidden = tuple(hidden)
    owner = os.geteuid() if uid is None else uid
    out: list[str] = []
    for entry in entries:
        if entry.startswith("~/") and home.startswith("/"):
            entry = home.rstrip("/") + entry[1:]
        real = _fit(entry, hidden, owner)
        if real is not None and real not in out:
            out.append(real)
    if not out:
        return tuple(d for d in DEFAULT_TRUSTED_PATH.split(":") if os.path.isdir(d))
    return tuple(out)


def for_run(path: tuple[str, ...], writable: Iterable[str]) -> tuple[str, ...]:
    """``path`` without what this run can write."""
    writable = tuple(writable)
    return tuple(d for d in path if not any(is_within(d, w) for w in writable))
