"""`fingerprint` and `evaluate`: the contract and the policy, from the command line."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from console.cli.common import CLIError, print_json, read_input
from console.contract.fingerprint import canonical_bytes
from console.contract.host import OSHost, host_workspace_limits
from console.contract.operation import Operation, decode, parse
from console.contract.problem import InvalidInput
from console.locations import locate
from console.policy import PolicyError, evaluate, load_policy


def load_operation(source: str, workspace: str | None = None) -> Operation:
    """Read, validate and canonicalize an operation file; ``workspace`` overrides its root."""
    try:
        obj = decode(read_input(source))
        if not isinstance(obj, dict):
            what = {list: "an array", str: "a string", bool: "a boolean"}.get(type(obj), "a number or null")
            raise CLIError(f"invalid operation: an operation is a JSON object, not {what}")
        if workspace:
            _rebase(obj, os.path.abspath(workspace))
        # The same refusals as the daemon's: no /, home, /tmp, system or state directory.
        limits = host_workspace_limits(map(str, locate().private_paths()))
        return parse(obj, OSHost(), limits)
    except InvalidInput as exc:
        raise CLIError(f"invalid operation: {exc.problem}", problem=exc.problem) from None


def _rebase(obj: dict[str, Any], new_root: str) -> None:
    """Move an operation to another workspace, with the paths it names inside the old one."""
    old_root = obj.get("workspace_root")
    obj["workspace_root"] = new_root
    if not isinstance(old_root, str) or not old_root.startswith("/"):
        return
    prefix = old_root.rstrip("/") + "/"

    def move(path: object) -> object:
        if isinstance(path, str) and (path == old_root or path.startswith(prefix)):
            return new_root + path[len(old_root) :]
        return path

    obj["cwd"] = move(obj.get("cwd", "."))
    if isinstance(obj.get("write_dirs"), list):
        obj["write_dirs"] = [move(d) for d in obj["write_dirs"]]
    if isinstance(obj.get("capabilities"), list):
        for cap in obj["capabilities"]:
            if isinstance(cap, dict) and "scope" in cap:
                cap["scope"] = move(cap["scope"])


def _add_operation_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE|-", help="operation JSON (the contract's wire form); - reads stdin")
    p.add_argument(
        "--workspace",
        metavar="DIR",
        help="use DIR as workspace_root (handy for the files in examples/)",
    )
    p.add_argument("--json", action="store_true", help="on invalid input, print the problem object as JSON")


def cmd_fingerprint(args: argparse.Namespace) -> int:
    op = load_operation(args.file, args.workspace)
    if args.canonical:
        sys.stdout.buffer.write(canonical_bytes(op) + b"\n")
    else:
        sys.stdout.write(op.fingerprint + "\n")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    try:
        config = load_policy(args.policy)
    except PolicyError as exc:
        raise CLIError(f"invalid policy: {exc}") from None
    op = load_operation(args.file, args.workspace)
    # Offline: the trusted workspaces are the policy file's `workspaces` (the daemon adds
    # those trusted at run time), and paths are resolved on this host.
    decision = evaluate(op, config, (), time.time(), resolve_path=lambda path: OSHost().resolve(path).path)
    print_json(decision.to_dict())
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "fingerprint",
        help="print an operation's fingerprint",
        description="Validate an operation and print its SHA-256 fingerprint (64 lowercase hex "
        "digits). The canonical form is specified in docs/fingerprint.md.",
    )
    _add_operation_args(p)
    p.add_argument(
        "--canonical", action="store_true", help="print the canonical bytes that are hashed instead"
    )
    p.set_defaults(func=cmd_fingerprint)

    p = sub.add_parser(
        "evaluate",
        help="evaluate an operation against a policy",
        description="Validate an operation and print the policy decision as JSON: verdict "
        "(allow, deny, review), a stable reason, the fingerprint, and the capability diff "
        "(requested, ceiling, escalations, within, unused, forbidden).",
    )
    _add_operation_args(p)
    p.add_argument("--policy", metavar="FILE", help="policy TOML (default: the built-in default policy)")
    p.set_defaults(func=cmd_evaluate)
