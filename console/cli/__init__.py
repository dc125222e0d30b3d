"""The `agent-console` command.

Each command group lives in its own module with a ``register(subparsers)`` function;
this module only assembles them and turns :class:`CLIError` into one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from console import __version__
from console.cli import (
    agent_commands,
    contract_commands,
    daemon_commands,
    exec_commands,
    history_commands,
    hook_commands,
    operator_commands,
    session_commands,
    tui_commands,
    watch_commands,
)
from console.cli.common import CLIError

COMMAND_MODULES = [
    tui_commands,
    daemon_commands,
    agent_commands,
    exec_commands,
    operator_commands,
    history_commands,
    session_commands,
    watch_commands,
    hook_commands,
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
