"""Turning daemon data into Rich ``Text`` for the screen, with agent text kept inert.

Every agent-supplied string goes through :func:`agent_text`: escaped by
:func:`console.contract.inert.inert`, wrapped in a ``Text`` built directly (never from
markup, never ``Text.from_ansi``), with the escapes and look-alike letters styled so a
literal backslash in the agent's text cannot pass for one of our escapes. Styles come in
as a role → ``rich.style.Style`` mapping, which widgets fill from their component
classes, so themes reach everything drawn here.
"""

from __future__ import annotations

import posixpath
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET
from rich.style import Style
from rich.text import Text

from console.contract.inert import Finding, command_findings, findings, inert, lookalike_notes
from console.protocol.pending import EMPTY_EVALUATION, EMPTY_OPERATION, Evaluation, OperationWire, PendingItem
from console.protocol.records import HistoryRow
from console.tui.model.argdiff import argv_diff, closest, split_command
from console.tui.model.badges import Badge
from console.tui.model.shellsplit import PartKind, chain_for, shell_script
from console.tui.model.timefmt import ago, clock_time
from console.tui.model.words import request_words
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
    text: str, styles: Styles, base: Style | str = "", *, limit: int | None = None, command: bool = False
) -> tuple[Text, bool]:
    """One line of agent text, inert, with escapes and look-alikes marked; and whether it was cut.

    ``command``: the text names programs and files, so a look-alike letter is written as
    its code point (``\\u0455``) the way an escape is, and a word made only of look-alikes
    (``ѕеt``) counts too: a colour alone does not stop ``ѕudo`` from reading as ``sudo``.
    """
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
    flagged = {a for a, _ in lookalike_spans(source, whole_words=True)} if command else set()
    longer = sum(len(f"\\u{ord(source[a]):04x}") - 1 for a in flagged)
    if flagged and limit is not None:
        # The code points lengthen the line: cut it again, counting them.
        cut = cut or len(shown) + longer > limit
        budget = max(0, limit - 1) if cut else limit
    else:
        budget = len(shown) + longer - (1 if cut else 0)
    # Rebuild piece by piece so each escape can be styled as ours.
    used = 0
    run: list[str] = []
    for i, ch in enumerate(source):
        if used >= budget:
            break
        if i in flagged:
            if run:
                out.append("".join(run))
                run.clear()
            code = ord(ch)
            piece = (f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")[: budget - used]
            out.append(piece, styles["lookalike"])
            used += len(piece)
            continue
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
    if not flagged:
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


def command_cell(command: str, styles: Styles, limit: int) -> Text:
    """A request's command line on one row of ``limit`` cells.

    When it does not fit, the directory of its program gives way first, marked
    (``…/python3 -m pip install -r requirements.txt``): a request is recognised by its
    program and arguments, and a toolchain's path (``/root/.pyenv/shims/``) would
    otherwise take the row. The whole path is in the request's detail. Only a line that
    is exactly an absolute program and its arguments, shell-quoted, is shortened so.
    """
    whole, cut = agent_text(command, styles, limit=limit, command=True)
    if not cut:
        return whole
    try:
        argv = shlex.split(command)
    except ValueError:
        return whole
    if not argv or not argv[0].startswith("/") or shlex.join(argv) != command:
        return whole
    directory, program = posixpath.split(argv[0])
    if directory == "/" or not program:
        return whole
    out = Text(end="")
    out.append("…/", styles["marker"])
    rest, _ = agent_text(shlex.join([program, *argv[1:]]), styles, limit=max(1, limit - 2), command=True)
    out.append_text(rest)
    return out


def quoted_argv(argv: Sequence[str], styles: Styles, limit: int) -> tuple[Text, bool]:
    """The argv shell-quoted, the program emphasised; cut arguments are marked."""
    out = Text(end="")
    truncated = False
    for i, arg in enumerate(argv):
        if i:
            out.append(" ")
        piece, cut = agent_text(
            shlex.quote(arg) if arg else "''",
            styles,
            styles["program"] if i == 0 else "",
            limit=limit,
            command=True,
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


def all_agent_strings(item: PendingItem) -> list[str]:
    op = item.operation
    strings = [op.executable, *op.args, op.cwd, op.justification, op.session_id, op.tool]
    for k, v in op.env.items():
        strings.extend((k, v))
    return strings


def text_findings(item: PendingItem) -> set[Finding]:
    """What the banner warns about. Newlines and tabs are how multi-line text is written
    (a script, a justification): shown as lines and ``\\t``, never a reason to alarm. The
    argv is a command, where a word made only of look-alike letters is flagged too."""
    found: set[Finding] = set()
    argv = item.operation.argv
    for s in all_agent_strings(item):
        found |= findings(s.replace("\n", " ").replace("\t", " "))
    for s in argv:
        found |= command_findings(s.replace("\n", " ").replace("\t", " "))
    return found


class _Detail:
    """A request's detail as it is written: the text so far, the styles, and whether any
    agent text was cut (then the approval keys wait until the operator expands it)."""

    def __init__(self, styles: Styles, options: DetailOptions) -> None:
        self.out = Text(end="")
        self.styles = styles
        self.options = options
        self.limit = 10**9 if options.expanded else options.max_chars
        self.truncated = False

    def agent(
        self, text: str, base: Style | str = "", *, limit: int | None = None, command: bool = False
    ) -> Text:
        """Agent text, inert, cut at ``limit`` (by default the detail's own)."""
        piece, cut = agent_text(
            text, self.styles, base, limit=self.limit if limit is None else limit, command=command
        )
        self.truncated |= cut
        return piece

    def put(
        self, text: str, base: Style | str = "", *, limit: int | None = None, command: bool = False
    ) -> None:
        self.out.append_text(self.agent(text, base, limit=limit, command=command))

    def block(self, text: str) -> Shown:
        o = self.options
        shown = block(text, max_chars=o.max_chars, max_lines=o.max_lines, expanded=o.expanded)
        self.truncated |= shown.truncated
        return shown

    def section(self, title: str, extra: str = "") -> None:
        _section(self.out, title, self.styles, extra)

    def field(self, label: str, value: Text | str) -> None:
        field(self.out, label, value, self.styles)


_OPERATORS = {
    "\n": "⏎ next line, whatever the result",
    "&": "& (background)",
    ";": "; next, whatever the result",
    "|": "| pipe into",
    "&&": "&& if it succeeds",
    "||": "|| if it fails",
}


def render_request(
    item: PendingItem,
    badges: Sequence[Badge],
    styles: Styles,
    options: DetailOptions,
    previous: Sequence[HistoryRow] | None = None,
    now: float | None = None,
) -> Rendered:
    """The detail of one pending request, top to bottom as the operator reads it."""
    now = time.time() if now is None else now
    op, ev = item.operation, item.evaluation
    argv = op.argv
    script = shell_script(argv)
    chain = chain_for(*script) if script is not None else None

    words = request_words(item)
    head = _Detail(styles, options)
    _head(head, item, badges, argv, chain, words)
    # The banner about cut text goes in the head, once the body says whether anything was cut.
    d = _Detail(styles, options)
    d.truncated = head.truncated
    _command(d, argv, words)
    if script is not None and chain is not None:
        _shell(d, script[0], script[1], chain)
    _content(d, item)
    _proposed(d, item)
    _escalations(d, ev)
    _justification(d, op)
    if options.with_previous:
        d.section("Previous decisions", "of the same command")
        # The history keeps the absolute directory; the operation, one relative to its root.
        root, cwd = op.workspace_root, op.cwd
        where = (root, root if cwd == "." else posixpath.join(root, cwd)) if root else ("", "")
        d.out.append_text(render_previous(argv, previous, styles, now, where=where))
    _context(d, item, op, now)
    _ceiling(d, ev)
    _protected(d, ev, op)
    out = head.out
    if d.truncated:
        out.append("\n")
        out.append(
            "✂ parts of this request are cut short — press x to expand; approval keys wait until you do",
            styles["marker"],
        )
    out.append_text(d.out)
    return Rendered(out, d.truncated)


def _head(
    d: _Detail,
    item: PendingItem,
    badges: Sequence[Badge],
    argv: Sequence[str],
    chain: Any,
    words: str | None = None,
) -> None:
    """Whose detail this is, the program (or the tool's words) and its badges, and the
    warnings about its text."""
    out, styles = d.out, d.styles
    if d.options.with_target:
        # Whose detail this is: the keys act on this request, not on the row under the cursor.
        out.append(item.request_id, styles["label"])
        out.append("  approve / deny act on this request\n", styles["dim"])
    if words:
        d.put(words, styles["program"], limit=120, command=True)
    else:
        d.put(argv[0].rsplit("/", 1)[-1], styles["program"], limit=80, command=True)
    if badges:
        out.append("  ")
        out.append_text(badge_text(badges, styles))
    else:
        out.append("  within the sandbox", styles["within"])
    agent = item.agent
    if agent is not UNSET:
        out.append("\nasked by ", styles["dim"])
        d.put(agent.shown, limit=80)
        if agent.anonymous:
            out.append(
                " — one call that reached no agent process: a session grant would hold for nothing",
                styles["dim"],
            )
    found = text_findings(item)
    if found:
        out.append("\n")
        out.append(
            "⚠ the agent's text contains " + ", ".join(sorted(f.value for f in found)), styles["warning"]
        )
        out.append(" — shown escaped and highlighted", styles["dim"])
    if chain is not None and chain.uncertain:
        out.append("\n")
        out.append(
            "⚠ the command split below may be incomplete: " + "; ".join(chain.uncertain), styles["warning"]
        )
        out.append(" — read the raw script", styles["warning"])


def _command(d: _Detail, argv: Sequence[str], words: str | None = None) -> None:
    """The argv as it will run; for a tool that is not a command, its words first and the
    argv it was submitted as (what the fingerprint binds) below them."""
    o = d.options
    d.section("Request" if words else "Command", "as the tool says it" if words else "")
    if words:
        d.out.append("  ")
        d.put(words, limit=10**9 if o.expanded else o.max_chars, command=True)
        d.out.append("\n")
        d.out.append("  submitted as  ", d.styles["dim"])
    else:
        d.out.append("  ")
    cmd, cut = quoted_argv(argv, d.styles, 10**9 if o.expanded else o.max_arg_chars)
    d.truncated |= cut
    d.out.append_text(cmd)
    d.out.append("\n")
    notes = lookalike_notes(" ".join(argv))
    if notes:
        d.out.append("  ⚠ look-alike letters, shown as their code points: ", d.styles["warning"])
        d.out.append("; ".join(inert(n) for n in notes[:8]), d.styles["warning"])
        d.out.append("\n")


def _shell(d: _Detail, shell: str, body: str, chain: Any) -> None:
    """A ``sh -c`` script: the raw script when the split is uncertain, and the chain of
    commands, operators and redirects as the shell will run them."""
    out, styles = d.out, d.styles
    if chain.uncertain:
        # The split may not be what runs: the script itself, every line, is what to read.
        # Cut, it counts as truncated, so the approval keys wait until it is expanded.
        raw = d.block(body)
        d.section(f"Raw script ({shell} -c)", "what runs, exactly as sent")
        out.append_text(agent_block(raw, styles))
        out.append("\n")
    if not (chain.is_compound or chain.uncertain):
        return
    d.section(
        f"Shell chain ({shell} -c)",
        f"{len(chain.commands)} command{'s' if len(chain.commands) != 1 else ''}"
        + ("" if not chain.uncertain else " as split here — may be incomplete, see the raw script"),
    )
    number = 0
    for part in chain.parts:
        pad = "  " + "    " * part.depth
        if part.kind is PartKind.COMMAND:
            number += 1
            out.append(f"{pad}{number:>2} ", styles["label"])
            d.put(part.text, command=True)
        elif part.kind is PartKind.OPERATOR:
            out.append(f"{pad}   {_OPERATORS.get(part.text, part.text)}", styles["operator"])
        elif part.kind is PartKind.REDIRECT:
            out.append(f"{pad}   redirect ", styles["redirect"])
            d.put(part.text, styles["redirect"])
        elif part.kind is PartKind.SUBSTITUTION:
            out.append(f"{pad}↳ runs first, output substituted: {part.text}", styles["substitution"])
        else:
            out.append(f"{pad}   comment ", styles["dim"])
            d.put(part.text, styles["dim"])
        out.append("\n")
    if chain.missed:
        out.append("  ⚠ a shell parser also reads these commands, missing above:", styles["warning"])
        out.append("\n")
        for missed in chain.missed:
            out.append("     ")
            d.put(missed, styles["warning"])
            out.append("\n")


def _content(d: _Detail, item: PendingItem) -> None:
    """The files the fingerprint binds, what it could not bind, and whether this request
    replaces one whose content changed while it waited."""
    out, styles = d.out, d.styles
    content, unbound, supersedes = item.content, item.unbound, item.supersedes
    if supersedes:
        out.append("\n")
        piece = d.agent(supersedes, styles["warning"], limit=80)
        out.append("⚠ changed since shown; decide again — this replaces ", styles["warning"])
        out.append_text(piece)
        out.append(", whose content changed before it could run\n", styles["warning"])
    if not content and not unbound:
        return
    d.section("Content", "the bytes an approval is bound to")
    for path, digest in content:
        out.append("  ")
        d.put(path)
        out.append(
            f"  {digest[:12]}" if digest else "  (absent: creating it changes the fingerprint)",
            styles["dim"],
        )
        out.append("\n")
    for reason in unbound:
        out.append("  ⚠ ", styles["warning"])
        d.put(reason, styles["warning"])
        out.append("\n")
    if unbound:
        out.append("    a standing grant is refused for it: approve once\n", styles["dim"])


def _proposed(d: _Detail, item: PendingItem) -> None:
    """What a file-writing tool call will write, as the daemon's diff against the file
    (console/daemon/proposed.py)."""
    change = item.proposed
    if change is None:
        return
    out, styles = d.out, d.styles
    old, new = change.old_bytes, change.new_bytes
    what = "a new file" if change.new_file else f"{byte_size(old)} → {byte_size(new)}"
    d.section("Proposed change", f"{what}; the grant binds exactly this content")
    out.append("  ")
    d.put(change.path)
    out.append("\n")
    if change.note:
        out.append("  ⚠ " + change.note + "\n", styles["warning"])
    diff = change.diff
    if not diff:
        return
    for line in d.block(diff).lines:
        style: Style | str = ""
        if line.text.startswith(("+", "-")) and not line.text.startswith(("+++", "---")):
            style = styles["added"] if line.text.startswith("+") else styles["removed"]
        elif line.text.startswith("@@"):
            style = styles["dim"]
        out.append("  ")
        out.append_text(line_text(line, styles, style))
        out.append("\n")


def _escalations(d: _Detail, ev: Evaluation) -> None:
    """What approving grants beyond the sandbox, and whether it lifts the sandbox whole."""
    out, styles = d.out, d.styles
    escalations = ev.escalations
    d.section(
        f"Escalations ({len(escalations)})" if escalations else "No escalations",
        "beyond the sandbox — what approving grants"
        if escalations
        else "everything stays within the ceiling",
    )
    for e in escalations:
        out.append("  ✖ ", styles["escalation"])
        d.put(e.label, styles["escalation"])
        out.append(" — " + e.reason, styles["escalation"])
        out.append("\n")
    lifted = ev.lifted
    if lifted:
        d.section("Approving lifts the whole sandbox", "it runs outside, with every power of your account")
        for f in lifted:
            out.append("  ✖ ", styles["escalation"])
            out.append(f.reason, styles["escalation"])
            out.append("\n")


def _justification(d: _Detail, op: OperationWire) -> None:
    justification = op.justification
    d.section("Justification", "the agent's words; not part of any decision")
    if justification:
        d.out.append_text(agent_block(d.block(justification), d.styles))
        d.out.append("\n")
    else:
        d.out.append("  (none given)\n", d.styles["dim"])


def _context(d: _Detail, item: PendingItem, op: OperationWire, now: float) -> None:
    """Where and how it runs, and which request it is."""
    styles = d.styles
    d.section("Context")
    d.field("cwd", d.agent(op.cwd))
    d.field("workspace", d.agent(op.workspace_root))
    env = op.env
    if env:
        for i, (name, value) in enumerate(sorted(env.items())):
            d.field("env" if i == 0 else "", d.agent(f"{name}={value}"))
    else:
        d.field("env", Text("no overrides", styles["dim"]))
    stdin_b64 = op.stdin
    d.field("stdin", f"{len(stdin_b64) * 3 // 4 - stdin_b64.count('=')} bytes" if stdin_b64 else "none")
    d.field("timeout", f"{op.timeout_ms / 1000:g} s")
    d.field(
        "output",
        f"keep {byte_size(op.output.capture_bytes)}, stop at {byte_size(op.output.max_bytes)}",
    )
    for i, path in enumerate(op.write_dirs):
        d.field("write dir" if i == 0 else "", d.agent(path))
    d.field("access", f"workspace {op.workspace_access or '?'}, network {op.network or '?'}")
    d.field("origin", f"{op.origin or '?'}, mode {op.mode or '?'}, kind {op.kind or '?'}")
    d.field("tool", d.agent(op.tool))
    if item.agent is not UNSET:
        d.field("agent", d.agent(item.agent.id))
    d.field("session", d.agent(item.session_id or "-"))
    deadline = item.deadline
    left = f", denied automatically in {max(0, int(deadline - now))} s" if deadline else ""
    d.field("request", f"{item.request_id or '?'} from pid {item.peer_pid or '?'}{left}")
    fp = item.fingerprint
    d.field("fingerprint", fp if d.options.full_fingerprint or d.options.expanded else f"{fp[:16]}…")


def _ceiling(d: _Detail, ev: Evaluation) -> None:
    """What stays within the sandbox's ceiling, and what approving does not lift."""
    out, styles = d.out, d.styles
    if ev.within:
        d.section("Within the ceiling")
        for w in ev.within:
            out.append("  ✔ ", styles["within"])
            d.put(w.label)
            out.append(" — " + w.reason, styles["dim"])
            out.append("\n")
    if ev.forbidden:
        d.section("Still forbidden by the sandbox", "approval does not lift these")
        for f in ev.forbidden:
            out.append("  ⊘ ", styles["forbidden"])
            out.append(f.kind)
            out.append(" — " + f.reason, styles["dim"])
            out.append("\n")


def _protected(d: _Detail, ev: Evaluation, op: OperationWire) -> None:
    """Which protected names the run can touch: the ``protected_metadata`` scopes it asks
    for (approving grants them), and nothing else; what it creates there without them is
    removed when it ends (console/sandbox/guards.py)."""
    if any(line.kind == "unrestricted" for line in ev.requested):
        return  # unconfined: the lifted list says what that means
    if op.workspace_access != "write" and not op.write_dirs:
        return
    out, styles = d.out, d.styles
    scopes = [c.scope for c in ev.requested if c.kind == "protected_metadata" and c.scope]
    d.section("Protected paths", "git hooks and config, .env*, CI, editor and agent settings…")
    if scopes:
        for i, scope in enumerate(scopes):
            d.field("can change" if i == 0 else "", d.agent(str(scope)))
    else:
        d.field("can change", Text("none", styles["within"]))
    out.append(
        "  every other protected path stays read-only; a protected name the run creates (.env, .envrc,\n"
        "  CLAUDE.md, .github/workflows/…, a git repository) is removed when it ends: refused: protected\n",
        styles["dim"],
    )


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


def decided_by(previous: HistoryRow) -> str:
    """Who settled a previous decision, in words: only the operator's are "you"."""
    allowed = previous.verdict == "allow"
    return {
        "operator": "you approved" if allowed else "you denied",
        "policy": "the policy allowed" if allowed else "the policy denied",
        "grant": "a grant allowed" if allowed else "a deny rule denied",
        "timeout": "nobody answered (timed out)",
    }.get(previous.source, ("allowed" if allowed else "denied") + f" ({previous.source or '?'})")


def _elsewhere(previous: HistoryRow, where: tuple[str, str]) -> tuple[str, str]:
    """(what differs, the path) when a previous decision was made in another workspace or
    directory than this request's: the same words then did not do the same thing, and a
    request in a workspace never trusted must not read as routine. ``("", "")`` when the
    record or the request does not say."""
    root, cwd = where
    then_root, then_cwd = previous.workspace_root, previous.cwd
    if root and then_root and then_root != root:
        return "in another workspace", then_root
    if cwd and then_cwd and then_cwd != cwd:
        return "in another directory", then_cwd
    return "", ""


def render_previous(
    argv: Sequence[str],
    previous: Sequence[HistoryRow] | None,
    styles: Styles,
    now: float,
    *,
    where: tuple[str, str] = ("", ""),
) -> Text:
    """``where``: this request's workspace root and cwd, to say when the closest previous
    decision was made elsewhere."""
    out = Text(end="")
    if previous is None:
        out.append("  looking…\n", styles["dim"])
        return out
    if not previous:
        out.append("  none: the first time this program is asked for\n", styles["dim"])
        return out
    argvs = [split_command(p.command) or [] for p in previous]
    mine = command_head(argv)
    alike = [i for i, other in enumerate(argvs) if command_head(other) == mine]
    # Decisions made here first, so that of two as close, the one made here is compared.
    alike.sort(key=lambda i: _elsewhere(previous[i], where)[0] != "")
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
        when = ago(now - p.at)
        elsewhere, path = _elsewhere(p, where)
        if not changes:
            out.append("  the same command", styles["allow" if p.verdict == "allow" else "deny"])
        else:
            out.append(f"  differs from what {verb} {when}", styles["label"])
        if elsewhere:
            out.append(f" {elsewhere} (", styles["escalation"])
            out.append_text(agent_text(path, styles, styles["escalation"], limit=120)[0])
            out.append(")", styles["escalation"])
        if not changes:
            out.append(f": {verb} {when}", styles["allow" if p.verdict == "allow" else "deny"])
        else:
            out.append(": ", styles["label"])
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
        verdict = p.verdict
        out.append(f"  {verdict:<5} ", styles["allow" if verdict == "allow" else "deny"])
        out.append(f"{p.source}/{p.scope or '-':<8} {clock_time(p.at)}  ", styles["dim"])
        piece, _ = agent_text(p.command, styles, limit=100)
        out.append_text(piece)
        out.append("\n")
    return out


# ---------------------------------------------------------------------- one history entry


T = TypeVar("T")


def item_from_request_record(record: HistoryRow, decision: HistoryRow | None = None) -> PendingItem:
    """A request event from the history as a pending item, for :func:`render_request`.

    The evaluation is the decision's: the request event holds the operation only, and a
    history entry without it would read "within the sandbox, no escalations" for a
    request that escalated. What the record lacks is empty (no deadline, no content
    binding); a part it holds in a shape this console cannot read (a history written by
    another version) is left out rather than guessed at, and so is said as empty."""
    body = record.request()
    evaluation = body.evaluation or ((decision.decision().capability_diff if decision else None) or {})
    return PendingItem(
        request_id=record.request_id,
        fingerprint=record.fingerprint,
        submitted_at=record.at,
        deadline=0.0,
        peer_pid=record.peer_pid or 0,
        agent_id="",
        session_id=record.session_id,
        command=record.command,
        operation=_recorded(OperationWire, EMPTY_OPERATION, body.operation),
        content=[],
        unbound=[],
        supersedes="",
        proposed=None,
        evaluation=_recorded(Evaluation, EMPTY_EVALUATION, evaluation),
    )


def _recorded(kind: type[T], empty: Mapping[str, Any], found: Mapping[str, Any]) -> T:
    try:
        return msgspec.convert({**empty, **found}, kind)
    except msgspec.ValidationError:
        return msgspec.convert(dict(empty), kind)


def render_decision(record: HistoryRow | None, styles: Styles, limit: int) -> Text:
    out = Text(end="")
    out.append("Decision\n", styles["heading"])
    if record is None:
        out.append("  none recorded (still pending, or the daemon stopped first)\n", styles["dim"])
        return out
    verdict = record.verdict
    out.append(f"  {verdict.upper():<6}", styles["allow" if verdict == "allow" else "deny"])
    out.append(f" by {record.source}", styles["label"])
    if record.scope:
        out.append(f", scope {record.scope}", styles["label"])
    out.append(f"  at {clock_time(record.at)}", styles["dim"])
    if record.latency_ms is not None:
        out.append(f"  after {record.latency_ms / 1000:.1f} s", styles["dim"])
    out.append("\n")
    for label, said in (("reason", record.reason), ("note", record.note)):
        if said:
            piece, _ = agent_text(said, styles, limit=limit)
            field(out, label, piece, styles)
    body = record.decision()
    for d in body.denials:
        out.append("  ✖ ", styles["escalation"])
        out.append(f"{d.capability.kind} — {d.reason}; next: {d.next_action}", styles["escalation"])
        out.append("\n")
    if body.grant_id:
        if record.scope == "rule":
            field(out, "rule", f"allowed by rule {body.grant_id} (agent-console grants lists it)", styles)
        else:
            field(out, "grant", body.grant_id, styles)
    return out
