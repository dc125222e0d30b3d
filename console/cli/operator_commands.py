"""`pending`, `approve`, `deny`, `grants`: deciding from a shell, e.g. over SSH."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import msgspec

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
from console.protocol.jsonrpc import ALREADY_DECIDED, CONFLICT, NOT_FOUND
from console.protocol.pending import AgentIdentity, PendingItem
from console.tui.model.badges import badges, confirmation
from console.tui.model.words import shown_command


def _badges(item: dict[str, Any]) -> str:
    """The console's badges, in its words and order (console/tui/model/badges.py)."""
    return ",".join(b.label for b in badges(msgspec.convert(item, PendingItem))) or "-"


def agent_shown(item: dict[str, Any]) -> str:
    """Who asked, in 32 columns: ``a-1234abcd label claude[4321]`` or ``anonymous a-1234abcd``
    (the label is the agent's text: escaped, cut before the process)."""
    agent = item.get("agent")
    if not isinstance(agent, dict):
        return (item.get("agent_id") or "operator")[:32]
    identity = msgspec.convert(agent, AgentIdentity)
    if identity.anonymous:
        return identity.shown
    process = (
        f"{inert(identity.root_comm) or '?'}[{identity.root_pid}]" if identity.root_pid else "no process"
    )
    label = inert(identity.label)
    room = 32 - len(identity.id[:10]) - len(process) - 2
    label = label if len(label) <= room else label[: max(0, room - 1)] + "…"
    return " ".join(p for p in (identity.id[:10], label, process) if p)[:32]


def _call(args: argparse.Namespace, method: str, params: dict[str, Any] | None = None) -> Any:
    with connect(args, "operator") as client:
        try:
            return client.call(method, params)
        except RPCError as exc:
            code = 1 if exc.code in (ALREADY_DECIDED, NOT_FOUND, CONFLICT) else EXIT_INVALID
            raise CLIError(exc.message, code) from None


def _all_pending(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with connect(args, "operator") as client:
        params: dict[str, Any] = {"limit": 1000}
        while True:
            page = client.call("pending.list", params)
            rows.extend(page["pending"])
            if not page["next"]:
                return rows
            params["after"] = page["next"]


def agent_kind(tool: str) -> str:
    """The kind of agent a request came from: its tool's part before the first ':'."""
    return tool.split(":", 1)[0] if ":" in tool else ""


def cmd_pending(args: argparse.Namespace) -> int:
    rows = _all_pending(args)
    if args.agent:
        rows = [r for r in rows if agent_kind(r["operation"]["tool"]) == args.agent]
    with connect(args, "operator") as client:
        # A tripwire belongs to no agent's queue: shown only when not filtering by agent.
        tripwires = [] if args.agent else tripwire_commands.open_items(client)
    if args.json:
        print_json(rows + [{"kind": "tripwire", **t} for t in tripwires])
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
        command = flag_lookalikes(inert(shown_command(msgspec.convert(item, PendingItem))))
        badge_text = _badges(item)
        shown = paint(f"{badge_text:<14}", "red bold" if badge_text != "-" else "dim")
        print(
            f"{item['request_id']:<14} {age(item['submitted_at']):>4}  {item['fingerprint'][:12]}  {agent:<32}  "
            f"{inert(item['operation']['tool'])[:18]:<18} {shown} {fit(command, 114)}"
        )
        notes = lookalike_notes(" ".join([item["operation"]["executable"], *item["operation"]["args"]]))
        if notes:
            print(f"{'':<14}   look-alike letters, shown as code points: {inert('; '.join(notes[:8]))}")
        for e in item["evaluation"]["escalations"]:
            if e.get("code") == "new_workspace":
                # e.g. "new workspace: /x is not among your trusted workspaces; approve always to trust it"
                print(f"{'':<14}   {inert(str(e.get('reason', '')))}")
    return 0


def _decided(result: dict[str, Any]) -> None:
    ids = ", ".join(result["decided"])
    line = f"{result['verdict']}: {ids}"
    if result.get("grant"):
        g = result["grant"]
        line += (
            f" (grant {g['id']}, {g['effect']} {g['scope']}"
            + (f", expires {when(g['expires_at'])}" if g["expires_at"] else "")
            + ")"
        )
    print(line)


def _each(args: argparse.Namespace, params: dict[str, Any], *, within_only: bool) -> int:
    """Decide every target in ``args.targets`` with ``params``: one answer line each, the
    rest decided when one fails (exit 1 then). With ``within_only``, a request that asks
    for more than the sandbox ceiling is left to be approved on its own."""
    failed = 0
    pending = _all_pending(args) if within_only else []
    with connect(args, "operator") as client:
        for target in args.targets:
            named = [p for p in pending if p["request_id"] == target or p["fingerprint"].startswith(target)]
            beyond = [p for p in named if p["evaluation"]["escalations"]]
            if beyond:
                print(
                    f"{target}: asks for more than the sandbox ceiling ({_badges(beyond[0])}); "
                    "approve it on its own",
                    file=sys.stderr,
                )
                failed += 1
                continue
            try:
                _decided(client.call("decide", {**params, "target": target}))
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
            item["request_id"] == target
            or (not target.startswith("r-") and item["fingerprint"].startswith(target))
            for target in targets
        )
        if not named:
            continue
        needed = confirmation(msgspec.convert(item, PendingItem))
        if needed is None:
            continue
        word, risk = needed
        if (args.confirm or "").strip().lower() != word:
            raise CLIError(f"{item['request_id']}: {risk} To approve it, type the word: --confirm {word}")


