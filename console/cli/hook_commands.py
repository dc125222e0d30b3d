"""`agent-console hook claude-code`: the PreToolUse hook for Claude Code."""

from __future__ import annotations

import argparse
import sys

from console.cli.common import add_state_dir


def cmd_claude_code(args: argparse.Namespace) -> int:
    from console.adapters.claude_code import run_hook

    return run_hook(sys.stdin, sys.stdout, state_dir=getattr(args, "state_dir", None), timeout_s=args.timeout)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("hook", help="hooks for existing agents (Claude Code)")
    hsub = p.add_subparsers(dest="hook_command", metavar="AGENT", required=True)
    q = hsub.add_parser(
        "claude-code",
        help="Claude Code PreToolUse hook: reads the hook JSON on stdin, prints the decision",
        description="Maps Bash, Write, Edit, MultiEdit and NotebookEdit calls to operations, waits for the "
        "console's decision and prints Claude Code's hookSpecificOutput. Any failure answers deny. "
        "See docs/claude-code.md for the settings.json snippet.",
    )
    add_state_dir(q)
    q.add_argument(
        "--timeout",
        type=float,
        default=55.0,
        metavar="S",
        help="deny if the operator has not decided within S seconds (keep it below the hook's timeout; default 55)",
    )
    q.set_defaults(func=cmd_claude_code)
