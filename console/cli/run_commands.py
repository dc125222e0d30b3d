"""`agent-console run --acp -- AGENT ARGV…`: host an ACP agent, the console as its client.

Every permission the agent asks for is a request in the console's inbox, its terminals run
in the daemon's sandbox and its file writes are write requests (console/adapters/acp/host.py).
Prompts come from ``--prompt`` (each in turn), else one per line of standard input; the
agent's messages go to standard output.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from console.cli.common import EXIT_INVALID, CLIError, add_state_dir


def cmd_run(args: argparse.Namespace) -> int:
    from console.cli.exec_commands import strip_dashes

    argv = strip_dashes(args.command)
    if not argv:
        raise CLIError(
            "nothing to run: give the agent after --, e.g. agent-console run --acp -- claude-code-acp"
        )
    if not args.acp:
        raise CLIError(
            "agent-console run hosts ACP agents with --acp (agent-console run --acp -- AGENT); "
            "other agents are supervised through their hooks: agent-console hook install AGENT",
            EXIT_INVALID,
        )
    from console.adapters.acp.host import Host

    workspace = os.path.abspath(args.workspace or os.getcwd())
    prompts = list(args.prompt or []) or [line.rstrip("\n") for line in sys.stdin if line.strip()]
    host = Host(argv, workspace, state_dir=getattr(args, "state_dir", None))
    return asyncio.run(host.run(prompts))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="host an ACP agent (--acp): its permissions, terminals and file writes go through the console",
        description="With --acp, starts AGENT as an Agent Client Protocol agent on stdio with the console "
        "as its client: permission requests become requests in the console (with the diff), terminals run "
        "in the daemon's sandbox, file writes are write requests, reads of secrets are refused. Prompts come "
        "from --prompt, else one per line of standard input (docs/agents.md).",
    )
    add_state_dir(p)
    p.add_argument("--acp", action="store_true", help="AGENT speaks ACP (JSON-RPC on stdio)")
    p.add_argument("--workspace", metavar="DIR", help="the agent's working directory (default: here)")
    p.add_argument("--prompt", action="append", metavar="TEXT", help="a prompt to send (repeatable)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- AGENT ARG…")
    p.set_defaults(func=cmd_run)
