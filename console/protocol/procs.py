"""What /proc says about a process: parent, session, start time, owner.

The daemon binds an agent identity to a process tree ("the processes descended from pid
P that started at T"), so it needs a process's parent chain and a start time that tells
a pid apart from a later process that reuses it. Clients use the same reading to name
the agent process they run under. Nothing here trusts the process being read: a
process may exit or be replaced between two reads, and every reader returns None then.
"""

from __future__ import annotations

import os

# A parent chain longer than this is not a real process tree (pid_max is 2**22).
MAX_DEPTH = 256


TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from typing import NamedTuple

    class ProcStat(NamedTuple):
        pid: int
        ppid: int
        session: int
        start_ticks: int  # since boot, in clock ticks: with the pid, names one process
        comm: str
        tty: int = 0  # the controlling terminal (tty_nr); 0: none

else:
    # The same tuple without typing.NamedTuple: every hook process reads this module, and
    # importing typing would cost each tool call more than the module's own work.
    from collections import namedtuple

    ProcStat = namedtuple("ProcStat", "pid ppid session start_ticks comm tty", defaults=(0,))


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
            launcher = _launcher(chain, index)
            if launcher is not None:
                return launcher
            return st.pid if may_name(chain, index) else None
    return None


# The runtime that launches an agent CLI's program (Codex, Copilot CLI, OpenCode: a Node
# script that starts the native binary; Gemini CLI: Node relaunching itself).
LAUNCHERS = frozenset({"node"})


def _launcher(chain: list[ProcStat], index: int) -> int | None:
    """The launcher of the agent program ``chain[index]``, when the agent was started as the
    leader of a session of its own without a terminal (``setsid gemini -p``): ``node``,
    the program's parent, leading its session.

    The hook of such an agent runs in the program's session and could name the program,
    but its shell tool runs commands in sessions of their own, across which the program
    (not a session leader) may not be named: the hook and the ``exec`` it issues would be
    two identities and no ticket could be redeemed. Both name the launcher instead, which
    :func:`may_name` allows from either side. (Two agents that one ``node`` supervisor
    leading a terminal-less session starts without ``setsid`` are then one identity;
    started with ``setsid`` each leads its own.)"""
    program = chain[index]
    if index + 1 >= len(chain):
        return None
    parent = chain[index + 1]
    if (
        parent.pid == program.ppid
        and parent.pid == program.session
        and parent.tty == 0
        and parent.comm in LAUNCHERS
        and may_name(chain, index + 1)
    ):
        return parent.pid
    return None
