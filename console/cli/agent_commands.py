"""`agent-console request`: an agent asks, waits, and gets an exit code it can act on."""

from __future__ import annotations

import argparse

import msgspec

from console.cli.common import (
    EXIT_DENIED,
    EXIT_INVALID,
    EXIT_UNREACHABLE,
    CLIError,
    add_state_dir,
    connect,
    print_json,
    read_input,
    refused,
)
from console.client import DaemonUnreachable, RPCError
from console.contract.operation import decode
from console.contract.problem import InvalidInput, Problem
from console.protocol.requests import OperationSubmit


def cmd_request(args: argparse.Namespace) -> int:
    try:
        operation = decode(read_input(args.file))
    except InvalidInput as exc:
        raise CLIError(f"invalid operation: {exc.problem}", EXIT_INVALID, exc.problem) from None
    if not isinstance(operation, dict):
        p = Problem("", "not_an_object", "an operation is a JSON object")
        raise CLIError(f"invalid operation: {p}", EXIT_INVALID, p)
    # The daemon answers by the deadline (deny approval_timeout); the socket waits a bit longer.
    try:
        client = connect(args, "agent", timeout_s=None if args.timeout is None else args.timeout + 10)
    except CLIError as exc:
        raise CLIError(f"{exc} (nothing is allowed without the daemon)", EXIT_UNREACHABLE) from None
    try:
        with client:
            answer = client.request(OperationSubmit(operation=operation, timeout_s=args.timeout))
    except RPCError as exc:
        raise refused(exc, "the request") from None
    except DaemonUnreachable as exc:
        raise CLIError(f"{exc} (nothing is allowed without the daemon)", EXIT_UNREACHABLE) from None
    print_json(msgspec.to_builtins(answer))
    if answer.verdict == "allow":
        return 0
    raise CLIError(f"denied: {answer.reason}", EXIT_DENIED)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "request",
        help="submit an operation and wait for the decision (for agents)",
        description="Submit an operation (the contract's JSON, docs/operations.md) to the daemon and "
        "wait for the decision, printed as JSON. Exit 0 allowed, 1 denied (including timeouts, "
        "with the reason on stderr), 2 invalid input, 3 daemon unreachable — which never means allowed.",
    )
    add_state_dir(p)
    p.add_argument("file", metavar="FILE|-", help="operation JSON; - reads stdin")
    p.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="deny (approval_timeout) if no decision within S seconds (default: the policy's approval_timeout_s)",
    )
    p.add_argument("--json", action="store_true", help="on invalid input, print the problem object as JSON")
    p.set_defaults(func=cmd_request)
