"""`agent-console history`: search decisions and denials, export, verify the chain."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Any

from console.cli.common import CLIError, add_state_dir, connect, locations, parse_time, when
from console.client import RPCError
from console.contract.inert import inert
from console.protocol.history import SOURCES, VERDICTS

COLUMNS = (
    "seq",
    "at",
    "request_id",
    "verdict",
    "source",
    "scope",
    "reason",
    "tool",
    "session_id",
    "fingerprint",
    "command",
    "note",
)


def _query(args: argparse.Namespace) -> dict[str, Any]:
    q: dict[str, Any] = {"kinds": ["decision"], "limit": args.limit}
    for name in ("verdict", "source", "tool", "search"):
        value = getattr(args, name)
        if value:
            q[name] = value
    if args.session:
        q["session_id"] = args.session
    if args.since:
        q["since"] = args.since
    if args.until:
        q["until"] = args.until
    return q


def cmd_history(args: argparse.Namespace) -> int:
    with connect(args, "operator") as client:
        try:
            page = client.call("history.query", _query(args))
        except RPCError as exc:
            raise CLIError(exc.message) from None
    rows = page["rows"]
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif args.csv:
        w = csv.writer(sys.stdout)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([r.get(c, "") for c in COLUMNS])
    else:
        if not rows:
            print("no matching decisions")
        for r in rows:
            print(
                f"{when(r['at'])}  {r['request_id']:<14} {r['verdict']:<5} {r['source']:<8} {r.get('reason') or '':<28} "
                f"{inert(r.get('tool') or '')[:18]:<18} {inert(r.get('command') or '')[:100]}"
            )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from console.store import Store

    # Offline and read-only: exporting must not need (or disturb) the daemon.
    store = Store.open_readonly(locations(args).database)
    try:
        out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
        try:
            n = store.export_jsonl(out)
        finally:
            if args.output:
                out.close()
    finally:
        store.close()
    print(f"exported {n} events", file=sys.stderr)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from console.store import Store

    store = Store.open_readonly(locations(args).database)
    try:
        report = store.verify()
    finally:
        store.close()
    if report.ok:
        print(f"OK: {report.checked} events, chain intact")
        return 0
    print(f"TAMPERED: {report.message}", file=sys.stderr)
    return 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "history",
        help="search past decisions; `history export|verify`",
        description="Past decisions, newest first. Filters combine; --search is plain text over command, "
        "arguments, cwd, justification, reason and note.",
    )
    add_state_dir(p)
    p.add_argument("--verdict", choices=VERDICTS)
    p.add_argument("--source", choices=SOURCES)
    p.add_argument("--tool", help="producer name, e.g. claude-code:Bash")
    p.add_argument("--session", help="the agent's session id")
    p.add_argument("--since", type=parse_time, metavar="T", help="ISO time or a duration ago (2h, 7d)")
    p.add_argument("--until", type=parse_time, metavar="T")
    p.add_argument("--search", metavar="TEXT", help="plain text, e.g. 'rm -rf' or hooks/pre-commit")
    p.add_argument("--limit", type=int, default=50, help="at most this many rows (default 50)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--csv", action="store_true")
    p.set_defaults(func=cmd_history)
    hsub = p.add_subparsers(dest="history_command", metavar="ACTION")

    q = hsub.add_parser("export", help="every event as JSON Lines (works without the daemon)")
    add_state_dir(q)
    q.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    q.set_defaults(func=cmd_export)

    q = hsub.add_parser("verify", help="check the hash chain; exit 1 naming the first tampered event")
    add_state_dir(q)
    q.set_defaults(func=cmd_verify)
