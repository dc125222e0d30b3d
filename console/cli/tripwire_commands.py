"""`agent-console tripwire list|resume|kill|keep|revert`: settle tripwire items from a shell.

A tripwire item is a session the daemon stopped because it changed a protected path
(state ``paused``), one it kept stopped at the operator's word (``kept``), one that
wrote a protected path and had already exited (``exited``), or a change no session can
answer for (``alerted``). Each keeps the file's previous content: ``kill`` puts it back
(unless ``--no-revert``), ``keep --revert`` too, ``revert`` at any time; ``resume`` makes
the new content the baseline and says so (``--accept``). Operator socket only: an agent
cannot resume itself.
"""

from __future__ import annotations

import argparse

import msgspec

from console.cli.common import EXIT_INVALID, CLIError, add_state_dir, age, connect, print_json
from console.client import Client, RPCError
from console.contract.inert import inert
from console.protocol.jsonrpc import NOT_FOUND
from console.protocol.requests import TripwireList, TripwireResolution, TripwireResolve, TripwireRevert
from console.protocol.tripwire import TripwireNotice

ACTIONS = {
    "resume": TripwireResolution.RESUME,
    "kill": TripwireResolution.KILL,
    "keep": TripwireResolution.KEEP_PAUSED,
}


def open_items(client: Client) -> list[TripwireNotice]:
    """Paused, kept-paused and exited-writer items, oldest first."""
    return sorted(client.request(TripwireList(open=True)).items, key=lambda i: i.at)


def stopped_by(item: TripwireNotice) -> str:
    """How the session is held, as it is: "cgroup freeze" or "process walk (SIGSTOP)"."""
    if item.state not in ("paused", "kept") or not item.session:
        return "-"
    mode = item.stop_mode
    return "process walk (SIGSTOP)" if mode == "process walk" else mode or "-"


def item_line(item: TripwireNotice) -> str:
    state = item.state
    if state == "paused" and item.stopped is False:
        state = "paused?"  # not every process could be confirmed stopped
    return (
        f"{item.id:<12} {age(item.at):>4}  {state:<8} {inert(item.session or '-'):<10} "
        f"{stopped_by(item):<22} {inert(item.basis):<20} {inert(item.summary)[:120]}"
    )


def cmd_list(args: argparse.Namespace) -> int:
    with connect(args, "operator") as client:
        if args.all:
            items = sorted(client.request(TripwireList(include_resolved=True)).items, key=lambda i: i.at)
        else:
            items = open_items(client)
    if args.json:
        print_json(msgspec.to_builtins(items))
        return 0
    if not items:
        print("no tripwire items")
        return 0
    print(f"{'ID':<12} {'AGE':>4}  {'STATE':<8} {'SESSION':<10} {'STOPPED BY':<22} {'BASIS':<20} SUMMARY")
    for item in items:
        print(item_line(item))
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    action = ACTIONS[args.tripwire_command]
    if action is TripwireResolution.RESUME and not args.accept:
        raise CLIError(
            "resume makes the file's new content its baseline (later diffs start from it); "
            "say so with --accept, or answer kill (which puts the file back) or keep --revert",
            EXIT_INVALID,
        )
    revert = getattr(args, "revert", None)
    with connect(args, "operator") as client:
        try:
            item = client.request(
                TripwireResolve(id=args.id, action=action, revert=revert, accept=bool(args.accept))
            ).item
        except RPCError as exc:
            raise CLIError(exc.message, 1 if exc.code == NOT_FOUND else EXIT_INVALID) from None
    _said(args, item)
    return 0


def cmd_revert(args: argparse.Namespace) -> int:
    with connect(args, "operator") as client:
        try:
            item = client.request(TripwireRevert(id=args.id)).item
        except RPCError as exc:
            raise CLIError(exc.message, 1 if exc.code == NOT_FOUND else EXIT_INVALID) from None
    _said(args, item)
    return 0 if not item.reverted.startswith("not all") else 1


def _said(args: argparse.Namespace, item: TripwireNotice) -> None:
    if args.json:
        print_json(msgspec.to_builtins(item))
    else:
        print(f"{item.id}: {item.state} — {inert(item.summary)}")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "tripwire",
        help="list and settle tripwire items (sessions stopped for changing protected paths)",
        description="Sessions the tripwire stopped, kept stopped, or named after they exited, and "
        "changes no session can answer for. `resume --accept` continues every process of the "
        "session and makes the new content the baseline; `kill` ends them all and puts the file "
        "back as it was (--no-revert keeps it); `keep` leaves it stopped (--revert puts the file "
        "back); `revert` puts it back at any time. An exited writer's item is acknowledged by any "
        "of them.",
    )
    add_state_dir(p)
    tsub = p.add_subparsers(dest="tripwire_command", metavar="ACTION", required=True)
    q = tsub.add_parser("list", help="open items (paused, kept paused, exited writers)")
    add_state_dir(q)
    q.add_argument("--all", action="store_true", help="resolved items too")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_list)
    for name, what in (
        ("resume", "continue every process of the session; the new content becomes the baseline"),
        ("kill", "end every process of the session and put the file back (--no-revert: keep it)"),
        ("keep", "keep the session stopped (the item leaves the queue; --revert puts the file back)"),
        ("revert", "put the protected file back as it was before the change"),
    ):
        q = tsub.add_parser(name, help=what)
        add_state_dir(q)
        q.add_argument("id", metavar="ID", help="the item's id (tripwire list)")
        q.add_argument("--json", action="store_true")
        if name == "resume":
            q.add_argument(
                "--accept",
                action="store_true",
                help="confirm that the file's new content becomes its baseline",
            )
        elif name in ("kill", "keep"):
            q.add_argument(
                "--revert",
                action=argparse.BooleanOptionalAction,
                default=None,
                help="put the file back as it was (default: yes for kill, no for keep)",
            )
        q.set_defaults(func=cmd_revert if name == "revert" else cmd_resolve, accept=False)
