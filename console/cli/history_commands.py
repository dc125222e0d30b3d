"""`agent-console history`: search decisions, protected changes and tripwires; export, verify the chain."""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from console.cli.common import (
    EXIT_INVALID,
    EXIT_UNREACHABLE,
    CLIError,
    add_state_dir,
    connect,
    fit,
    local_files,
    paint,
    parse_time,
    print_json,
    when,
)
from console.client import DaemonUnreachable, RPCError
from console.contract.inert import flag_lookalikes, inert
from console.contract.tool_words import line_words
from console.protocol.history import KIND_GROUPS, SOURCES, TRIPWIRE_KINDS, VERDICTS
from console.protocol.records import HistoryRow
from console.protocol.requests import HistoryAccept, HistoryQuery
from console.store.chain import Anchor

if TYPE_CHECKING:  # the store loads only for the offline commands
    from console.store import Store, VerifyReport

EXIT_TAMPERED = 1

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
    q: dict[str, Any] = {
        "kinds": list(KIND_GROUPS[getattr(args, "kind", "all") or "all"]),
        "limit": args.limit,
    }
    for name in ("verdict", "source", "tool", "agent", "search"):
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
            page = client.request(HistoryQuery(**_query(args)))
        except RPCError as exc:
            raise CLIError(exc.message) from None
    rows = page.rows
    if args.json:
        sys.stdout.write(json.dumps(msgspec.to_builtins(rows), indent=2) + "\n")
    elif args.csv:
        w = csv.writer(sys.stdout)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([getattr(r, c) for c in COLUMNS])
    else:
        if not rows:
            print("no matching decisions" if args.kind == "decision" else "no matching events")
        else:
            print(
                paint(
                    f"{'WHEN':<19}  {'ID / KIND':<14} {'VERDICT SOURCE':<14} {'REASON':<28} {'TOOL':<18} COMMAND",
                    "bold",
                )
            )
        for r in rows:
            print(_text_row(r))
    return 0


def _text_row(r: HistoryRow) -> str:
    kind = r.kind
    if kind == "file_event":
        attribution = r.file_change().attribution
        basis = attribution.basis if attribution is not None else ""
        who = f"session {inert(r.session_id)}" if r.session_id else "unattributed"
        tag = paint(f"{'PROTECTED':<14}", "red bold")
        return (
            f"{when(r.at)}  {tag} {inert(r.command)[:80]:<40} "
            f"{inert(r.reason):<18} {who} ({inert(basis or 'unattributed')})"
        )
    if kind in TRIPWIRE_KINDS:
        label = {"tripwire": "TRIPWIRE", "tripwire_resolved": "RESOLVED"}.get(kind, kind[9:].upper())
        return (
            f"{when(r.at)}  {paint(f'{label:<14}', 'red bold' if kind == 'tripwire' else 'yellow')} "
            f"{inert(r.verdict):<14} {fit(inert(r.note)[:120], 51)}"
        )
    verdict = paint(f"{r.verdict:<5}", "green" if r.verdict == "allow" else "red bold")
    if kind == "connection":
        address = r.connection().address
        tag = paint(f"{'NET':<14}", "cyan")
        return (
            f"{when(r.at)}  {tag} {verdict} "
            f"{r.source:<8} {fit(flag_lookalikes(inert(r.command)), 40)} {inert(address)[:40]:<16} "
            f"{fit(inert(r.reason), 70)}"
        )
    words = line_words(r.tool, r.command, workspace_root=r.workspace_root, justification=r.justification)
    command = flag_lookalikes(inert(words or r.command))
    return (
        f"{when(r.at)}  {r.request_id:<14} {verdict} {r.source:<8} {r.reason:<28} "
        f"{inert(r.tool)[:18]:<18} {fit(command, 99)}"
    )


def _open_history(args: argparse.Namespace) -> Store:
    """The history, read-only and offline (no daemon needed); exit 2 when there is none
    or it cannot be opened, with the reason."""
    from console.store import Store, StoreUnavailable

    path = local_files(args, f"history {args.history_command}").database
    try:
        return Store.open_readonly(path)
    except StoreUnavailable as exc:
        code = EXIT_TAMPERED if exc.reason == "corrupt" and args.history_command == "verify" else EXIT_INVALID
        raise CLIError(f"cannot read the history: {exc}", code) from None
    except OSError as exc:
        raise CLIError(f"cannot read the history at {path}: {exc.strerror or exc}", EXIT_INVALID) from None


def cmd_export(args: argparse.Namespace) -> int:
    from console.store import StoreUnavailable

    # Offline and read-only: exporting must not need (or disturb) the daemon.
    store = _open_history(args)
    try:
        try:
            out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
        except OSError as exc:
            raise CLIError(f"cannot write {args.output}: {exc.strerror or exc}", EXIT_INVALID) from None
        try:
            n = store.export_jsonl(out)
        except StoreUnavailable as exc:
            raise CLIError(f"the export stopped: {exc}", EXIT_INVALID) from None
        finally:
            if args.output:
                out.close()
    finally:
        store.close()
    print(f"exported {n} events", file=sys.stderr)
    return 0


