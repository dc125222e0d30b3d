"""Turning daemon data into Rich ``Text`` for the screen, with agent text kept inert.

Every agent-supplied string goes through :func:`agent_text`: escaped by
:func:`console.contract.inert.inert`, wrapped in a ``Text`` built directly (never from
markup, never ``Text.from_ansi``), with the escapes and look-alike letters styled so a
literal backslash in the agent's text cannot pass for one of our escapes. Styles come in
as a role → ``rich.style.Style`` mapping, which widgets fill from their component
classes, so themes reach everything drawn here.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.style import Style
from rich.text import Text

from console.contract.inert import Finding, findings, inert
from console.tui.model.argdiff import argv_diff, closest, split_command
from console.tui.model.badges import Badge
from console.tui.model.shellsplit import PartKind, chain_for, shell_script
from console.tui.model.timefmt import ago, clock_time
from console.tui.render.untrusted import CANDIDATE, Line, Shown, block, lookalike_spans, one_line

Styles = Mapping[str, Style]

ROLES = (
    "heading",
    "label",
    "dim",
    "program",
    "escape",
    "lookalike",
    "marker",
    "escalation",
    "within",
    "forbidden",
    "warning",
    "added",
    "removed",
    "operator",
    "redirect",
    "substitution",
    "allow",
    "deny",
    "badge-unrestricted",
    "badge-protected",
    "badge-workspace",
    "badge-outside",
    "badge-network",
    "badge-environment",
    "badge-other",
)
PLAIN: dict[str, Style] = {role: Style() for role in ROLES}

_CANDIDATE = CANDIDATE


def agent_text(
    text: str, styles: Styles, base: Style | str = "", *, limit: int | None = None
) -> tuple[Text, bool]:
    """One line of agent text, inert, with escapes and look-alikes marked; and whether it was cut."""
    if limit is not None:
        shown, cut = one_line(text, limit)
        source = text[: limit * 8]
    else:
        shown, cut = inert(text), False
        source = text
    out = Text(style=base, no_wrap=False, end="")
    if not _CANDIDATE.search(source):
        out.append(shown)
        return out, cut
    # Rebuild piece by piece so each escape can be styled as ours.
    budget = len(shown) - (1 if cut else 0)
    used = 0
    run: list[str] = []
    for ch in source:
        if used >= budget:
            break
        esc = inert(ch) if _CANDIDATE.match(ch) else ch
        if esc == ch and ch != "\\":
            run.append(ch)
            used += 1
            continue
        if run:
            out.append("".join(run))
            run.clear()
        if ch == "\\":
            out.append("\\", styles["dim"])
            used += 1
        else:
            piece = esc[: budget - used]
            out.append(piece, styles["escape"])
            used += len(piece)
    if run:
        out.append("".join(run))
    if cut:
        out.append("…", styles["marker"])
    plain = out.plain
    for start, end in lookalike_spans(plain):
        out.stylize(styles["lookalike"], start, end)
    return out, cut


def agent_block(shown: Shown, styles: Styles, indent: str = "  ") -> Text:
    """A :func:`console.tui.render.untrusted.block` as Text: agent lines, and our markers styled apart."""
    out = Text(end="")
    for i, line in enumerate(shown.lines):
        if i:
            out.append("\n")
        out.append(indent)
        out.append_text(line_text(line, styles))
    return out


def line_text(line: Line, styles: Styles, base: Style | str = "") -> Text:
    """One line of a :func:`block`: our markers apart, the agent's escapes and look-alikes marked."""
    if line.marker:
        return Text(line.text, styles["marker"], end="")
    piece = Text(line.text, base, end="")
    for start, end in line.escapes:
        piece.stylize(styles["escape"], start, end)
    for start, end in lookalike_spans(line.text):
        piece.stylize(styles["lookalike"], start, end)
    return piece


def badge_text(badges: Sequence[Badge], styles: Styles) -> Text:
    out = Text(end="")
    for b in badges:
        if out:
            out.append(" ")
        out.append(f" {b.label} ", styles[f"badge-{b.kind.value}"])
    return out


