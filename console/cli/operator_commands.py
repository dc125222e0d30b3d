"""`pending`, `approve`, `deny`, `grants`: deciding from a shell, e.g. over SSH."""

from __future__ import annotations

import argparse
import sys
from typing import TypeVar

import msgspec
from msgspec import UnsetType

from console.cli import tripwire_commands
from console.cli.common import (
    EXIT_INVALID,
    CLIError,
    add_state_dir,
    age,
    connect,
    fit,
    paint,
    parse_duration,
    print_json,
    when,
)
from console.client import RPCError
from console.contract.inert import flag_lookalikes, inert, lookalike_notes
from console.contract.tool_words import row_words
from console.policy import GrantScope
from console.protocol.grants import GrantObject
from console.protocol.jsonrpc import ALREADY_DECIDED, CONFLICT, NOT_FOUND
from console.protocol.pending import PendingItem
from console.protocol.requests import (
    Decide,
    DecideAction,
    GrantsList,
    GrantsRevoke,
    MethodParams,
    PendingList,
)
from console.protocol.results import DecideResult, MethodResult
from console.tui.model.badges import badges, confirmation
from console.tui.model.words import shown_command

R = TypeVar("R", bound=MethodResult)


def _badges(item: PendingItem) -> str:
    """The console's badges, in its words and order (console/tui/model/badges.py)."""
    return ",".join(b.label for b in badges(item)) or "-"


def agent_shown(item: PendingItem) -> str:
    """Who asked, in 32 columns: ``a-1234abcd label claude[4321]`` or ``anonymous a-1234abcd``
    (the label is the agent's text: escaped, cut before the process)."""
    identity = item.agent
    if isinstance(identity, UnsetType):
        return (item.agent_id or "operator")[:32]
    if identity.anonymous:
        return identity.shown
    process = (
        f"{inert(identity.root_comm) or '?'}[{identity.root_pid}]" if identity.root_pid else "no process"
    )
    label = inert(identity.label)
    room = 32 - len(identity.id[:10]) - len(process) - 2
    label = label if len(label) <= room else label[: max(0, room - 1)] + "…"
    return " ".join(p for p in (identity.id[:10], label, process) if p)[:32]


def _request(args: argparse.Namespace, params: MethodParams[R]) -> R:
    with connect(args, "operator") as client:
        try:
            return client.request(params)
        except RPCError as exc:
            code = 1 if exc.code in (ALREADY_DECIDED, NOT_FOUND, CONFLICT) else EXIT_INVALID
            raise CLIError(exc.message, code) from None


def _all_pending(args: argparse.Namespace) -> list[PendingItem]:
    rows: list[PendingItem] = []
    with connect(args, "operator") as client:
        after = ""
        while True:
            page = client.request(PendingList(limit=1000, after=after))
            rows.extend(page.pending)
            if not page.next:
                return rows
            after = page.next


def agent_kind(tool: str) -> str:
    """The kind of agent a request came from: its tool's part before the first ':'."""
    return tool.split(":", 1)[0] if ":" in tool else ""


def cmd_pending(args: argparse.Namespace) -> int:
    rows = _all_pending(args)
    if args.agent:
        rows = [r for r in rows if agent_kind(r.operation.tool) == args.agent]
    with connect(args, "operator") as client:
        # A tripwire belongs to no agent's queue: shown only when not filtering by agent.
        tripwires = [] if args.agent else tripwire_commands.open_items(client)
    if args.json:
        print_json(
            msgspec.to_builtins(rows) + [{"kind": "tripwire", **msgspec.to_builtins(t)} for t in tripwires]
        )
        return 0
    if tripwires:
        print("tripwire (agent-console tripwire resume|kill|keep ID):")
        for t in tripwires:
            print("  " + tripwire_commands.item_line(t))
    if not rows:
        print("no pending requests")
        return 0
    print(
        paint(
            f"{'ID':<14} {'AGE':>4}  {'FINGERPRINT':<12}  {'AGENT':<32}  {'TOOL':<18} {'BADGES':<14} COMMAND",
            "bold",
        )
    )
    for item in rows:
        agent = agent_shown(item)
        # In the tool's words (Write .env (+12 −3)), look-alike letters written as code
        # points; whole when piped, cut at a word on a terminal.
        command = flag_lookalikes(inert(shown_command(item)))
        badge_text = _badges(item)
        shown = paint(f"{badge_text:<14}", "red bold" if badge_text != "-" else "dim")
        print(
            f"{item.request_id:<14} {age(item.submitted_at):>4}  {item.fingerprint[:12]}  {agent:<32}  "
            f"{inert(item.operation.tool)[:18]:<18} {shown} {fit(command, 114)}"
        )
        notes = lookalike_notes(" ".join(item.operation.argv))
        if notes:
            print(f"{'':<14}   look-alike letters, shown as code points: {inert('; '.join(notes[:8]))}")
        for e in item.evaluation.escalations:
            if e.code == "new_workspace":
                # e.g. "new workspace: /x is not among your trusted workspaces; approve always to trust it"
                print(f"{'':<14}   {inert(e.reason)}")
    return 0


