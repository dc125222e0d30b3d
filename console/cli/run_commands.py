"""`agent-console run [--workspace DIR] -- claude|codex|gemini|opencode|ANY ARGV`.

Runs the agent CLI as a confined session of the daemon (console/daemon/confined.py):
in the sandbox, the workspace writable, its own state writable, the rest of the home
hidden, the console's state absent but for the agent socket (so its hook keeps asking),
and the network only through the egress broker, with its model API allowed. The session
is the daemon's like any other (it shows in the console's panes); this terminal is
attached to it until the agent exits, or detached with Ctrl-].

With ``--acp`` the agent speaks the Agent Client Protocol on stdio and the console is its
client (console/adapters/acp/host.py): every permission it asks for is a request in the
console's inbox, its terminals run in the daemon's sandbox and its file writes are write
requests. Prompts come from ``--prompt`` (each in turn), else one per line of standard
input; the agent's messages go to standard output.
"""

from __future__ import annotations

import argparse
import os
import sys

from console.cli.basics import EXIT_INVALID, EXIT_UNREACHABLE, CLIError, add_state_dir, locations


def cmd_run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise CLIError("nothing to run: agent-console run [--workspace DIR] -- claude [ARGS...]", 2)
    workspace = os.path.abspath(args.workspace or os.getcwd())
    if args.acp:  # the ACP host alone uses asyncio: the terminal path starts without it
        import asyncio

        from console.adapters.acp.host import Host

        prompts = list(args.prompt or []) or [line.rstrip("\n") for line in sys.stdin if line.strip()]
        host = Host(command, workspace, state_dir=getattr(args, "state_dir", None))
        return asyncio.run(host.run(prompts))
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    cols, rows = os.get_terminal_size() if sys.stdout.isatty() else (120, 40)
    params = {
        "argv": command,
        "cwd": workspace,
        "title": args.title,
        "cols": cols,
        "rows": rows,
        "agent": args.agent,
        # The agent's environment is this terminal's (its API keys, its settings), less what
        # points outside the sandbox; the daemon filters it (console/sandbox/profile.py).
        "env": dict(os.environ),
    }
    from console.cli.terminal_attach import start
    from console.cli.wire import Refused, Unreachable

    try:
        return start(locations(args), params, attach=interactive and not args.detach)
    except Refused as exc:
        raise CLIError(exc.message, EXIT_INVALID) from None
    except Unreachable as exc:
        raise CLIError(str(exc), EXIT_UNREACHABLE) from None


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="run an agent CLI (claude, codex, gemini, opencode, any) confined, attached to this terminal",
        description=(
            "Starts the program as a confined session: the sandbox, the workspace writable, the agent's own "
            "state writable, the rest of your home hidden, the network only through the egress broker (its "
            "model API allowed by default, other domains asked). Ctrl-] detaches; the session keeps running."
        ),
    )
    add_state_dir(p)
    p.add_argument(
        "--workspace", metavar="DIR", help="the project it may write (default: the current directory)"
    )
    p.add_argument("--agent", default="", help="the agent profile to use (default: by the program's name)")
    p.add_argument("--title", default="")
    p.add_argument("--detach", action="store_true", help="start it and print its session id")
    p.add_argument(
        "--acp",
        action="store_true",
        help="the program speaks ACP (JSON-RPC on stdio): host it with the console as its client (docs/agents.md)",
    )
    p.add_argument(
        "--prompt", action="append", metavar="TEXT", help="with --acp, a prompt to send (repeatable)"
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD")
    p.set_defaults(func=cmd_run)
