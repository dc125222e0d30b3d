"""``python -I -m console hook AGENT [--state-dir DIR] [--timeout S]``: the hook process.

Every supervised tool call of every agent starts this process, so it imports as little
as it can: ``console/__main__.py`` hands ``hook AGENT`` here before the command line's
parser (and its every command module) is loaded, and the agent's hook module reaches
the daemon through :mod:`console.adapters.hookwire` (the standard library only).
``benchmarks/hook_latency.py`` measures the whole process, exec to exit.

A command line this module cannot read is an exit 2 with the reason on stderr, which
every supported agent takes as a block.
"""

from __future__ import annotations

import os
import sys
import time

# agent -> the module whose ``run_hook(stdin, stdout, *, state_dir, timeout_s, started)``
# answers one call in that agent's format.
HOOKS = {
    "claude-code": "console.adapters.claude_code.hook",
    "codex": "console.adapters.codex.hook",
    "copilot": "console.adapters.copilot.hook",
    "gemini": "console.adapters.gemini.hook",
    "opencode": "console.adapters.opencode.hook",
}
USAGE = "usage: agent-console hook AGENT [--state-dir DIR] [--timeout S]"


def process_started() -> float:
    """When this process began, on the ``time.monotonic()`` clock (best effort).

    The hook's deadline counts from the agent starting it, interpreter start-up
    included, not from when this code first runs.
    """
    now = time.monotonic()
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0 <= age < 60 else now


class UsageError(ValueError):
    pass


def parse(argv: list[str]) -> tuple[str, str | None, float | None]:
    """(agent, --state-dir, --timeout) from ``AGENT [--state-dir DIR] [--timeout S]``."""
    if not argv or argv[0] not in HOOKS:
        raise UsageError(f"the agent is one of {', '.join(HOOKS)}")
    state_dir: str | None = None
    timeout: float | None = None
    rest = argv[1:]
    while rest:
        flag = rest.pop(0)
        name, eq, value = flag.partition("=")
        if name not in ("--state-dir", "--timeout"):
            raise UsageError(f"unknown option {flag[:60]!r}")
        if not eq:
            if not rest:
                raise UsageError(f"{name} needs a value")
            value = rest.pop(0)
        if name == "--state-dir":
            state_dir = value
        else:
            try:
                timeout = float(value)
            except ValueError:
                raise UsageError(f"--timeout {value[:40]!r} is not a number of seconds") from None
            if not 0 < timeout <= 86400:
                raise UsageError("--timeout is between 0 and 86400 seconds")
    return argv[0], state_dir, timeout


def wants_help(argv: list[str]) -> bool:
    return any(a in ("-h", "--help") for a in argv)


def main(argv: list[str]) -> int:
    started = process_started()
    try:
        agent, state_dir, timeout = parse(argv)
    except UsageError as exc:
        sys.stderr.write(f"agent-console hook: {exc}\n{USAGE}\n")
        return 2
    import importlib

    module = importlib.import_module(HOOKS[agent])
    kwargs = {} if timeout is None else {"timeout_s": timeout}
    code: int = module.run_hook(sys.stdin, sys.stdout, state_dir=state_dir, started=started, **kwargs)
    return code
