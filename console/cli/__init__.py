"""The `agent-console` command.

Each command group lives in its own module with a ``register(subparsers)`` function;
this module only assembles them and turns :class:`CLIError` into one line on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence

from console import __version__
from console.cli import (
    agent_commands,
    agents_commands,
    contract_commands,
    daemon_commands,
    exec_commands,
    history_commands,
    hook_commands,
    hosts_commands,
    operator_commands,
    run_commands,
    session_commands,
    tripwire_commands,
    tui_commands,
    watch_commands,
    web_commands,
    workspace_commands,
)
from console.cli.common import CLIError

COMMAND_MODULES = [
    tui_commands,
    daemon_commands,
    agent_commands,
    agents_commands,
    exec_commands,
    operator_commands,
    history_commands,
    session_commands,
    watch_commands,
    tripwire_commands,
    workspace_commands,
    hosts_commands,
    web_commands,
    hook_commands,
    run_commands,
    contract_commands,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-console",
        description="An approval console and session manager for supervising AI coding agents. "
        "Without a command, opens the console (starting the daemon if none runs).",
    )
    parser.add_argument("--version", action="version", version=f"agent-console {__version__}")
    # A bare `agent-console` opens the console: these are its flags.
    tui_commands.add_console_arguments(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        args.func = tui_commands.main_console
    try:
        return int(args.func(args) or 0)
    except CLIError as exc:
        if getattr(args, "json", False) and exc.problem is not None:
            sys.stdout.write(json.dumps(exc.problem.to_dict()) + "\n")
        sys.stderr.write(f"agent-console: {exc}\n")
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly. Never 0: a command whose verdict
        # could not be written has not told anyone it was allowed.
        _detach_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if os.environ.get("AGENT_CONSOLE_DEBUG"):
            raise
        sys.stderr.write(
            f"agent-console: internal error ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
            "nothing was allowed. Run again with AGENT_CONSOLE_DEBUG=1 for the traceback and report it\n"
        )
        return EXIT_INTERNAL


EXIT_BROKEN_PIPE = 141  # as a shell reports a command ended by SIGPIPE
EXIT_INTERNAL = 70  # EX_SOFTWARE


def _detach_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
