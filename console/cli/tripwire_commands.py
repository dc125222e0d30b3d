"""`agent-console tripwire list|resume|kill|keep`: settle tripwire items from a shell.

A tripwire item is a session the daemon stopped because it changed a protected path
(state ``paused``), one it kept stopped at the operator's word (``kept``), or one that
wrote a protected path and had already exited (``exited``: an alert to acknowledge).
Operator socket only: an agent cannot resume itself.
"""

from __future__ import annotations

import argparse
from typing import Any

from console.cli.common import EXIT_INVALID, CLIError, add_state_dir, age, connect, print_json
from console.client import RPCError
from console.contract.inert import inert
from console.protocol.jsonrpc import NOT_FOUND
from console.protocol.requests import TripwireList, TripwireResolution, TripwireResolve

ACTIONS = {
    "resume": TripwireResolution.RESUME,
    "kill": TripwireResolution.KILL,
    "keep": TripwireResolution.KEEP_PAUSED,
}


def open_items(client: Any) -> list[dict[str, Any]]:
    """Paused, kept-paused and exited-writer items, oldest first."""
    items: list[dict[str, Any]] = client.call("tripwire.list", TripwireList(open=True))["items"]
    return sorted(items, key=lambda i: i["at"])


def item_line(item: dict[str, Any]) -> str:
    state = item["state"]
    if state == "paused" and item.get("stopped") is False:
        state = "paused?"  # not every process could be confirmed stopped
    return (
        f"{item['id']:<12} {age(item['at']):>4}  {state:<8} {inert(item['session']):<10} "
        f"{inert(item.get('basis') or ''):<20} {inert(item['summary'])[:120]}"
    )


def cmd_list(args: argparse.Namespace) -> int:
    with connect(args, "operator") as client:
        if args.all:
            items = sorted(
                client.call("tripwire.list", TripwireList(include_resolved=True))["items"],
                key=lambda i: i["at"],
            )
        else:
            items = open_items(client)
    if args.json:
        print_json(items)
        return 0
    if not items:
        print("no tripwire items")
        return 0
    print(f"{'ID':<12} {'AGE':>4}  {'STATE':<8} {'SESSION':<10} {'BASIS':<20} SUMMARY")
    for item in items:
        print(item_line(item))
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    with connect(args, "operator") as client:
        try:
            item = client.call(
                "tripwire.resolve", TripwireResolve(id=args.id, action=ACTIONS[args.tripwire_command])
            )["item"]
        except RPCError as exc:
            raise CLIError(exc.message, 1 if exc.code == NOT_FOUND else EXIT_INVALID) from None
    if args.json:
        print_json(item)
    else:
        print(f"{item['id']}: {item['state']} — {inert(item['summary'])}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "tripwire",
        help="list and settle tripwire items (sessions stopped for changing protected paths)",
        description="Sessions the tripwire stopped, kept stopped, or named after they exited. "
        "`resume` continues every process of the session, `kill` ends them all, `keep` leaves it "
        "stopped (an exited writer's item is acknowledged by any of them).",
    )
    add_state_dir(p)
    tsub = p.add_subparsers(dest="tripwire_command", metavar="ACTION", required=True)
    q = tsub.add_parser("list", help="open items (paused, kept paused, exited writers)")
    add_state_dir(q)
    q.add_argument("--all", action="store_true", help="resolved items too")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_list)
    for name, what in (
        ("resume", "continue every process of the session"),
        ("kill", "end every process of the session"),
        ("keep", "keep the session stopped (the item leaves the queue)"),
    ):
        q = tsub.add_parser(name, help=what)
        add_state_dir(q)
        q.add_argument("id", metavar="ID", help="the item's id (tripwire list)")
        q.add_argument("--json", action="store_true")
        q.set_defaults(func=cmd_resolve)
