"""The `agent-console` command.

Each command group lives in its own module with a ``register(subparsers)`` function;
this module only assembles them and turns :class:`CLIError` into one line on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Sequence

from console import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

# command -> the module that registers it. A command line that starts with one of these
# builds that module's parser alone: importing every command module (and through them the
# client, the protocol, the store and the console's model) is most of a short command's
# start-up, and `exec --ticket` runs on every tool call an agent is allowed.
COMMANDS = {
    "console": "tui_commands",
    "demo": "tui_commands",
    "daemon": "daemon_commands",
    "request": "agent_commands",
    "agents": "agents_commands",
    "exec": "exec_commands",
    "pending": "operator_commands",
    "approve": "operator_commands",
    "deny": "operator_commands",
    "grants": "operator_commands",
    "history": "history_commands",
    "run": "run_commands",
    "sessions": "session_commands",
    "watch": "watch_commands",
    "tripwire": "tripwire_commands",
    "workspaces": "workspace_commands",
    "hosts": "hosts_commands",
    "web": "web_commands",
    "hook": "hook_commands",
    "fingerprint": "contract_commands",
    "evaluate": "contract_commands",
}


def command_modules() -> list[Any]:
    """Every command group, in the order `--help` lists them (imported when asked for)."""
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

    return [
        tui_commands,
        daemon_commands,
        agent_commands,
        agents_commands,
        exec_commands,
        operator_commands,
        history_commands,
        run_commands,
        session_commands,
        watch_commands,
        tripwire_commands,
        workspace_commands,
        hosts_commands,
        web_commands,
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
    from console.cli import tui_commands

    tui_commands.add_console_arguments(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in command_modules():
        module.register(sub)
    return parser


def _parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser of the command ``argv`` names, with only its module's commands; the
    whole parser for anything else (options before the command, no command, `--help`)."""
    parser = argparse.ArgumentParser(prog="agent-console")
    if list(argv) == ["--version"]:  # what installers and `hook doctor` run to check the command
        parser.add_argument("--version", action="version", version=f"agent-console {__version__}")
        return parser
    home = COMMANDS.get(argv[0]) if argv else None
    if home is None:
        return build_parser()
    module = importlib.import_module(f"{__name__}.{home}")
    module.register(parser.add_subparsers(dest="command", metavar="COMMAND"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser_for(list(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)  # --version and --help end here, before any command loads
    from console.cli.basics import CLIError

    if not getattr(args, "func", None):
        from console.cli import tui_commands

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
