"""What /proc says about a process: parent, session, start time, owner.

The daemon binds an agent identity to a process tree ("the processes descended from pid
P that started at T"), so it needs a process's parent chain and a start time that tells
a pid apart from a later process that reuses it. Clients use the same reading to name
the agent process they run under. Nothing here trusts the process being read: a
process may exit or be replaced between two reads, and every reader returns None then.
"""

from __future__ import annotations

import os
from typing import NamedTuple

# A parent chain longer than this is not a real process tree (pid_max is 2**22).
MAX_DEPTH = 256


class ProcStat(NamedTuple):
    pid: int
    ppid: int
    session: int
    start_ticks: int  # since boot, in clock ticks: with the pid, names one process
    comm: str
    tty: int = 0  # the controlling terminal (tty_nr); 0: none


def proc_stat(pid: int) -> ProcStat | None:
    """Fields of /proc/PID/stat, or None when the process is gone or unreadable."""
    if pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read(4096)
    except OSError:
        return None
    # comm is in parentheses and may itself hold spaces and parentheses: split at the last.
    left, right = raw.find(b"("), raw.rfind(b")")
    if left < 0 or right < left:
        return None
    fields = raw[right + 2 :].split()
    try:
        return ProcStat(
            pid=pid,
            ppid=int(fields[1]),
            session=int(fields[3]),
            start_ticks=int(fields[19]),
            comm=raw[left + 1 : right].decode("utf-8", "replace"),
            tty=int(fields[4]),
        )
    except (IndexError, ValueError):
        return None


def proc_uid(pid: int) -> int | None:
    """The real uid of a process, or None."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def ancestry(pid: int) -> list[ProcStat]:
    """The process and its ancestors, nearest first, stopping before pid 1.

    Each entry is read once; a chain broken by an exit mid-walk ends where it broke.
    """
    chain: list[ProcStat] = []
    seen: set[int] = set()
    while pid > 1 and pid not in seen and len(chain) < MAX_DEPTH:
        seen.add(pid)
        st = proc_stat(pid)
        if st is None:
            break
        chain.append(st)
        pid = st.ppid
    return chain


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "busybox", "env", "timeout"})


def may_name(chain: list[ProcStat], index: int) -> bool:
    """Whether ``chain[0]`` may name its ancestor ``chain[index]`` as its agent process.

    The ancestor must not lead its session: an interactive shell does, and two agents
    started from two terminals must never share an ancestor they may name. ``chain[0]``
    must be in the ancestor's session, or reach it only through sessions that a process
    between them started without a terminal (Claude Code runs each hook in a new session
    of its own: setsid, no controlling terminal). A session with a terminal (a login, a
    terminal window, a tmux pane) is never crossed.
    """
    root = chain[index]
    if root.pid == root.session:
        return False
    leaders = {st.pid: st for st in chain[:index] if st.pid == st.session}
    for st in chain[:index]:
        leader = leaders.get(st.session)
        if st.session != root.session and (leader is None or leader.tty != 0 or st.tty != 0):
            return False
    return True


def agent_process_pid(start: int | None = None) -> int | None:
    """The agent a short-lived client runs under: the nearest ancestor that is not a shell.

    A Claude Code hook runs as ``claude → sh -c → agent-console``; the agent is ``claude``.
    ``AGENT_CONSOLE_AGENT_PID`` overrides the guess (an agent launcher can set it).
    """
    env = os.environ.get("AGENT_CONSOLE_AGENT_PID", "")
    if env.isdecimal() and len(env) <= 10:
        return int(env)
    own = proc_stat(os.getpid())
    if own is None:
        return None
    chain = [own, *ancestry(os.getppid() if start is None else start)]
    for index, st in enumerate(chain[1:], 1):
        if st.comm not in SHELLS:
            # The daemon accepts only what may_name allows (identity.by_process);
            # anything else names no agent at all.
            return st.pid if may_name(chain, index) else None
    return None
