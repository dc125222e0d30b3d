"""Watcher data as Rich ``Text``: event rows, an event's detail, diffs, tripwire items.

File names and file contents are untrusted: a name can hold escape sequences, bidi
controls or a newline, a diff is whatever an agent wrote into a hook. Names arrive
already made visible by the daemon (``display_path``: every control, format or
undecodable character as ``\\xNN``/``\\uNNNN``, a literal backslash doubled), and are
passed through :func:`console.contract.inert.inert` again all the same; the escapes are
then styled as ours. Diff lines are escaped one by one and coloured here by their first
character, never by markup or ANSI. Styles come in as a role → ``Style`` mapping
(the roles of :data:`console.tui.render.present.ROLES`), so themes reach everything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.style import Style
from rich.text import Text

from console.contract.inert import inert
from console.protocol.watch import AcceptedChange, WatchEntry, WatchStatus
from console.tui.model.timefmt import ago, clock_time
from console.tui.model.watch_model import ANSWERS, TripwireEntry, attribution, degraded_roots
from console.tui.render.present import DetailOptions, Rendered, Styles, agent_text, field
from console.tui.render.untrusted import lookalike_spans

# The escapes display_path and inert write; "\\\\" is a literal backslash of the name.
_ESCAPE = re.compile(r"\\(?:\\|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[entr0ab])")

MAX_DIFF_LINES = 200


def shown_path(event: WatchEntry) -> str:
    """What to show for an event's path: the daemon's display form, escaped again to be sure."""
    shown = inert(event.display_path)
    return shown.rstrip("/") + "/" if event.flood else shown


def raw_path_shown(path: str) -> str:
    """A raw file name (an outcome's changes) escaped like ``display_path``: backslashes
    doubled first, so an escape on screen always stands for a character of the name."""
    return inert(path.replace("\\", "\\\\"))


def path_text(display: str, styles: Styles, base: Style | str = "", *, limit: int | None = None) -> Text:
    """An escaped path with its escapes styled apart and look-alike letters marked."""
    cut = limit is not None and len(display) > limit
    if cut:
        assert limit is not None
        display = display[: max(0, limit - 1)]
    out = Text(style=base, no_wrap=True, end="")
    last = 0
    for m in _ESCAPE.finditer(display):
        out.append(display[last : m.start()])
        out.append(m.group(), styles["dim"] if m.group() == "\\\\" else styles["escape"])
        last = m.end()
    out.append(display[last:])
    for start, end in lookalike_spans(out.plain):
        out.stylize(styles["lookalike"], start, end)
    if cut:
        out.append("…", styles["marker"])
    return out


def who_text(event: WatchEntry, styles: Styles, *, limit: int = 60) -> Text:
    """Who was active in the workspace: sessions and operations, or ``unattributed``."""
    who = attribution(event)
    if not who:
        return Text("unattributed", styles["dim"], end="")
    out = Text(end="")
    for i, (kind, ident, label) in enumerate(who[:3]):
        if i:
            out.append(", ", styles["dim"])
        out.append("session " if kind == "session" else "op ", styles["label"])
        piece, _ = agent_text(ident, styles, limit=20)
        out.append_text(piece)
        if label:
            out.append(" ")
            piece, _ = agent_text(label, styles, styles["dim"], limit=max(8, limit - out.cell_len))
            out.append_text(piece)
    if len(who) > 3:
        out.append(f" +{len(who) - 3}", styles["marker"])
    return out


def flags(event: WatchEntry, degraded: set[str]) -> list[str]:
    """Short loud words for what makes an event unusual."""
    out = []
    if event.count > 1:
        out.append(f"{event.count:,} FILES")
    if event.quiet:
        out.append("quiet")
    if event.symlink_escape:
        out.append("SYMLINK-OUT")
    if event.path_flagged:
        out.append("ODD-NAME")
    if event.workspace_root in degraded:
        out.append("DEGRADED")
    if event.source in ("poll", "rescan"):
        out.append(f"via {event.source}")
    return out


def event_row(event: WatchEntry, styles: Styles, width: int, degraded: set[str]) -> Text:
    """One line of the watch panel: time, change, pattern, who, path, flags.

    Roles: ``time``, ``protected``, ``pattern``, ``dim``, ``label``, ``escape``,
    ``lookalike``, ``marker``, ``flag``, ``added``, ``removed``, ``modified``.
    """
    protected = event.protected
    loud = styles["label"] if event.quiet else styles["protected"]  # quiet: listed, not alarming
    row = Text(no_wrap=True, overflow="crop", end="")
    row.append(f" {clock_time(event.at, with_date=False)} ", styles["time"])
    kind = event.kind
    role = {"added": "added", "deleted": "removed"}.get(kind, "modified")
    row.append(f"{kind[:8]:<9}", loud if protected else styles[role])
    if protected:
        pattern, _ = agent_text(protected, styles, styles["pattern"], limit=16)
        row.append(" ", styles["pattern"])
        row.append_text(pattern)
        row.append(" ", styles["pattern"])
        row.append(" " * max(1, 19 - pattern.cell_len - 2))
    else:
        row.append(" " * 19)
    who = who_text(event, styles, limit=24)
    who.truncate(24, overflow="ellipsis", pad=True)
    row.append_text(who)
    row.append(" ")
    marks = flags(event, degraded)
    tail = ("  " + " ".join(marks)) if marks else ""
    room = max(8, width - row.cell_len - len(tail))
    row.append_text(path_text(shown_path(event), styles, loud if protected else "", limit=room))
    if tail:
        row.append(tail, styles["flag"])
    return row


# ---------------------------------------------------------------------- detail and diff


def diff_text(
    diff: str, styles: Styles, *, max_lines: int = MAX_DIFF_LINES, expanded: bool = False
) -> tuple[Text, bool]:
    """A unified diff of untrusted content: each line escaped, coloured by its first character."""
    out = Text(end="")
    lines = diff.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    shown = lines if expanded else lines[:max_lines]
    for line in shown:
        if line.startswith(("+++", "---")):
            role = "dim"
        elif line.startswith("+"):
            role = "added"
        elif line.startswith("-"):
            role = "removed"
        elif line.startswith("@@"):
            role = "operator"
        else:
            role = ""
        out.append("  ")
        piece, _ = agent_text(line, styles, styles[role] if role else "")
        out.append_text(piece)
        out.append("\n")
    truncated = len(shown) < len(lines)
    if truncated:
        out.append(f"  ⟨{len(lines) - len(shown)} more diff lines — expand to see all⟩\n", styles["marker"])
    return out, truncated


# Not loaded yet / no baseline: the two states of a diff that is not text.
DIFF_NOT_LOADED = "not-loaded"
DIFF_NONE = "none"


def event_detail(
    event: WatchEntry | None,
    styles: Styles,
    *,
    diff: str | None = DIFF_NOT_LOADED,
    accepted: AcceptedChange | None = None,
    watch_status: WatchStatus | None = None,
    now: float,
) -> Text:
    """Everything about one event, and its diff once asked for (``diff``: text, or a state)."""
    out = Text(end="")
    if event is None:
        out.append("No event selected. Changes appear above as they happen.", styles["dim"])
        return out
    protected = event.protected
    out.append_text(path_text(shown_path(event), styles, styles["program"]))
    if protected:
        out.append("  ")
        out.append(" PROTECTED ", styles["badge-protected"])
    degraded = {d.root for d in degraded_roots(watch_status)}
    marks = flags(event, degraded)
    if marks:
        out.append("  " + " ".join(marks), styles["warning"])
    out.append("\n")
    if event.path_flagged:
        out.append(
            "⚠ the file name holds control, invisible or undecodable characters — shown escaped\n",
            styles["warning"],
        )
    if event.symlink_escape:
        out.append("⚠ a symbolic link that points out of the workspace\n", styles["warning"])
    what = f"{event.kind} {'directory' if event.is_dir else 'file'}"
    field(out, "change", Text(what, styles["escalation" if protected else "label"]), styles)
    if protected:
        piece, _ = agent_text(protected, styles, styles["escalation"], limit=200)
        field(out, "pattern", piece, styles)
    at = event.changed_at or event.at
    field(out, "when", f"{clock_time(at)} ({ago(now - at)}), seen by {event.source or '?'}", styles)
    field(out, "workspace", path_text(inert(event.workspace_root), styles), styles)
    size, mode = event.size, event.mode
    if size is not None or mode is not None:
        bits = []
        if size is not None:
            bits.append(f"{size} bytes")
        if mode is not None:
            bits.append(f"mode {mode & 0o7777:o}")
        field(out, "now", ", ".join(bits), styles)
    who = attribution(event)
    if not who:
        field(
            out, "who", Text("unattributed: no session or operation was active there", styles["dim"]), styles
        )
    for i, (kind, ident, label) in enumerate(who):
        piece = Text(f"{kind} ", styles["label"], end="")
        ident_text, _ = agent_text(ident, styles, limit=64)
        piece.append_text(ident_text)
        if label:
            piece.append("  ")
            label_text, _ = agent_text(label, styles, styles["dim"], limit=200)
            piece.append_text(label_text)
        field(out, "who" if i == 0 else "", piece, styles)
    out.append("\nDiff", styles["heading"])
    if diff == DIFF_NOT_LOADED:
        out.append("  press enter or d to load it\n", styles["dim"])
    elif diff == DIFF_NONE:
        out.append(
            "  none kept: only small protected text files have a baseline to compare with\n", styles["dim"]
        )
    elif diff == "" and accepted is not None and accepted.diff:
        out.append(
            f"  unchanged since you answered tripwire {inert(accepted.item)} "
            f"({inert(accepted.state)}), which made this the baseline; the change you answered:\n",
            styles["warning"],
        )
        body, _ = diff_text(accepted.diff, styles, expanded=True)
        out.append_text(body)
    elif diff == "":
        out.append("  the content is the same as its baseline\n", styles["dim"])
    else:
        out.append("  against the content when the workspace was first watched\n", styles["dim"])
        body, _ = diff_text(str(diff), styles, expanded=True)
        out.append_text(body)
    return out


# ---------------------------------------------------------------------- tripwire items


def render_tripwire(item: TripwireEntry, styles: Styles, options: DetailOptions, now: float) -> Rendered:
    """A paused session's tripwire item, as the queue's detail shows it."""
    trip = item.tripwire
    out = Text(end="")
    out.append(" TRIPWIRE ", styles["badge-protected"])
    out.append("  ")
    summary, _ = agent_text(trip.summary, styles, styles["escalation"], limit=300)
    out.append_text(summary)
    out.append("\n")
    state = trip.state
    if state == "paused":
        out.append(f"The session is stopped ({stop_words(trip.stop_mode)}). ", styles["warning"])
        out.append("r resume (keeps the new content) · K kill (reverts) · p keep paused", styles["label"])
    else:
        out.append(f"state: {state}", styles["dim"])
    if trip.thawed:
        times = "once" if trip.thawed == 1 else f"{trip.thawed} times"
        out.append(
            f"\nSomeone other than the operator resumed it ({times}); it was stopped again.", styles["error"]
        )
    out.append("\n\n")
    if trip.session:
        who = _ident(trip.session, trip.session_label, styles)
        if trip.suspect:
            who.append("  stopped as a suspect: the writer could not be named", styles["warning"])
        field(out, "session", who, styles)
    if trip.operation:
        field(out, "operation", inert(trip.operation), styles)
    field(out, "writer", inert(trip.basis or "?"), styles)
    field(out, "path", path_text(inert(trip.display_path), styles, styles["program"]), styles)
    pattern, _ = agent_text(trip.pattern, styles, styles["escalation"], limit=200)
    field(out, "pattern", pattern, styles)
    field(out, "change", inert(trip.change or "?"), styles)
    field(out, "workspace", path_text(inert(trip.workspace_root), styles), styles)
    at = trip.at
    field(out, "when", f"{clock_time(at)} ({ago(now - (at or now))})", styles)
    field(out, "item", inert(item.request_id), styles)
    if trip.reverted:
        field(out, "reverted", inert(trip.reverted), styles)
    elif trip.revertable:
        field(out, "revert", Text("the previous content is kept: kill puts it back", styles["dim"]), styles)
    else:
        field(out, "revert", Text("not possible: the previous content was not kept", styles["dim"]), styles)
    out.append("\nDiff", styles["heading"])
    diff = trip.diff
    truncated = False
    if diff is None:
        out.append("  none kept (not a small text file)\n", styles["dim"])
    elif diff == "":
        out.append("  the content is the same as its baseline\n", styles["dim"])
    else:
        out.append("  what the session wrote, against the baseline\n", styles["dim"])
        body, truncated = diff_text(str(diff), styles, max_lines=options.max_lines, expanded=options.expanded)
        out.append_text(body)
    if truncated:
        head = Text(end="")
        head.append_text(out)
        head.append(
            "✂ the diff is cut short — press x to expand; resume waits until you do\n", styles["marker"]
        )
        out = head
    return Rendered(out, truncated)


def stop_words(mode: str) -> str:
    """How a paused session is held, said as it is."""
    if mode == "process walk":
        return "SIGSTOP to each of its processes: process walk"
    return mode or "stopped"


def _ident(ident: str, label: str, styles: Styles) -> Text:
    out, _ = agent_text(ident or "-", styles, limit=64)
    if label:
        out.append("  ")
        piece, _ = agent_text(label, styles, styles["dim"], limit=200)
        out.append_text(piece)
    return out


def tripwire_row(item: TripwireEntry, styles: Styles, room: int) -> Text:
    """The queue row of a tripwire item: a loud label and the summary."""
    out = Text(end="")
    out.append(" TRIPWIRE ", styles["badge-protected"])
    out.append(" ")
    state = item.tripwire.state
    if state != "paused":
        out.append(f"[{state}] ", styles["dim"])
    summary, _ = agent_text(item.command, styles, limit=max(8, room - out.cell_len))
    out.append_text(summary)
    return out


def answered(action: str, item: TripwireEntry) -> str:
    """The status line after an answer; inert."""
    trip = item.tripwire
    return f"{ANSWERS.get(action, action)}: session {inert(trip.session)[:40]}"


# ---------------------------------------------------------------------- a pending request's session


def render_session_changes(
    session_id: str, events: Sequence[WatchEntry] | None, styles: Styles, *, limit: int = 40
) -> Text:
    """Changes made while the request's agent session ran, protected ones first."""
    out = Text(end="")
    out.append("\nChanges while this agent session ran", styles["heading"])
    if not session_id:
        out.append("  the request names no agent session\n", styles["dim"])
        return out
    if events is None:
        out.append("  looking…\n", styles["dim"])
        return out
    protected = [e for e in events if e.protected]
    ordinary = [e for e in events if not e.protected]
    out.append(
        f"  {_paths(protected)} protected, {_paths(ordinary)} other (by its terminal sessions)\n"
        if events
        else "  none seen\n",
        styles["dim"],
    )
    for e in (protected + ordinary)[:limit]:
        is_protected = bool(e.protected)
        out.append(f"  {clock_time(e.at, with_date=False)} ", styles["dim"])
        out.append(f"{e.kind:<9}", styles["escalation" if is_protected else "label"])
        out.append_text(path_text(shown_path(e), styles, styles["escalation"] if is_protected else ""))
        if is_protected:
            out.append("  ")
            pattern, _ = agent_text(str(e.protected), styles, styles["badge-protected"], limit=40)
            out.append_text(pattern)
        out.append("\n")
    if len(events) > limit:
        out.append(f"  ⟨{len(events) - limit} more in the watch panel⟩\n", styles["marker"])
    return out


def _paths(events: Sequence[WatchEntry]) -> int:
    """How many files the events changed: a file created then written is one."""
    return len({(e.workspace_root, e.path) for e in events})


def changes_warning(events: Sequence[WatchEntry] | None, styles: Styles) -> Text | None:
    """One line for the top of the detail when the session touched protected paths."""
    count = _paths([e for e in events or () if e.protected])
    if not count:
        return None
    out = Text(end="")
    out.append(
        f"⚠ this agent session changed {count} protected path{'s' if count != 1 else ''} while it ran"
        " — listed at the end\n",
        styles["escalation"],
    )
    return out
