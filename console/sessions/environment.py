"""A session's environment: the caller's, without what only the daemon should have.

The daemon is often started from inside tmux, or by a script with ``TERM=dumb``. Its
own terminal is not the session's: every session's terminal is the daemon's emulator
(xterm-compatible, 256 colours and truecolor), so TERM and COLORTERM describe that
one. Variables that tell a program it runs inside tmux (TMUX, TMUX_PANE) or that carry
the console's own settings (AGENT_CONSOLE_HOME, ...) would make programs talk to the
wrong tmux server or the wrong state directory, so they are dropped.

Callers hand over an environment already merged with the daemon's (an operator's
``sessions new`` with overrides) or built by the sandbox. A variable is dropped or
replaced only when its value is the daemon's own: a value the caller chose stays.
The policy's ``session_env`` is applied after that, and the session marker last:
kill and the tripwire find a session's processes by it (procs.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from . import procs

TERMINAL = {"TERM": "xterm-256color", "COLORTERM": "truecolor"}
# Describe the daemon's terminal or multiplexer, not the session's.
PRIVATE = frozenset({"TMUX", "TMUX_PANE", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "STY", "WINDOW"})
PRIVATE_PREFIX = "AGENT_CONSOLE_"


def private(name: str) -> bool:
    return name in PRIVATE or name.startswith(PRIVATE_PREFIX)


def session_environment(
    env: Mapping[str, str],
    *,
    daemon_env: Mapping[str, str],
    extra: Iterable[tuple[str, str]] = (),
    session_id: str,
) -> dict[str, str]:
    out = {k: v for k, v in env.items() if not (private(k) and daemon_env.get(k) == v)}
    for name, value in TERMINAL.items():
        if out.get(name) is None or out.get(name) == daemon_env.get(name):
            out[name] = value
    out.update(extra)
    out[procs.MARKER_VAR] = session_id
    return out
