"""How an executed operation ended, and the watcher's history rows, as Rich ``Text``.

An ``outcome`` record's body is the daemon's exec result (docs/protocol.md,
``operation.exec``): status, exit code or signal, duration, enforcement, the retained
head and tail of each stream, the sandbox's denials and the workspace changes. Output
is the least trusted text there is — whatever the command printed — so it goes through
:func:`console.tui.render.untrusted.block` like agent text. ``file_event``, ``tripwire`` and
``tripwire_resolved`` records are made readable for the history list and for opening one.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from console.contract.inert import inert
from console.protocol.history import TRIPWIRE_KINDS
from console.protocol.records import (
    DenialRecord,
    ExecRecord,
    FileEventBody,
    HistoryRow,
    SessionRun,
    StreamRecord,
)
from console.tui.model.timefmt import clock_time
from console.tui.render.present import Styles, agent_block, agent_text, byte_size, field
from console.tui.render.untrusted import block
from console.tui.render.watch_text import diff_text, path_text, raw_path_shown

STREAM_LINES = 30
RECORD_KINDS = ("file_event", *TRIPWIRE_KINDS, "outcome")


def render_denials(denials: Sequence[DenialRecord], styles: Styles, limit: int) -> Text:
    out = Text(end="")
    for d in denials:
        out.append("  ✖ ", styles["escalation"])
        label, _ = agent_text(d.capability.label, styles, styles["escalation"], limit=200)
        out.append_text(label)
        out.append(" — ", styles["escalation"])
        reason, _ = agent_text(d.reason, styles, limit=limit)
        out.append_text(reason)
        out.append("\n")
        recoverable = "recoverable" if d.recoverable else "not recoverable"
        out.append(
            f"      {d.source or 'unknown source'}, {recoverable}; next: {d.next_action or '?'}\n",
            styles["dim"],
        )
    return out


def _stream(out: Text, name: str, stream: StreamRecord, styles: Styles, limit: int) -> None:
    total, head, tail = stream.total_bytes, stream.head, stream.tail
    out.append(f"  {name:<12}", styles["label"])
    if not total:
        out.append("empty\n", styles["dim"])
        return
    truncated = stream.truncated
    out.append(byte_size(total) + (" — head and tail kept" if truncated else ""), styles["dim"])
    out.append("\n")
    if head:
        shown = block(head, max_chars=limit, max_lines=STREAM_LINES)
        out.append_text(agent_block(shown, styles, "    "))
        out.append("\n")
    if truncated:
        dropped = total - len(head.encode()) - len(tail.encode())
        out.append(f"    ⟨{byte_size(max(0, dropped))} in between not kept⟩\n", styles["marker"])
        if tail:
            lines = tail.split("\n")
            shown = block("\n".join(lines[-STREAM_LINES:]), max_chars=limit, max_lines=STREAM_LINES)
            out.append_text(agent_block(shown, styles, "    "))
            out.append("\n")


def render_outcome(record: HistoryRow | None, styles: Styles, limit: int) -> Text:
    """The outcome section of a history entry: status, enforcement, output, denials, changes."""
    out = Text(end="")
    out.append("Outcome\n", styles["heading"])
    if record is None:
        out.append("  not run by the console (no outcome recorded)\n", styles["dim"])
        return out
    ran = record.ran()
    if ran is None:
        said = (
            "too large to send whole (agent-console history export has it)" if record.elided else "unreadable"
        )
        out.append(f"  recorded at {clock_time(record.at)}; {said}\n", styles["dim"])
        return out
    if isinstance(ran, SessionRun):
        out.append("  RAN AS A SESSION", styles["allow"])
        sid, _ = agent_text(ran.session, styles, limit=64)
        out.append(f"  {ran.mode} session ", styles["label"])
        out.append_text(sid)
        how = "sandboxed" if ran.sandboxed else "UNRESTRICTED (outside the sandbox)"
        out.append(f", {how}; its changes are listed below\n", styles["label"])
        return out
    outcome = ran.outcome
    state, kind = outcome.state or "?", outcome.kind or "?"
    status = ran.status or state
    good = state == "completed" and kind == "success"
    out.append(f"  {status.upper()}", styles["allow" if good else "deny"])
    out.append(f"  {state} / {kind}", styles["label"])
    code = ran.exit_code
    signal = ran.signal or (outcome.exit.signal if outcome.exit and outcome.exit.signal else "")
    if code is not None:
        out.append(f"  exit {code}", styles["allow" if code == 0 else "deny"])
    if signal:
        out.append(f"  signal {inert(signal)[:20]}", styles["deny"])
    out.append(f"  in {ran.duration_ms / 1000:.3f} s", styles["dim"])
    out.append(f"  at {clock_time(record.at)}\n", styles["dim"])
    if ran.reason:
        reason, _ = agent_text(ran.reason, styles, limit=limit)
        field(out, "reason", reason, styles)
    enforcement = ran.enforcement if ran.enforcement.backend or ran.enforcement.level else outcome.enforcement
    level = f"{enforcement.backend or 'none'}, {enforcement.level or '?'}"
    if enforcement.degraded:
        why, _ = agent_text(enforcement.downgrade_reason, styles, styles["warning"], limit=limit)
        value = Text(f"⚠ DEGRADED ({level}): ", styles["warning"], end="")
        value.append_text(why)
        field(out, "enforcement", value, styles)
    else:
        field(out, "enforcement", Text(level, styles["within"]), styles)
    if ran.recorded is False:
        field(out, "recorded", Text("no: the store was unavailable", styles["warning"]), styles)
    denials = list(ran.denials)
    if outcome.denial is not None and not denials:
        denials = [outcome.denial]
    out.append(
        f"\n  Sandbox denials ({len(denials)})" if denials else "\n  No sandbox denials", styles["heading"]
    )
    out.append("  what the sandbox refused while it ran\n" if denials else "\n", styles["dim"])
    out.append_text(render_denials(denials, styles, limit))
    out.append("\n  Output\n", styles["heading"])
    _stream(out, "stdout", ran.stdout, styles, limit)
    _stream(out, "stderr", ran.stderr, styles, limit)
    changes = outcome.changes
    protected = [c for c in changes if c.protected]
    out.append(f"\n  Workspace changes ({len(changes)})", styles["heading"])
    out.append(f"  {len(protected)} protected\n" if changes else "  none seen while it ran\n", styles["dim"])
    for c in sorted(changes, key=lambda c: not c.protected)[:500]:
        out.append(f"    {c.kind or '?':<9}", styles["escalation" if c.protected else "label"])
        out.append_text(
            path_text(raw_path_shown(c.path), styles, styles["escalation"] if c.protected else "")
        )
        if c.refused is True:
            out.append("  REFUSED: protected (removed after the run)", styles["escalation"])
        elif c.protected:
            out.append("  PROTECTED", styles["escalation"])
        out.append("\n")
    if len(changes) > 500:
        out.append(f"    ⟨{len(changes) - 500} more⟩\n", styles["marker"])
    return out


def _who(body: FileEventBody, styles: Styles) -> Text:
    who = body.who
    if not who:
        return Text("unattributed", styles["dim"], end="")
    out = Text(end="")
    for i, a in enumerate(who[:5]):
        if i:
            out.append(", ", styles["dim"])
        out.append(f"{a.kind or '?'} ", styles["label"])
        ident, _ = agent_text(a.id, styles, limit=64)
        out.append_text(ident)
        if a.label:
            out.append(" ")
            label, _ = agent_text(a.label, styles, styles["dim"], limit=120)
            out.append_text(label)
    return out


def render_files(records: Sequence[HistoryRow], styles: Styles, limit: int) -> Text:
    """Protected file events recorded with a request: path, change, pattern, who."""
    out = Text(end="")
    out.append(f"Protected file events ({len(records)})\n", styles["heading"])
    if not records:
        out.append("  none recorded for this request\n", styles["dim"])
        return out
    for r in records[:500]:
        body = r.file_change()
        out.append(f"  {clock_time(r.at)} ", styles["dim"])
        out.append(f"{body.change or '?':<9}", styles["escalation"])
        out.append_text(path_text(inert(body.path or r.command), styles, styles["escalation"]))
        if body.protected_pattern:
            out.append("  ")
            pattern, _ = agent_text(body.protected_pattern, styles, styles["escalation"], limit=80)
            out.append_text(pattern)
        out.append("\n    ", styles["dim"])
        out.append_text(_who(body, styles))
        out.append("\n")
    if len(records) > 500:
        out.append(f"  ⟨{len(records) - 500} more⟩\n", styles["marker"])
    return out


# ---------------------------------------------------------------------- history rows of the watcher


def record_row(r: HistoryRow, styles: Styles) -> Text:
    """A history list row for an outcome, file event or tripwire record, in the list's columns.

    Roles: ``time``, ``allow``, ``deny``, ``source``, ``tool``, ``dim``, ``escape``,
    ``lookalike``, ``marker``.
    """
    kind = r.kind
    row = Text(no_wrap=True, overflow="crop", end="")
    row.append(f" {clock_time(r.at)} ", styles["time"])
    if kind == "outcome":
        ran = r.ran()
        if isinstance(ran, ExecRecord):
            good = ran.outcome.kind == "success"
            word = ran.status or ran.outcome.state or "outcome"
            source = f"exit {ran.exit_code}" if ran.exit_code is not None else ""
            reason = ran.outcome.kind
            denials = len(ran.denials)
        else:  # a session's run (its own record says how it ended), or unreadable
            good, denials, source, reason = False, 0, "", ""
            word = "session" if ran is not None else "outcome"
        if denials:
            reason = f"{denials} sandbox denial{'s' if denials != 1 else ''}"
        tool, command = r.tool, r.command or r.request_id
        verdict_style = styles["allow" if good and not denials else "deny"]
    elif kind == "file_event":
        word = r.file_change().change or "file"
        session, op = r.session_id, r.request_id
        source = session or (f"op {op}" if op else "unattributed")
        reason, tool, command = r.reason, "file change", r.command
        verdict_style = styles["deny"]
    else:
        word = r.verdict or "tripwire"
        source = r.session_id
        reason, tool, command = r.reason, kind.replace("_", " "), r.command
        verdict_style = styles["deny"]
    row.append(f"{word[:8]:<8} ", verdict_style)
    src, _ = agent_text(source, styles, styles["source"], limit=14)
    src.pad_right(15 - src.cell_len)
    row.append_text(src)
    why, _ = agent_text(reason, styles, styles["dim"], limit=22)
    why.pad_right(23 - why.cell_len)
    row.append_text(why)
    tool_text, _ = agent_text(tool, styles, styles["tool"], limit=16)
    tool_text.pad_right(17 - tool_text.cell_len)
    row.append_text(tool_text)
    if kind in ("file_event", *TRIPWIRE_KINDS):
        row.append_text(path_text(inert(command), styles, limit=400))
    else:
        piece, _ = agent_text(command, styles, limit=400)
        row.append_text(piece)
    return row


def render_record(r: HistoryRow, styles: Styles, limit: int) -> Text:
    """One file event or tripwire record from the history, in full."""
    out = Text(end="")
    item = None
    if r.kind == "file_event":
        body = r.file_change()
        out.append("Protected file change\n", styles["heading"])
        field(out, "path", path_text(inert(body.path), styles, styles["program"]), styles)
        field(out, "change", Text(body.change or "?", styles["escalation"]), styles)
        pattern, _ = agent_text(body.protected_pattern, styles, styles["escalation"], limit=200)
        field(out, "pattern", pattern, styles)
        event = body.attribution.event if body.attribution is not None else None
        if event is not None:
            marks = []
            if event.symlink_escape:
                marks.append("a symbolic link pointing out of the workspace")
            if event.path_flagged:
                marks.append("the name holds control, invisible or undecodable characters")
            for m in marks:
                field(out, "⚠", Text(m, styles["warning"]), styles)
        field(out, "who", _who(body, styles), styles)
    else:
        # A tripwire row's item as it was then; the row's columns when it cannot be read.
        item = r.tripwire_item()
        state = r.verdict or (item.state if item else "")
        out.append(f"Tripwire — {state}\n", styles["heading"])
        summary, _ = agent_text(item.summary if item else r.note, styles, styles["escalation"], limit=300)
        field(out, "what", summary, styles)
        session, _ = agent_text(item.session if item else r.session_id, styles, limit=64)
        if item and item.session_label:
            session.append("  ")
            label, _ = agent_text(item.session_label, styles, styles["dim"], limit=200)
            session.append_text(label)
        field(out, "session", session, styles)
        field(out, "path", path_text(inert(item.display_path if item else r.command), styles), styles)
        pattern, _ = agent_text(item.pattern if item else r.reason, styles, styles["escalation"], limit=200)
        field(out, "pattern", pattern, styles)
        field(out, "item", inert(item.id if item else "")[:40], styles)
    field(out, "workspace", path_text(inert(r.workspace_root), styles), styles)
    field(out, "when", clock_time(r.at), styles)
    if r.request_id:
        field(out, "operation", inert(r.request_id)[:64], styles)
    if item is not None and item.diff:
        out.append("\nDiff\n", styles["heading"])
        text, _ = diff_text(item.diff, styles, max_lines=limit // 40 or 50)
        out.append_text(text)
    return out