def cmd_approve(args: argparse.Namespace) -> int:
    _confirmed(args)
    params: dict[str, Any] = {"action": "approve", "scope": args.scope, "note": args.note}
    if args.rule:
        if args.scope not in ("once", "rule"):
            raise CLIError("--rule makes a rule: leave --scope out (or give --scope rule)")
        params["scope"], params["rule"] = "rule", args.rule
    if args.expires:
        if params["scope"] == "once":
            raise CLIError("--expires applies to --scope session or always, or to --rule")
        params["expires_in_s"] = args.expires
    if len(args.targets) == 1:
        _decided(_call(args, "decide", {**params, "target": args.targets[0]}))
        return 0
    if params["scope"] != "once":
        raise CLIError("several requests are approved once each; a grant or a rule is made from one")
    return _each(args, params, within_only=True)


def cmd_deny(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"action": "deny", "always": args.always, "note": args.note}
    if args.reason:
        params["reason"] = args.reason
    if len(args.targets) == 1:
        _decided(_call(args, "decide", {**params, "target": args.targets[0]}))
        return 0
    return _each(args, params, within_only=False)


def cmd_grants(args: argparse.Namespace) -> int:
    rows = _call(args, "grants.list", {"include_inactive": args.all})["grants"]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("no grants")
        return 0
    print(
        f"{'ID':<13} {'EFFECT':<6} {'SCOPE':<8} {'FINGERPRINT':<12}  {'CREATED':<19}  {'EXPIRES':<19}  {'USES':>4}  SUMMARY"
    )
    for g in rows:
        state = " (revoked)" if g.get("revoked_at") else ""
        fp = "-" if g["scope"] == "rule" else g["fingerprint"][:12]  # a rule's key is its words
        print(
            f"{g['id']:<13} {g['effect']:<6} {g['scope']:<8} {fp:<12}  {when(g['created_at']):<19}  "
            f"{when(g.get('expires_at')):<19}  {g.get('uses', 0):>4}  {_what(g)[:80]}{state}"
        )
    return 0


def _what(grant: dict[str, Any]) -> str:
    """What a grant covers, in its tool's words when it has them."""
    words = row_words({"tool": grant.get("tool"), "command": grant.get("summary")})
    return flag_lookalikes(inert(words or str(grant.get("summary") or "")))


def cmd_revoke(args: argparse.Namespace) -> int:
    revoked = _call(args, "grants.revoke", {"target": args.target})["revoked"]
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
