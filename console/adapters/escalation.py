"""How an agent whose shell commands run in the console's sandbox asks for more.

A Bash call supervised through a hook runs sandboxed: no network, writes only inside the
workspace. When the command needs more, the agent says so in the command itself, with
leading comment lines (bash ignores them, so the command is unchanged)::

    # agent-console: network
    # agent-console: write /home/me/.cache/pip
    pip install -r requirements.txt

Each line names capabilities the sandbox will grant *if the operator approves*: asking is
never allowing, and the request shows exactly what was asked for. ``network`` asks for
external network; ``write DIR`` for writes to DIR (absolute, or relative to the command's
cwd), repeatable. To run outside the sandbox entirely the agent sets Claude Code's own
``dangerouslyDisableSandbox: true`` on the Bash call, which asks for ``unrestricted``.

:func:`hint_for` is what ``agent-console exec --ticket`` prints under a sandbox denial, so
the tool output tells the model the exact line to add.
"""

from __future__ import annotations

import posixpath

PREFIX = "# agent-console:"
MAX_WRITE_DIRS = 16
UNSANDBOXED_INPUT = "dangerouslyDisableSandbox"


class EscalationError(ValueError):
    """An escalation line that cannot be read; the message says how to write it."""


class Escalation:
    """What a command's leading lines ask for (a plain class: this is on every hook's path,
    where importing :mod:`dataclasses` costs more than the rest of the module)."""

    __slots__ = ("network", "write_dirs")

    def __init__(self) -> None:
        self.network = False
        self.write_dirs: list[str] = []


def parse(command: str, cwd: str, unsandboxed: str = "") -> Escalation:
    """The escalations asked for by the command's leading ``# agent-console:`` lines.

    ``unsandboxed`` says how this agent asks to run outside the sandbox (Claude Code's
    ``dangerouslyDisableSandbox`` when empty), for the error message."""
    unsandboxed = unsandboxed or f"set {UNSANDBOXED_INPUT}: true on the Bash call"
    wanted = Escalation()
    for line in command.split("\n"):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith(PREFIX):
            break  # only the leading lines: a comment deep in a script asks for nothing
        words = stripped[len(PREFIX) :].replace(",", " ").split()
        if not words:
            raise EscalationError(
                f"{PREFIX!r} names nothing: write `{PREFIX} network` or `{PREFIX} write DIR`"
            )
        while words:
            word = words.pop(0)
            if word == "network":
                wanted.network = True
            elif word == "write":
                if not words:
                    raise EscalationError(f"`{PREFIX} write` needs a directory: `{PREFIX} write DIR`")
                path = words.pop(0)
                wanted.write_dirs.append(posixpath.normpath(posixpath.join(cwd, path)))
            else:
                raise EscalationError(
                    f"{PREFIX!r} knows `network` and `write DIR`, not {word[:40]!r}; to run outside the "
                    f"sandbox {unsandboxed}"
                )
    if len(wanted.write_dirs) > MAX_WRITE_DIRS:
        raise EscalationError(f"at most {MAX_WRITE_DIRS} `write` directories in one command")
    return wanted


def hint_for(kind: str, scope: str) -> str:
    """What to add to the command so that the operator is asked for ``kind``."""
    if kind == "external_network":
        return f"to ask the operator for network, start the command with the line `{PREFIX} network`"
    if kind == "workspace_write" and scope:
        where = posixpath.dirname(scope.rstrip("/")) or "/"
        return f"to ask the operator for it, start the command with the line `{PREFIX} write {where}`"
    if kind == "protected_metadata":
        return "protected paths stay read-only to sandboxed commands; ask the operator to make this change"
    return f"to ask the operator to run it outside the sandbox, set {UNSANDBOXED_INPUT}: true"