def _decided(result: DecideResult) -> None:
    ids = ", ".join(result.decided)
    line = f"{result.verdict}: {ids}"
    g = result.grant
    if g is not None:
        line += (
            f" (grant {g.id}, {g.effect} {g.scope}"
            + (f", expires {when(g.expires_at)}" if g.expires_at else "")
            + ")"
        )
    print(line)


def _each(args: argparse.Namespace, params: Decide, *, within_only: bool) -> int:
    """Decide every target in ``args.targets`` as ``params`` says (its own target aside):
    one answer line each, the rest decided when one fails (exit 1 then). With
    ``within_only``, a request that asks for more than the sandbox ceiling is left to be
    approved on its own."""
    failed = 0
    pending = _all_pending(args) if within_only else []
    with connect(args, "operator") as client:
        for target in args.targets:
            named = [p for p in pending if p.request_id == target or p.fingerprint.startswith(target)]
            beyond = [p for p in named if p.evaluation.escalations]
            if beyond:
                print(
                    f"{target}: asks for more than the sandbox ceiling ({_badges(beyond[0])}); "
                    "approve it on its own",
                    file=sys.stderr,
                )
                failed += 1
                continue
            try:
                _decided(client.request(msgspec.structs.replace(params, target=target)))
            except RPCError as exc:
                print(f"{target}: {exc.message}", file=sys.stderr)
                failed += 1
    return 1 if failed else 0


def _confirmed(args: argparse.Namespace) -> None:
    """The console's typed word (console/tui/model/badges.py ``confirmation``): approving
    `unrestricted`, a protected path (agents' settings included) or a new workspace takes
    ``--confirm WORD``, checked against every pending request the targets name."""
    targets = args.targets
    for item in _all_pending(args):
        named = any(
            item.request_id == target or (not target.startswith("r-") and item.fingerprint.startswith(target))
            for target in targets
        )
        if not named:
            continue
        needed = confirmation(item)
        if needed is None:
            continue
        word, risk = needed
        if (args.confirm or "").strip().lower() != word:
            raise CLIError(f"{item.request_id}: {risk} To approve it, type the word: --confirm {word}")


def cmd_approve(args: argparse.Namespace) -> int:
    _confirmed(args)
    scope, rule = GrantScope(args.scope), ""
    if args.rule:
        if args.scope not in ("once", "rule"):
            raise CLIError("--rule makes a rule: leave --scope out (or give --scope rule)")
        scope, rule = GrantScope.RULE, args.rule
    if args.expires and scope == GrantScope.ONCE:
        raise CLIError("--expires applies to --scope session or always, or to --rule")
    params = Decide(
        target=args.targets[0],
        action=DecideAction.APPROVE,
        scope=scope,
        expires_in_s=args.expires or None,
        note=args.note,
        rule=rule,
    )
    if len(args.targets) == 1:
        _decided(_request(args, params))
        return 0
    if scope != GrantScope.ONCE:
        raise CLIError("several requests are approved once each; a grant or a rule is made from one")
    return _each(args, params, within_only=True)


def cmd_deny(args: argparse.Namespace) -> int:
    params = Decide(
        target=args.targets[0],
        action=DecideAction.DENY,
        always=args.always,
        note=args.note,
        reason=args.reason,
    )
    if len(args.targets) == 1:
        _decided(_request(args, params))
        return 0
    return _each(args, params, within_only=False)