def quoted_argv(argv: Sequence[str], styles: Styles, limit: int) -> tuple[Text, bool]:
    """The argv shell-quoted, the program emphasised; cut arguments are marked."""
    out = Text(end="")
    truncated = False
    for i, arg in enumerate(argv):
        if i:
            out.append(" ")
        piece, cut = agent_text(
            shlex.quote(arg) if arg else "''", styles, styles["program"] if i == 0 else "", limit=limit
        )
        truncated |= cut
        out.append_text(piece)
    return out, truncated


@dataclass
class DetailOptions:
    max_chars: int = 2000
    max_lines: int = 40
    max_arg_chars: int = 300
    expanded: bool = False
    full_fingerprint: bool = False
    with_previous: bool = True
    with_target: bool = True  # the queue's "approve / deny act on this request" line


@dataclass
class Rendered:
    text: Text
    truncated: bool  # something of the request is not on screen: the typed-ahead guard holds


def _section(out: Text, title: str, styles: Styles, extra: str = "") -> None:
    out.append("\n" if out.plain.endswith("\n") else "\n\n")
    out.append(title, styles["heading"])
    if extra:
        out.append("  " + extra, styles["dim"])
    out.append("\n")


def field(out: Text, label: str, value: Text | str, styles: Styles) -> None:
    out.append(f"  {label:<12}", styles["label"])
    if isinstance(value, Text):
        out.append_text(value)
    else:
        out.append(value)
    out.append("\n")