def _read_anchor(source: str) -> Anchor:
    try:
        with open(source, "rb") as f:
            data = f.read(4096)
    except OSError as exc:
        raise CLIError(f"cannot read the anchor file {source}: {exc.strerror or exc}", EXIT_INVALID) from None
    try:
        return Anchor.from_bytes(data)
    except ValueError as exc:
        raise CLIError(f"{source} is not an agent-console anchor file: {exc}", EXIT_INVALID) from None


def _verified(args: argparse.Namespace, external: Anchor | None = None) -> VerifyReport:
    from console.store import StoreUnavailable

    store = _open_history(args)
    try:
        return store.verify(external)
    except StoreUnavailable as exc:
        code = EXIT_TAMPERED if exc.reason == "corrupt" else EXIT_INVALID
        raise CLIError(f"cannot verify the history: {exc}", code) from None
    finally:
        store.close()


def cmd_verify(args: argparse.Namespace) -> int:
    external = _read_anchor(args.anchor) if args.anchor else None
    report = _verified(args, external)
    if args.json:
        print_json(report.to_dict())
    if report.ok:
        if not args.json:
            against = f", matches {args.anchor}" if args.anchor else ""
            print(f"OK: {report.checked} events, chain intact, search index intact{against}")
            if report.message.count(";"):
                print("  " + report.message.split("; ", 1)[1])
        return 0
    label = "UNACCEPTED" if report.what == "unaccepted" else "TAMPERED"
    print(f"{label}: {report.message}", file=sys.stderr)
    return EXIT_TAMPERED


def cmd_anchor(args: argparse.Namespace) -> int:
    """Copy the verified head somewhere the agent cannot write (another disk, a USB stick,
    another account): `history verify --anchor FILE` then proves nothing before it changed."""
    report = _verified(args)
    if not report.ok:
        raise CLIError(f"the history does not verify, so it is not anchored: {report.message}", EXIT_TAMPERED)
    data = Anchor(report.store_id, report.tail_seq, report.tail_hash).to_bytes()
    target = os.path.abspath(os.path.expanduser(args.to))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".agent-console-anchor.", dir=os.path.dirname(target))
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        raise CLIError(f"cannot write {args.to}: {exc.strerror or exc}", EXIT_INVALID) from None
    print(f"anchored seq {report.tail_seq} ({report.tail_hash[:16]}…) in {target}")
    print(f"check the history against it: agent-console history verify --anchor {target}")
    return 0


def cmd_accept(args: argparse.Namespace) -> int:
    with connect(args, "operator") as client:
        try:
            if args.through is None:
                status = client.call("daemon.status")
                flagged = status.get("history", {}).get("unaccepted", [])
                if not flagged:
                    print("no unaccepted rows: nothing to accept")
                    return 0
                for low, high in flagged:
                    print(f"rows {low}-{high} were found past the head anchor at start-up")
                print(
                    "review them (agent-console history export | tail), then accept: "
                    f"agent-console history accept --through {flagged[-1][1]}"
                )
                return EXIT_TAMPERED
            result = client.request(HistoryAccept(through_seq=args.through, note=args.note or ""))
        except RPCError as exc:
            raise CLIError(f"the daemon refused: {exc.message}", EXIT_INVALID) from None
        except DaemonUnreachable as exc:
            raise CLIError(str(exc), EXIT_UNREACHABLE) from None
    for low, high in result.accepted:
        print(f"accepted rows {low}-{high}: their grants are honoured from now on")
    if not result.accepted:
        print(f"no flagged rows end at or before seq {args.through}: nothing accepted")
    for low, high in result.unaccepted:
        print(f"still unaccepted: rows {low}-{high}")
    return 0


def _damage(path: Path) -> str:
    """What is wrong with the history file at ``path`` ("" when SQLite finds nothing)."""
    import sqlite3

    try:
        conn = sqlite3.connect(str(path))  # the daemon is stopped: nothing else has it open
    except sqlite3.Error as exc:
        return str(exc)
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
        conn.execute("SELECT count(*) FROM events").fetchone()
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        conn.close()
    said = [str(r[0]) for r in rows]
    return "" if said == ["ok"] else "; ".join(said)[:300]