def cmd_grants(args: argparse.Namespace) -> int:
    rows = _request(args, GrantsList(include_inactive=args.all)).grants
    if args.json:
        print_json(msgspec.to_builtins(rows))
        return 0
    if not rows:
        print("no grants")
        return 0
    print(
        f"{'ID':<13} {'EFFECT':<6} {'SCOPE':<8} {'FINGERPRINT':<12}  {'CREATED':<19}  {'EXPIRES':<19}  {'USES':>4}  SUMMARY"
    )
    for g in rows:
        state = " (revoked)" if g.revoked_at else ""
        fp = "-" if g.scope == "rule" else g.fingerprint[:12]  # a rule's key is its words
        print(
            f"{g.id:<13} {g.effect:<6} {g.scope:<8} {fp:<12}  {when(g.created_at):<19}  "
            f"{when(g.expires_at):<19}  {g.uses:>4}  {_what(g)[:80]}{state}"
        )
    return 0


def _what(grant: GrantObject) -> str:
    """What a grant covers, in its tool's words when it has them."""
    words = row_words({"tool": grant.tool, "command": grant.summary})
    return flag_lookalikes(inert(words or grant.summary))


def cmd_revoke(args: argparse.Namespace) -> int:
    revoked = _request(args, GrantsRevoke(target=args.target)).revoked
    print("revoked: " + ", ".join(revoked))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("pending", help="list the requests waiting for a decision")
    add_state_dir(p)
    p.add_argument("--json", action="store_true", help="print the full requests as JSON")
    p.add_argument(
        "--agent",
        metavar="KIND",
        help="only one kind of agent's: claude-code, codex, copilot, gemini, opencode, acp",
    )
    p.set_defaults(func=cmd_pending)

    target_help = "a request id (r-…), or a fingerprint or unique prefix of one"
    p = sub.add_parser(
        "approve",
        help="approve a pending request",
        description="Approve a pending request. --scope once allows just this request; session creates "
        "a grant for the agent's session; always a standing grant (optionally expiring). Standing "
        "grants also settle identical requests already waiting.",
    )
    add_state_dir(p)
    p.add_argument(
        "targets",
        nargs="+",
        metavar="ID|FINGERPRINT",
        help=target_help + "; several: each approved once, those within the sandbox ceiling only",
    )
    p.add_argument("--scope", choices=["once", "session", "always"], default="once")
    p.add_argument(
        "--rule",
        metavar="WORDS",
        help="also allow from now on what this agent runs in this workspace starting with WORDS "
        "(e.g. 'npm test'), within the sandbox ceiling only (docs/policy.md, Rules)",
    )
    p.add_argument(
        "--expires", type=parse_duration, metavar="DURATION", help="grant expiry, e.g. 30m, 8h, 7d"
    )
    p.add_argument("--note", default="", help="a note recorded with the decision and sent to the agent")
    p.add_argument(
        "--confirm",
        metavar="WORD",
        help="the word that approving unrestricted, a protected path or a new workspace takes "
        "(unrestricted, protected, workspace), as the console asks it typed",
    )
    p.set_defaults(func=cmd_approve)

    p = sub.add_parser("deny", help="deny a pending request")
    add_state_dir(p)
    p.add_argument(
        "targets", nargs="+", metavar="ID|FINGERPRINT", help=target_help + "; several: each denied"
    )
    p.add_argument(
        "--always", action="store_true", help="also add a deny-rule: this fingerprint is denied from now on"
    )
    p.add_argument(
        "--reason", default="", help="the reason code or text the agent receives (default operator_denied)"
    )
    p.add_argument(
        "--note", default="", help="a note recorded with the decision and sent to the agent with the denial"
    )
    p.set_defaults(func=cmd_deny)

    p = sub.add_parser("grants", help="list grants and deny-rules; `grants revoke` removes one")
    add_state_dir(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--all", action="store_true", help="include revoked, expired and used-up grants")
    p.set_defaults(func=cmd_grants)
    gsub = p.add_subparsers(dest="grants_command", metavar="ACTION")
    q = gsub.add_parser("revoke", help="revoke a grant by id, or every grant for a fingerprint")
    add_state_dir(q)
    q.add_argument("target", metavar="GRANT_ID|FINGERPRINT")
    q.set_defaults(func=cmd_revoke)
