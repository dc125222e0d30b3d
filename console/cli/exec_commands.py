"""`agent-console exec -- CMD ARG…`: ask, run in the daemon's sandbox, stream, exit like CMD."""

from __future__ import annotations

import argparse
import base64
import os
import sys
from typing import Any

import msgspec

from console.cli.common import (
    EXIT_INVALID,
    EXIT_UNREACHABLE,
    CLIError,
    add_state_dir,
    connect,
    locations,
    print_json,
    refused,
)
from console.client import DaemonUnreachable, RPCError
from console.protocol.jsonrpc import NOT_FOUND
from console.protocol.notifications import ExecOutput, Notification
from console.protocol.pending import CapabilityWire
from console.protocol.requests import OperationExec, OperationRun
from console.protocol.results import OperationExecResult, OperationRunResult
from console.protocol.tickets import NoTicketFile, TicketFileError, read_secret

# What `agent-console exec` exits with when the console, not the command, decided the
# end: each its own code, none of them a death by signal (128+N) or the shell's 127 for
# "not found" (the SIGTERM the executor sends at the output limit would otherwise read
# 143, like the command's own SIGTERM). Documented in --help, docs/operations.md and
# the executor's module docstring.
EXIT_NOT_FOUND = 122  # the executable is missing: at the daemon's parse or in the sandbox
EXIT_SETUP_FAILED = 123  # the sandbox could not be set up; the command did not start
EXIT_TIMED_OUT = 124
EXIT_OUTPUT_LIMIT = 125
EXIT_DENIED = 126


def default_workspace(cwd: str) -> str:
    """The enclosing git work tree, else the current directory."""
    import subprocess  # here: `exec --ticket`, after every allowed tool call, never asks git

    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=cwd, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return cwd
    return top.stdout.strip() if top.returncode == 0 and top.stdout.strip() else cwd


def build_operation(args: argparse.Namespace) -> dict[str, Any]:
    if not args.command:
        raise CLIError("nothing to run: give the command after --, e.g. agent-console exec -- make test")
    cwd = os.getcwd()
    workspace = os.path.abspath(args.workspace) if args.workspace else default_workspace(cwd)
    op: dict[str, Any] = {
        "kind": "shell" if os.path.basename(args.command[0]) in ("sh", "bash", "zsh", "dash") else "process",
        "tool": args.tool,
        "executable": args.command[0],
        "args": args.command[1:],
        "workspace_root": workspace,
        "cwd": cwd if (cwd == workspace or cwd.startswith(workspace.rstrip("/") + "/")) else ".",
        "workspace_access": "read_only" if args.read_only else "write",
        "write_dirs": [os.path.abspath(d) for d in args.write],
        "network": "any" if args.network else "none",
        "justification": args.justification,
        "session_id": args.session or os.environ.get("AGENT_CONSOLE_SESSION", ""),
    }
    if args.timeout is not None:
        op["timeout_ms"] = max(1, int(args.timeout * 1000))
    return op


def cmd_exec(args: argparse.Namespace) -> int:
    args.command = strip_dashes(args.command)
    params: OperationRun | OperationExec
    no_file: NoTicketFile | None = None
    if args.ticket:
        if args.command:
            raise CLIError("--ticket runs what the ticket holds: give no command with it")
        ticket, no_file = ticket_with_secret(args)
        params = OperationRun(ticket=ticket)
    else:
        params = OperationExec(operation=build_operation(args))
    out, err = sys.stdout.buffer, sys.stderr.buffer

    def on_notification(method: str, n: Notification) -> None:
        if not isinstance(n, ExecOutput) or args.json:
            return
        target = out if n.stream == "stdout" else err
        target.write(base64.b64decode(n.data_base64))
        target.flush()

    try:
        client = connect(args, "agent", timeout_s=None)
    except CLIError as exc:
        raise CLIError(f"{exc} (nothing runs without the daemon)", EXIT_UNREACHABLE) from None
    try:
        with client:
            # Two calls, so each is typed by its own method's result.
            reply: OperationExecResult | OperationRunResult
            if isinstance(params, OperationRun):
                reply = client.request(params, on_notification=on_notification)
            else:
                reply = client.request(params, on_notification=on_notification)
    except RPCError as exc:
        if args.ticket and exc.code == NOT_FOUND:
            why = str(no_file) if no_file is not None else exc.message
            raise CLIError(f"{why}; nothing ran: ask again", EXIT_DENIED) from None
        error = refused(exc, "the command")
        if error.problem is not None and error.problem.reason == "executable_not_found":
            error.code = EXIT_NOT_FOUND  # as when the sandbox finds it missing
        raise error from None
    except DaemonUnreachable as exc:
        raise CLIError(
            f"{exc} (the command's fate is unknown; see agent-console history)", EXIT_UNREACHABLE
        ) from None

    decision, result = reply.decision, reply.result
    if args.json:
        print_json(msgspec.to_builtins(reply))
    if result is None:
        sys.stderr.write(
            f"agent-console: denied: {decision.reason}"
            + (f" — {decision.note}" if decision.note else "")
            + "\n"
        )
        return EXIT_DENIED
    for denial in result.denials:
        cap = denial.capability
        scope = f" ({cap.scope})" if cap.scope else ""
        how = escalation_hint(cap) if args.ticket else "ask for it with approval"
        sys.stderr.write(f"agent-console: sandbox denied {cap.kind}{scope}: {denial.reason}; {how}\n")
    if result.denials:  # the outcome model loads only for a run that met a denial
        from console.contract.outcome import REFUSED_PROTECTED

        if any(d.reason.startswith(REFUSED_PROTECTED) for d in result.denials):
            return EXIT_DENIED  # it ran, but what it planted was removed: not a success
    status = result.status
    if status == "timed_out":
        sys.stderr.write("agent-console: timed out; the sandbox was killed\n")
        return EXIT_TIMED_OUT
    if status == "output_limit":
        sys.stderr.write("agent-console: output limit exceeded; the sandbox was killed\n")
        return EXIT_OUTPUT_LIMIT
    if status == "not_started":
        outcome = result.outcome
        if outcome.state == "denied":  # e.g. content_changed: not what was approved
            again = (
                " (nothing ran; run the command again to ask about it as it is now)" if args.ticket else ""
            )
            sys.stderr.write(f"agent-console: denied: {result.reason}{again}\n")
            return EXIT_DENIED
        sys.stderr.write(f"agent-console: {outcome.kind}: {result.reason}\n")
        return EXIT_NOT_FOUND if outcome.kind == "executable_not_found" else EXIT_SETUP_FAILED
    code = result.exit_code
    return code if code is not None else 1


