"""What every command shares that loads nothing: its one-line failure, the exit codes,
the state-dir and host options and this machine's locations.

`agent-console run` builds on this alone (with console/cli/wire.py): it runs before the
agent starts, and console/cli/common.py brings the full client, the protocol and the
remote hosts along.
"""

from __future__ import annotations

import argparse

from console.locations import Locations, locate

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from console.contract.problem import Problem

EXIT_OK = 0
EXIT_DENIED = 1
EXIT_INVALID = 2
EXIT_UNREACHABLE = 3


class CLIError(Exception):
    """A failure to report as one line on stderr, with an exit code (and a problem for --json)."""

    def __init__(self, message: str, code: int = EXIT_INVALID, problem: Problem | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.problem = problem


def add_state_dir(p: argparse.ArgumentParser) -> None:
    # SUPPRESS: a subcommand's unset option must not erase one given before the command
    # (`agent-console --state-dir X pending` and `agent-console pending --state-dir X`).
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="where the daemon keeps its state and sockets (default: $AGENT_CONSOLE_HOME or ~/.local/state/agent-console)",
    )
    add_host(p)


def add_host(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host",
        action="append",
        metavar="HOST",
        default=argparse.SUPPRESS,
        help="the daemon to talk to: local, a name from `agent-console hosts`, or "
        "ssh://[user@]box[:port][/state/dir] (default: $AGENT_CONSOLE_HOST, else the current host, "
        "else this machine; docs/remote.md)",
    )


def locations(args: argparse.Namespace) -> Locations:
    """This machine's state (agents, hooks and the daemon itself never follow the
    operator's host; an explicit remote ``--host`` is refused)."""
    for value in getattr(args, "host", None) or ():
        if value != "local":
            raise CLIError(f"--host {value}: this command works on this machine only")
    return locate(getattr(args, "state_dir", None))