def byte_size(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def all_agent_strings(item: Mapping[str, Any]) -> list[str]:
    op = item.get("operation") or {}
    strings = [
        op.get("executable", ""),
        *op.get("args", ()),
        op.get("cwd", ""),
        op.get("justification", ""),
        op.get("session_id", ""),
        op.get("tool", ""),
    ]
    for k, v in (op.get("env") or {}).items():
        strings.extend((k, v))
    return [s for s in strings if isinstance(s, str)]


def text_findings(item: Mapping[str, Any]) -> set[Finding]:
    """What the banner warns about. Newlines and tabs are how multi-line text is written
    (a script, a justification): shown as lines and ``\\t``, never a reason to alarm."""
    found: set[Finding] = set()
    for s in all_agent_strings(item):
        found |= findings(s.replace("\n", " ").replace("\t", " "))
    return found


def render_request(
    item: Mapping[str, Any],
    badges: Sequence[Badge],
    styles: Styles,
    options: DetailOptions,
    previous: Sequence[Mapping[str, Any]] | None = None,
    now: float | None = None,
) -> Rendered:
    """The detail of one pending request, top to bottom as the operator reads it."""
    now = time.time() if now is None else now
    op = item.get("operation") or {}
    ev = item.get("evaluation") or {}
    limit = 10**9 if options.expanded else options.max_chars
    truncated = False
    argv = [op.get("executable", ""), *op.get("args", [])]
    out = Text(end="")

    if options.with_target:
        # Whose detail this is: the keys act on this request, not on the row under the cursor.
        out.append(str(item.get("request_id", "")), styles["label"])
        out.append("  approve / deny act on this request\n", styles["dim"])
    # Title: the program and its badges.
    title, cut = agent_text(argv[0].rsplit("/", 1)[-1], styles, styles["program"], limit=80)
    truncated |= cut
    out.append_text(title)
    if badges:
        out.append("  ")
        out.append_text(badge_text(badges, styles))
    else:
        out.append("  within the sandbox", styles["within"])

    found = text_findings(item)
    if found:
        out.append("\n")
        out.append(
            "⚠ the agent's text contains " + ", ".join(sorted(f.value for f in found)), styles["warning"]
        )
        out.append(" — shown escaped and highlighted", styles["dim"])
    script = shell_script(argv)
    chain = chain_for(*script) if script is not None else None
    if chain is not None and chain.uncertain:
        out.append("\n")
        out.append(
            "⚠ the command split below may be incomplete: " + "; ".join(chain.uncertain), styles["warning"]
        )
        out.append(" — read the raw script", styles["warning"])
    # The banner about cut text goes here, once the body below says whether anything was cut.
    head, out = out, Text(end="")

    _section(out, "Command", styles)
    out.append("  ")
    cmd, cut = quoted_argv(argv, styles, 10**9 if options.expanded else options.max_arg_chars)
    truncated |= cut
    out.append_text(cmd)
    out.append("\n")

    if script is not None and chain is not None:
        shell, body = script
        if chain.uncertain:
            # The split may not be what runs: the script itself, every line, is what to read.
            # Cut, it counts as truncated, so the approval keys wait until it is expanded.
            raw = block(
                body, max_chars=options.max_chars, max_lines=options.max_lines, expanded=options.expanded
            )
            truncated |= raw.truncated
            _section(out, f"Raw script ({shell} -c)", styles, "what runs, exactly as sent")
            out.append_text(agent_block(raw, styles))
            out.append("\n")
        if chain.is_compound or chain.uncertain:
            _section(
                out,
                f"Shell chain ({shell} -c)",
                styles,
                f"{len(chain.commands)} command{'s' if len(chain.commands) != 1 else ''}"
                + ("" if not chain.uncertain else " as split here — may be incomplete, see the raw script"),
            )
            number = 0
            for part in chain.parts:
                pad = "  " + "    " * part.depth
                if part.kind is PartKind.COMMAND:
                    number += 1
                    out.append(f"{pad}{number:>2} ", styles["label"])
                    piece, cut = agent_text(part.text, styles, limit=limit)
                    truncated |= cut
                    out.append_text(piece)
                elif part.kind is PartKind.OPERATOR:
                    shown = {
                        "\n": "⏎ next line, whatever the result",
                        "&": "& (background)",
                        ";": "; next, whatever the result",
                        "|": "| pipe into",
                        "&&": "&& if it succeeds",
                        "||": "|| if it fails",
                    }.get(part.text, part.text)
                    out.append(f"{pad}   {shown}", styles["operator"])
                elif part.kind is PartKind.REDIRECT:
                    out.append(f"{pad}   redirect ", styles["redirect"])
                    piece, cut = agent_text(part.text, styles, styles["redirect"], limit=limit)
                    truncated |= cut
                    out.append_text(piece)
                elif part.kind is PartKind.SUBSTITUTION:
                    out.append(f"{pad}↳ runs first, output substituted: {part.text}", styles["substitution"])
                else:
                    out.append(f"{pad}   comment ", styles["dim"])
                    piece, cut = agent_text(part.text, styles, styles["dim"], limit=limit)
                    truncated |= cut
                    out.append_text(piece)
                out.append("\n")
            if chain.missed:
                out.append("  ⚠ a shell parser also reads these commands, missing above:", styles["warning"])
                out.append("\n")
                for missed in chain.missed:
                    out.append("     ")
                    piece, cut = agent_text(missed, styles, styles["warning"], limit=limit)
                    truncated |= cut
                    out.append_text(piece)
                    out.append("\n")

    truncated |= _render_content(out, item, styles, limit)
    truncated |= _render_proposed(out, item, styles, options, limit)

    escalations = ev.get("escalations") or []
    _section(
        out,
        f"Escalations ({len(escalations)})" if escalations else "No escalations",
        styles,
        "beyond the sandbox — what approving grants"
        if escalations
        else "everything stays within the ceiling",
    )
    for e in escalations:
        out.append("  ✖ ", styles["escalation"])
        label = e.get("kind", "?") + (f"({e['scope']})" if e.get("scope") else "")
        piece, cut = agent_text(label, styles, styles["escalation"], limit=limit)
        truncated |= cut
        out.append_text(piece)
        out.append(" — " + str(e.get("reason", "")), styles["escalation"])
        out.append("\n")
    lifted = ev.get("lifted") or []
    if lifted:
        _section(
            out,
            "Approving lifts the whole sandbox",
            styles,
            "it runs outside, with every power of your account",
        )
        for f in lifted:
            out.append("  ✖ ", styles["escalation"])
            out.append(str(f.get("reason", "")), styles["escalation"])
            out.append("\n")
    justification = op.get("justification", "")
    _section(out, "Justification", styles, "the agent's words; not part of any decision")
    if justification:
        shown_block = block(
            justification, max_chars=options.max_chars, max_lines=options.max_lines, expanded=options.expanded
        )
        truncated |= shown_block.truncated
        out.append_text(agent_block(shown_block, styles))
        out.append("\n")
    else:
        out.append("  (none given)\n", styles["dim"])

    if options.with_previous:
        _section(out, "Previous decisions", styles, "of the same command")
        out.append_text(render_previous(argv, previous, styles, now))
    _section(out, "Context", styles)
    for label, key in (("cwd", "cwd"), ("workspace", "workspace_root")):
        piece, cut = agent_text(str(op.get(key, "")), styles, limit=limit)
        truncated |= cut
        field(out, label, piece, styles)
    env = op.get("env") or {}
    if env:
        for i, (name, value) in enumerate(sorted(env.items())):
            piece, cut = agent_text(f"{name}={value}", styles, limit=limit)
            truncated |= cut
            field(out, "env" if i == 0 else "", piece, styles)
    else:
        field(out, "env", Text("no overrides", styles["dim"]), styles)
    stdin_b64 = op.get("stdin", "") or ""
    field(
        out,
        "stdin",
        f"{len(stdin_b64) * 3 // 4 - stdin_b64.count('=')} bytes" if stdin_b64 else "none",
        styles,
    )
    field(out, "timeout", f"{op.get('timeout_ms', 0) / 1000:g} s", styles)
    limits = op.get("output") or {}
    field(
        out,
        "output",
        f"keep {byte_size(int(limits.get('capture_bytes', 0)))}, "
        f"stop at {byte_size(int(limits.get('max_bytes', 0)))}",
        styles,
    )
    if op.get("write_dirs"):
        for i, d in enumerate(op["write_dirs"]):
            piece, cut = agent_text(d, styles, limit=limit)
            truncated |= cut
            field(out, "write dir" if i == 0 else "", piece, styles)
    field(
        out,
        "access",
        f"workspace {op.get('workspace_access', '?')}, network {op.get('network', '?')}",
        styles,
    )
    field(
        out,
        "origin",
        f"{op.get('origin', '?')}, mode {op.get('mode', '?')}, kind {op.get('kind', '?')}",
        styles,
    )
    piece, cut = agent_text(op.get("tool", ""), styles, limit=limit)
    truncated |= cut
    field(out, "tool", piece, styles)
    session, cut = agent_text(item.get("session_id", "") or "-", styles, limit=limit)
    truncated |= cut
    field(out, "session", session, styles)
    deadline = item.get("deadline")
    left = f", denied automatically in {max(0, int(deadline - now))} s" if deadline else ""
    field(out, "request", f"{item.get('request_id', '?')} from pid {item.get('peer_pid', '?')}{left}", styles)
    fp = str(item.get("fingerprint", ""))
    field(
        out,
        "fingerprint",
        fp if options.full_fingerprint or options.expanded else f"{fp[:16]}…",
        styles,
    )

    within = ev.get("within") or []
    if within:
        _section(out, "Within the ceiling", styles)
        for w in within:
            out.append("  ✔ ", styles["within"])
            piece, cut = agent_text(
                w.get("kind", "?") + (f"({w['scope']})" if w.get("scope") else ""), styles, limit=limit
            )
            truncated |= cut
            out.append_text(piece)
            out.append(" — " + str(w.get("reason", "")), styles["dim"])
            out.append("\n")
    forbidden = ev.get("forbidden") or []
    if forbidden:
        _section(out, "Still forbidden by the sandbox", styles, "approval does not lift these")
        for f in forbidden:
            out.append("  ⊘ ", styles["forbidden"])
            out.append(str(f.get("kind", "?")))
            out.append(" — " + str(f.get("reason", "")), styles["dim"])
            out.append("\n")
    if truncated:
        head.append("\n")
        head.append(
            "✂ parts of this request are cut short — press x to expand; approval keys wait until you do",
            styles["marker"],
        )
    head.append_text(out)
    return Rendered(head, truncated)


def _render_proposed(out: Text, item: Mapping[str, Any], styles: Styles, options: Any, limit: int) -> bool:
    """What a file-writing tool call will write, as the daemon's diff against the file
    (console/daemon/proposed.py); True when it was cut, so approving waits for expanding."""
    change = item.get("proposed")
    if not isinstance(change, Mapping):
        return False
    old, new = int(change.get("old_bytes", 0)), int(change.get("new_bytes", 0))
    what = "a new file" if change.get("new_file") else f"{byte_size(old)} → {byte_size(new)}"
    _section(out, "Proposed change", styles, f"{what}; the grant binds exactly this content")
    out.append("  ")
    piece, truncated = agent_text(str(change.get("path", "")), styles, limit=limit)
    out.append_text(piece)
    out.append("\n")
    note = str(change.get("note") or "")
    if note:
        out.append("  ⚠ " + note + "\n", styles["warning"])
    diff = str(change.get("diff") or "")
    if not diff:
        return truncated
    shown = block(diff, max_chars=options.max_chars, max_lines=options.max_lines, expanded=options.expanded)
    for line in shown.lines:
        style: Style | str = ""
        if line.text.startswith(("+", "-")) and not line.text.startswith(("+++", "---")):
            style = styles["added"] if line.text.startswith("+") else styles["removed"]
        elif line.text.startswith("@@"):
            style = styles["dim"]
        out.append("  ")
        out.append_text(line_text(line, styles, style))
        out.append("\n")
    return truncated or shown.truncated


def _render_content(out: Text, item: Mapping[str, Any], styles: Styles, limit: int) -> bool:
    """The files the fingerprint binds, what it could not bind, and whether this request
    replaces one whose content changed while it waited; True when a path was cut."""
    content = item.get("content") or []
    unbound = item.get("unbound") or []
    supersedes = item.get("supersedes") or ""
    truncated = False
    if supersedes:
        out.append("\n")
        piece, cut = agent_text(str(supersedes), styles, styles["warning"], limit=80)
        truncated |= cut
        out.append("⚠ changed since shown; decide again — this replaces ", styles["warning"])
        out.append_text(piece)
        out.append(", whose content changed before it could run\n", styles["warning"])
    if not content and not unbound:
        return truncated
    _section(out, "Content", styles, "the bytes an approval is bound to")
    for pair in content:
        path, digest = [*list(pair), "", ""][:2]
        out.append("  ")
        piece, cut = agent_text(str(path), styles, limit=limit)
        truncated |= cut
        out.append_text(piece)
        out.append(
            f"  {str(digest)[:12]}" if digest else "  (absent: creating it changes the fingerprint)",
            styles["dim"],
        )
        out.append("\n")
    for reason in unbound:
        out.append("  ⚠ ", styles["warning"])
        piece, cut = agent_text(str(reason), styles, styles["warning"], limit=limit)
        truncated |= cut
        out.append_text(piece)
        out.append("\n")
    if unbound:
        out.append("    a standing grant is refused for it: approve once\n", styles["dim"])
    return truncated


def command_head(argv: Sequence[str]) -> tuple[str, ...]:
    """What makes two commands comparable: the program and its first word that is not an
    option (``pip install``, ``git push``), looked for inside a ``sh -c`` script."""
    script = shell_script(list(argv)) if argv else None
    if script is not None:
        argv = split_command(script[1].split("&&")[0].split(";")[0].split("|")[0]) or []
    if not argv:
        return ()
    program = str(argv[0]).rsplit("/", 1)[-1]
    words = [a for a in argv[1:] if not str(a).startswith("-")]
    return (program, str(words[0])) if words else (program,)


def decided_by(previous: Mapping[str, Any]) -> str:
    """Who settled a previous decision, in words: only the operator's are "you"."""
    allowed = previous.get("verdict") == "allow"
    return {
        "operator": "you approved" if allowed else "you denied",
        "policy": "the policy allowed" if allowed else "the policy denied",
        "grant": "a grant allowed" if allowed else "a deny rule denied",
        "timeout": "nobody answered (timed out)",
    }.get(
        str(previous.get("source", "")),
        ("allowed" if allowed else "denied") + f" ({previous.get('source', '?')})",
    )


def render_previous(
    argv: Sequence[str], previous: Sequence[Mapping[str, Any]] | None, styles: Styles, now: float
) -> Text:
    out = Text(end="")
    if previous is None:
        out.append("  looking…\n", styles["dim"])
        return out
    if not previous:
        out.append("  none: the first time this program is asked for\n", styles["dim"])
        return out
    argvs = [split_command(str(p.get("command", ""))) or [] for p in previous]
    mine = command_head(argv)
    alike = [i for i, other in enumerate(argvs) if command_head(other) == mine]
    pick = closest(argv, [argvs[i] for i in alike])
    best = alike[pick] if pick is not None else None
    if best is None:
        out.append(
            f"  none for this command ({len(previous)} other use{'s' if len(previous) != 1 else ''} of the program)\n",
            styles["dim"],
        )
    else:
        p = previous[best]
        verb = decided_by(p)
        changes = argv_diff(argvs[best], argv)
        when = ago(now - float(p.get("at", now)))
        if not changes:
            out.append(
                f"  the same command: {verb} {when}",
                styles["allow" if p.get("verdict") == "allow" else "deny"],
            )
        else:
            out.append(f"  differs from what {verb} {when}: ", styles["label"])
            for i, change in enumerate(changes[:20]):
                if i:
                    out.append(", ")
                piece, _ = agent_text(change.arg, styles, limit=80)
                out.append(change.sign + " ", styles["added" if change.sign == "+" else "removed"])
                piece.stylize(styles["added" if change.sign == "+" else "removed"])
                out.append_text(piece)
            if len(changes) > 20:
                out.append(f", … {len(changes) - 20} more", styles["marker"])
        out.append("\n")
    for p in previous[:8]:
        verdict = str(p.get("verdict", ""))
        out.append(f"  {verdict:<5} ", styles["allow" if verdict == "allow" else "deny"])
        out.append(
            f"{p.get('source', '')}/{p.get('scope', '') or '-':<8} {clock_time(p.get('at'))}  ", styles["dim"]
        )
        piece, _ = agent_text(str(p.get("command", "")), styles, limit=100)
        out.append_text(piece)
        out.append("\n")
    return out


# ---------------------------------------------------------------------- one history entry


def item_from_request_record(
    record: Mapping[str, Any], decision: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A request event from the history in the shape of a pending item, for :func:`render_request`.

    The evaluation is the decision's: the request event holds the operation only, and a
    history entry without it would read "within the sandbox, no escalations" for a
    request that escalated."""
    body = record.get("body") or {}
    decided = (decision or {}).get("body") or {}
    return {
        "request_id": record.get("request_id", ""),
        "fingerprint": record.get("fingerprint", ""),
        "session_id": record.get("session_id", ""),
        "command": record.get("command", ""),
        "peer_pid": record.get("peer_pid"),
        "submitted_at": record.get("at"),
        "operation": body.get("operation") or {},
        "evaluation": body.get("evaluation") or decided.get("capability_diff") or {},
    }


def render_decision(record: Mapping[str, Any] | None, styles: Styles, limit: int) -> Text:
    out = Text(end="")
    out.append("Decision\n", styles["heading"])
    if record is None:
        out.append("  none recorded (still pending, or the daemon stopped first)\n", styles["dim"])
        return out
    verdict = str(record.get("verdict", ""))
    out.append(f"  {verdict.upper():<6}", styles["allow" if verdict == "allow" else "deny"])
    out.append(f" by {record.get('source', '?')}", styles["label"])
    if record.get("scope"):
        out.append(f", scope {record['scope']}", styles["label"])
    out.append(f"  at {clock_time(record.get('at'))}", styles["dim"])
    if record.get("latency_ms") is not None:
        out.append(f"  after {float(record['latency_ms']) / 1000:.1f} s", styles["dim"])
    out.append("\n")
    for label, key in (("reason", "reason"), ("note", "note")):
        if record.get(key):
            piece, _ = agent_text(str(record[key]), styles, limit=limit)
            field(out, label, piece, styles)
    body = record.get("body") or {}
    for d in body.get("denials") or []:
        out.append("  ✖ ", styles["escalation"])
        out.append(
            f"{d.get('capability', {}).get('kind', '?') if isinstance(d.get('capability'), dict) else d.get('capability', '?')}"
            f" — {d.get('reason', '')}; next: {d.get('next_action', '')}",
            styles["escalation"],
        )
        out.append("\n")
    if body.get("grant_id"):
        field(out, "grant", str(body["grant_id"]), styles)
    return out