def ticket_with_secret(args: argparse.Namespace) -> tuple[str, NoTicketFile | None]:
    """``ID:SECRET`` for ``--ticket ID``: the secret comes from the daemon's private ticket
    file, never from the command line (console/protocol/tickets.py). Where there is no
    such file, ``ID`` alone and why: the daemon runs it only for a caller inside the
    confined session that asked (console/daemon/held.py); anywhere else that is the error
    to show."""
    try:
        return f"{args.ticket}:{read_secret(locations(args).runtime_dir, args.ticket)}", None
    except NoTicketFile as exc:
        return args.ticket, exc
    except TicketFileError as exc:
        raise CLIError(f"{exc}; nothing ran: ask again", EXIT_DENIED) from None


def escalation_hint(capability: CapabilityWire) -> str:
    """How an agent whose command was rewritten by a hook asks for what the sandbox refused:
    the escalation lines of :mod:`console.adapters.escalation`."""
    from console.adapters.escalation import hint_for

    return hint_for(capability.kind, capability.scope or "")


EXIT_CODES_HELP = f"""\
exit codes (the reason is on stderr; a command can exit with any of these itself,
--json tells them apart):
  N    the command's own exit code; 128+N when it died of signal N
  {EXIT_NOT_FOUND}  the executable does not exist (found missing by the daemon or in the sandbox)
  {EXIT_SETUP_FAILED}  the sandbox could not be set up; the command did not start
  {EXIT_TIMED_OUT}  it timed out and the sandbox was killed
  {EXIT_OUTPUT_LIMIT}  its output passed the limit and the sandbox was killed
  {EXIT_DENIED}  denied: by the policy, the operator, or because what would run changed
  {EXIT_INVALID}    invalid usage or operation
  {EXIT_UNREACHABLE}    the daemon is unreachable (nothing ran, or its fate is unknown)
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "exec",
        help="ask, then run a command in the daemon's sandbox, streaming its output",
        description="Build an operation from CMD ARG…, submit it, wait for the decision, run it in the "
        "daemon's bubblewrap sandbox and stream stdout and stderr.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="agent-console exec [options] -- CMD [ARG ...]\n       agent-console exec --ticket ID [--state-dir DIR]",
    )
    add_state_dir(p)
    p.add_argument("--justification", default="", metavar="TEXT", help="why, shown to the operator")
    p.add_argument(
        "--workspace", metavar="DIR", help="workspace root (default: the git work tree, else the current dir)"
    )
    p.add_argument(
        "--write", action="append", default=[], metavar="DIR", help="also allow writes to DIR (repeatable)"
    )
    p.add_argument("--read-only", action="store_true", help="do not ask to write the workspace")
    p.add_argument("--network", action="store_true", help="ask for network access")
    p.add_argument(
        "--timeout", type=float, metavar="S", help="kill the command after S seconds (default 120)"
    )
    p.add_argument("--session", metavar="ID", help="the agent's session (default $AGENT_CONSOLE_SESSION)")
    p.add_argument("--tool", default="agent-console:exec", help=argparse.SUPPRESS)
    p.add_argument(
        "--json",
        action="store_true",
        help="print the decision and the full outcome as JSON instead of streaming",
    )
    p.add_argument(
        "--ticket",
        metavar="ID",
        help="run the operation an adapter's operation.hold was allowed, once, for the agent that asked "
        "(its secret is read from the daemon's private ticket file; no command then)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARG")
    p.set_defaults(func=cmd_exec)


def strip_dashes(argv: list[str]) -> list[str]:
    return argv[1:] if argv and argv[0] == "--" else argv