def _aside_name(path: Path) -> Path:
    """``history.sqlite3.damaged-20261206-0332``; never one that exists (``.1``, ``.2`` …)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = path.with_name(f"{path.name}.damaged-{stamp}")
    aside, n = base, 0
    while any(os.path.lexists(f"{aside}{suffix}") for suffix in ("", "-wal", "-shm", ".head")):
        n += 1
        aside = base.with_name(f"{base.name}.{n}")
    return aside


def cmd_recover(args: argparse.Namespace) -> int:
    """Move a damaged history aside (with its journal and head anchor) and start a new one
    that records the move: the daemon starts again; nothing is deleted."""
    from console.client.spawn import running_pid
    from console.store import Store, StoreUnavailable, daemon_event

    loc = local_files(args, "history recover")
    path = loc.database
    if running_pid(loc) is not None:
        raise CLIError("the daemon is running on this history: stop it first (agent-console daemon stop)")
    if not path.exists():
        raise CLIError(f"there is no history at {path}: nothing to recover")
    damage = _damage(path)
    if not damage and not args.force:
        raise CLIError(
            f"the history {path} is not damaged (SQLite's check passes): nothing to recover. "
            "To check its hash chain: agent-console history verify; to start over anyway: --force"
        )
    aside = _aside_name(path)
    moved = []
    for suffix in ("", "-wal", "-shm", ".head"):
        source = f"{path}{suffix}"
        if os.path.lexists(source):
            os.rename(source, f"{aside}{suffix}")
            moved.append(f"{aside}{suffix}")
    note = f"a new history: the previous one was moved to {aside} ({damage or 'moved on request'})"
    try:
        with Store.open(path) as store:
            store.append(
                daemon_event(
                    at=time.time(),
                    note=note,
                    body={"event": "recovered", "moved_to": str(aside), "damage": damage},
                )
            ).result()
    except StoreUnavailable as exc:
        raise CLIError(f"moved the history to {aside}, but a new one cannot be made: {exc}") from None
    print(f"moved the damaged history aside: {', '.join(moved)}")
    print(f"started a new history at {path}, whose first event records the move")
    print(
        "standing grants, deny-rules and trusted workspaces were kept in the old history: make them again "
        "(agent-console workspaces add DIR; approve --scope always). Start the daemon: agent-console daemon start"
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "history",
        help="search past decisions, protected changes and tripwires; `history export|verify`",
        description="Past decisions, protected changes and tripwire pauses, newest first. Filters combine; "
        "--search is plain text over command, arguments, cwd, justification, reason and note.",
    )
    add_state_dir(p)
    p.add_argument(
        "--kind",
        choices=sorted(KIND_GROUPS),
        default="all",
        help="decision, protected (changes to protected paths), tripwire (pauses and their answers), "
        "or all (default)",
    )
    p.add_argument("--verdict", choices=VERDICTS)
    p.add_argument("--source", choices=SOURCES)
    p.add_argument("--tool", help="producer name, e.g. claude-code:Bash")
    p.add_argument(
        "--agent",
        metavar="KIND",
        help="one kind of agent: claude-code, codex, copilot, gemini, opencode, acp",
    )
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

    q = hsub.add_parser(
        "verify",
        help="check the hash chain, its anchors, the grants and the search index; exit 1 naming the first bad event",
        description="Checks the history offline: every row's hash, the head anchors, the grants table, the "
        "search index, and rows flagged at start-up and not yet accepted. Exit 0 intact, 1 tampered, damaged "
        "or unaccepted rows, 2 no history there or an unreadable --anchor file.",
    )
    add_state_dir(q)
    q.add_argument(
        "--anchor", metavar="FILE", help="also check against a head copied by `history anchor --to FILE`"
    )
    q.add_argument("--json", action="store_true", help="print the report as JSON")
    q.set_defaults(func=cmd_verify)

    q = hsub.add_parser(
        "anchor",
        help="copy the verified head of the history to a file of your choosing",
        description="Verifies the history, then writes its newest (seq, hash) to FILE — keep it where "
        "the agent cannot write. `history verify --anchor FILE` later proves that nothing up to that "
        "row changed, even if the state directory's own anchors were rewritten.",
    )
    add_state_dir(q)
    q.add_argument("--to", metavar="FILE", required=True)
    q.set_defaults(func=cmd_anchor)

    q = hsub.add_parser(
        "accept",
        help="accept rows start-up found past the head anchor (after reviewing them)",
        description="Without --through, lists the flagged rows (exit 1 if any). With --through SEQ, "
        "accepts every flagged range ending at or before SEQ: grants created in them are honoured again. "
        "Needs the daemon.",
    )
    add_state_dir(q)
    q.add_argument("--through", type=int, metavar="SEQ")
    q.add_argument("--note", help="why (recorded with the acceptance)")
    q.set_defaults(func=cmd_accept)

    q = hsub.add_parser(
        "recover",
        help="move a damaged history aside and start a new one (the daemon must be stopped)",
        description="For a history SQLite reports as damaged (the daemon then refuses to start): moves "
        "the file, its journal and its head anchor aside as history.sqlite3.damaged-TIME (nothing is "
        "deleted), and starts a new history whose first event records the move. Grants and trusted "
        "workspaces stay in the old file: make them again.",
    )
    add_state_dir(q)
    q.add_argument("--force", action="store_true", help="start a new history even if SQLite finds no damage")
    q.set_defaults(func=cmd_recover)
