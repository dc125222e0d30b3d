"""`workspaces list|add|remove`: the directories the operator trusts agents to work in.

A request whose workspace_root is not one of these (or inside one) waits for the
operator with the escalation `new_workspace`; approving it "always" adds it here.
"""

from __future__ import annotations

import argparse
import os
from typing import TypeVar

import msgspec

from console.cli.common import EXIT_INVALID, CLIError, add_state_dir, connect, print_json, when
from console.client import RPCError
from console.contract.inert import inert
from console.protocol.jsonrpc import NOT_FOUND
from console.protocol.requests import MethodParams, WorkspacesAdd, WorkspacesList, WorkspacesRemove
from console.protocol.results import MethodResult

R = TypeVar("R", bound=MethodResult)


def _request(args: argparse.Namespace, params: MethodParams[R]) -> R:
    with connect(args, "operator") as client:
        try:
            return client.request(params)
        except RPCError as exc:
            raise CLIError(exc.message, 1 if exc.code == NOT_FOUND else EXIT_INVALID) from None


def _path(text: str) -> str:
    """The operator's path as typed (``~`` expanded); relative paths are refused rather than
    guessed, since the daemon's working directory is not the shell's."""
    path = os.path.expanduser(text)
    if not path.startswith("/"):
        raise CLIError(f"workspace_root: must be an absolute path, e.g. {os.path.abspath(path)}")
    return path


def cmd_list(args: argparse.Namespace) -> int:
    rows = _request(args, WorkspacesList()).workspaces
    if args.json:
        print_json(msgspec.to_builtins(rows))
        return 0
    if not rows:
        print("no trusted workspaces: every request waits with `new workspace` until you approve it always")
        return 0
    print(f"{'SOURCE':<9} {'SINCE':<19}  WORKSPACE")
    for r in rows:
        print(f"{r.source:<9} {when(r.at):<19}  {inert(r.workspace_root)}")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    result = _request(args, WorkspacesAdd(workspace_root=_path(args.path), note=args.note))
    state = "trusted" if result.added else "already trusted"
    print(f"{state}: {inert(result.workspace_root)}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    result = _request(args, WorkspacesRemove(workspace_root=_path(args.path)))
    print(f"no longer trusted: {inert(result.workspace_root)}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "workspaces",
        help="list, add or remove the workspaces you trust agents to work in",
        description="Trusted workspaces: a request may name its workspace_root under one of these "
        "without asking; any other directory waits for you as `new workspace` (approve it with "
        "--scope always to trust it). The policy's `workspaces` key adds fixed ones.",
    )
    add_state_dir(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)
    wsub = p.add_subparsers(dest="workspaces_command", metavar="ACTION")
    q = wsub.add_parser("list", help="list the trusted workspaces (the default)")
    add_state_dir(q)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_list)
    q = wsub.add_parser("add", help="trust a directory (and everything in it) as a workspace root")
    add_state_dir(q)
    q.add_argument("path", metavar="DIR", help="an existing directory, absolute, not through a symlink")
    q.add_argument("--note", default="", help="a note recorded with the change")
    q.set_defaults(func=cmd_add)
    q = wsub.add_parser("remove", help="stop trusting a directory added with `workspaces add`")
    add_state_dir(q)
    q.add_argument("path", metavar="DIR")
    q.set_defaults(func=cmd_remove)
