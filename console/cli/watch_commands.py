"""`agent-console watch`: workspace changes as they happen, for people and for scripts."""

from __future__ import annotations

import argparse
import json
import sys

from console.cli.common import CLIError, add_state_dir, connect, when
from console.client import DaemonUnreachable, RPCError
from console.contract.inert import inert
from console.protocol.events import TripwireRaised, TripwireResolved, WatchAlert, WatchBatch, decode_event
from console.protocol.requests import WatchAdd, WatchRemove
from console.protocol.watch import WatchEntry


def _line(event: WatchEntry) -> str:
    who = (
        ", ".join(
            f"{a.kind} {inert(a.id)}"
            + (f" ({inert(a.basis)})" if isinstance(a.basis, str) and a.basis else "")
            for a in event.attribution
        )
        or "unattributed"
    )
    mark = f"PROTECTED ({event.protected}) " if event.protected else ""
    escape = " [symlink out of the workspace]" if event.symlink_escape else ""
    return f"{when(event.at)}  {mark}{event.kind:<8} {event.display_path}{escape}  — {who}"


def cmd_watch_remove(args: argparse.Namespace) -> int:
    """Stop watching a root (and free its inotify watches)."""
    import os

    root = os.path.abspath(os.path.expanduser(args.root))
    with connect(args, "operator") as client:
        try:
            status = client.request(WatchRemove(workspace_root=root))
        except RPCError as exc:
            raise CLIError(f"the daemon refused watch remove: {exc.message}") from None
    print(f"no longer watching {root}; {status.summary}".rstrip("; "))
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    if getattr(args, "watch_command", None) == "remove":
        return cmd_watch_remove(args)
    out = sys.stdout
    with connect(args, "operator", timeout_s=None) as client:
        if args.workspace:
            for root in args.workspace:
                client.request(WatchAdd(workspace_root=root))
        client.subscribe(["watch"])
        try:
            while True:
                # The event as sent (validated at the socket), for --json; typed, to read.
                wire = client.next_event()
                event = decode_event(wire)
                if isinstance(event, WatchBatch):
                    for entry, sent in zip(event.events, wire["events"], strict=True):
                        if args.protected_only and not entry.protected:
                            continue
                        out.write((json.dumps(sent) if args.json else _line(entry)) + "\n")
                    if event.dropped and not args.protected_only and not args.json:
                        out.write(f"... {event.dropped} ordinary changes not shown (burst)\n")
                elif isinstance(event, WatchAlert | TripwireRaised | TripwireResolved):
                    change = wire["change"]
                    if args.json:
                        out.write(json.dumps({"type": change, **wire}) + "\n")
                    else:
                        summary = event.summary if isinstance(event, WatchAlert) else event.item.summary
                        out.write(f"{change.upper()}: {summary}\n")
                out.flush()
        except (KeyboardInterrupt, BrokenPipeError):
            return 0
        except DaemonUnreachable:
            sys.stderr.write("agent-console: the daemon went away\n")
            return 3


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "watch",
        help="stream workspace changes (one JSON object per line with --json)",
        description="Stream the changes the daemon sees in watched workspaces, with the protected "
        "pattern that matched and the sessions or operations active then. Runs until interrupted.",
    )
    add_state_dir(p)
    p.add_argument("--json", action="store_true", help="one JSON object per line, for scripts")
    p.add_argument("--protected-only", action="store_true", help="only changes to protected paths")
    p.add_argument("--workspace", action="append", metavar="DIR", help="also start watching DIR (repeatable)")
    p.set_defaults(func=cmd_watch)
    wsub = p.add_subparsers(dest="watch_command", metavar="ACTION", required=False)
    r = wsub.add_parser("remove", help="stop watching a workspace root (frees its inotify watches)")
    add_state_dir(r)
    r.add_argument("root", metavar="ROOT", help="the watched root, as watch.status lists it")
    r.set_defaults(func=cmd_watch_remove)
