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
    """Whether ``chain[0]`` may name ``chain[index]`` (itself or an ancestor) as its agent.

    A process may name itself, unless it leads a session with a terminal (a terminal's
    shell: every agent started there descends from it). An ancestor must be one of:

    - a process inside a session with a terminal that does not lead it (an agent started
      from a terminal: the interactive shell leads the session, so two agents started
      from two terminals never share an ancestor they may name);
    - the leader of a session of its own without a terminal (an agent started detached,
      ``setsid claude -p``: one session per agent);
    - a process in ``chain[0]``'s own session, neither (a client the agent starts without
      leaving its session).

    Between them, ``chain[0]`` may reach the ancestor only through sessions that a process
    below it started without a terminal (Claude Code runs each hook, and its Bash tool's
    shell, in a new session of its own: setsid, no terminal); a session with a terminal (a
    login, a terminal window, a tmux pane) is never crossed. So a supervisor with no
    terminal that is not a session leader — a CI runner, an IDE's extension host — is
    never the agent of the separate sessions it starts: every tree under it would be one
    identity.
    """
    root = chain[index]
    leads = root.pid == root.session
    if index == 0:
        return not (leads and root.tty != 0)
    crossed = any(st.session != root.session for st in chain[:index])
    if root.tty != 0:
        if leads:
            return False  # the terminal's shell: every agent started there descends from it
    elif not leads and crossed:
        return False  # terminal-less and not its session's leader: a supervisor of sessions
    leaders = {st.pid: st for st in chain[:index] if st.pid == st.session}
    for st in chain[:index]:
        leader = leaders.get(st.session)
        if st.session != root.session and (leader is None or leader.tty != 0 or st.tty != 0):
            return False
    return True


def agent_process_pid(start: int | None = None) -> int | None:
    """The agent a short-lived client runs under: the nearest ancestor that is not a shell,
    when :func:`may_name` allows naming it; None otherwise (the client is then anonymous).

    A Claude Code hook runs as ``claude → sh -c → agent-console``; the agent is ``claude``.
    ``AGENT_CONSOLE_AGENT_PID`` overrides the guess (an agent launcher can set it); the
    daemon still checks it by the same rule.
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
            if may_name(chain, index):
                return st.pid
            return _wrapper_leader(chain, index)
    return None


def _wrapper_leader(chain: list[ProcStat], index: int) -> int | None:
    """An agent CLI that is a launcher and its program (Codex, Copilot, OpenCode: ``node``
    starts the native binary) runs as two processes of one session. Started detached
    (``setsid codex exec``), the launcher leads that session and the program does not,
    so the program may not be named across the hook's own session; the launcher, which
    leads a session of its own without a terminal, may — when :func:`may_name` says so."""
    session = chain[index].session
    for above in range(index + 1, len(chain)):
        st = chain[above]
        if st.session != session:
            return None
        if st.pid == session:
            return st.pid if may_name(chain, above) else None
    return None
