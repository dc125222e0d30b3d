"""How an executed operation ended, and the watcher's history rows, as Rich ``Text``.

An ``outcome`` record's body is the daemon's exec result (docs/protocol.md,
``operation.exec``): status, exit code or signal, duration, enforcement, the retained
head and tail of each stream, the sandbox's denials and the workspace changes. Output
is the least trusted text there is — whatever the command printed — so it goes through
:func:`console.tui.render.untrusted.block` like agent text. ``file_event``, ``tripwire`` and
``tripwire_resolved`` records are made readable for the history list and for opening one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

from console.contract.inert import inert
from console.protocol.history import TRIPWIRE_KINDS
from console.tui.model.timefmt import clock_time
from console.tui.render.present import Styles, agent_block, agent_text, byte_size, field
from console.tui.render.untrusted import block
from console.tui.render.watch_text import diff_text, path_text, raw_path_shown

STREAM_LINES = 30
RECORD_KINDS = ("file_event", *TRIPWIRE_KINDS, "outcome")


def capability_label(capability: Any) -> str:
    if isinstance(capability, Mapping):
        kind = str(capability.get("kind", "?"))
        return f"{kind}({capability['scope']})" if capability.get("scope") else kind
    return str(capability)


def render_denials(denials: Sequence[Mapping[str, Any]], styles: Styles, limit: int) -> Text:
    out = Text(end="")
    for d in denials:
        out.append("  ✖ ", styles["escalation"])
        label, _ = agent_text(capability_label(d.get("capability")), styles, styles["escalation"], limit=200)
        out.append_text(label)
        out.append(" — ", styles["escalation"])
        reason, _ = agent_text(str(d.get("reason", "")), styles, limit=limit)
        out.append_text(reason)
        out.append("\n")
        source = str(d.get("source", ""))
        recoverable = "recoverable" if d.get("recoverable") else "not recoverable"
        out.append(
            f"      {source or 'unknown source'}, {recoverable}; next: {d.get('next_action', '?')}\n",
            styles["dim"],
        )
    return out


def _stream(out: Text, name: str, stream: Any, styles: Styles, limit: int) -> None:
    if not isinstance(stream, Mapping):
        return
    total = int(stream.get("total_bytes", 0) or 0)
    head, tail = str(stream.get("head", "")), str(stream.get("tail", ""))
    out.append(f"  {name:<12}", styles["label"])
    if not total:
        out.append("empty\n", styles["dim"])
        return
    truncated = bool(stream.get("truncated"))
    out.append(byte_size(total) + (" — head and tail kept" if truncated else ""), styles["dim"])
    out.append("\n")
    if head:
        shown = block(head, max_chars=limit, max_lines=STREAM_LINES)
        out.append_text(agent_block(shown, styles, "    "))
        out.append("\n")
    if truncated:
        dropped = total - len(stream.get("head", "").encode()) - len(tail.encode())
        out.append(f"    ⟨{byte_size(max(0, dropped))} in between not kept⟩\n", styles["marker"])
        if tail:
            lines = tail.split("\n")
            shown = block("\n".join(lines[-STREAM_LINES:]), max_chars=limit, max_lines=STREAM_LINES)
            out.append_text(agent_block(shown, styles, "    "))
            out.append("\n")


def render_outcome(record: Mapping[str, Any] | None, styles: Styles, limit: int) -> Text:
    """The outcome section of a history entry: status, enforcement, output, denials, changes."""
    out = Text(end="")
    out.append("Outcome\n", styles["heading"])
    if record is None:
        out.append("  not run by the console (no outcome recorded)\n", styles["dim"])
        return out
    body: Mapping[str, Any] = record.get("body") or {}
    if body.get("kind") == "session":
        out.append("  RAN AS A SESSION", styles["allow"])
        sid, _ = agent_text(str(body.get("session", "")), styles, limit=64)
        out.append(f"  {body.get('mode', '')} session ", styles["label"])
        out.append_text(sid)
        how = "sandboxed" if body.get("sandboxed") else "UNRESTRICTED (outside the sandbox)"
        out.append(f", {how}; its changes are listed below\n", styles["label"])
        return out
    outcome: Mapping[str, Any] = body["outcome"] if isinstance(body.get("outcome"), Mapping) else body
    state, kind = str(outcome.get("state", "?")), str(outcome.get("kind", "?"))
    status = str(body.get("status", "")) or state
    good = state == "completed" and kind == "success"
    out.append(f"  {status.upper()}", styles["allow" if good else "deny"])
    out.append(f"  {state} / {kind}", styles["label"])
    exit_ = outcome.get("exit") or {}
    code = body.get("exit_code", exit_.get("code") if isinstance(exit_, Mapping) else None)
    signal = body.get("signal") or (exit_.get("signal") if isinstance(exit_, Mapping) else "")
    if code is not None:
        out.append(f"  exit {code}", styles["allow" if code == 0 else "deny"])
    if signal:
        out.append(f"  signal {inert(str(signal))[:20]}", styles["deny"])
    if body.get("duration_ms") is not None:
        out.append(f"  in {float(body['duration_ms']) / 1000:.3f} s", styles["dim"])
    out.append(f"  at {clock_time(record.get('at'))}\n", styles["dim"])
    if body.get("reason"):
        reason, _ = agent_text(str(body["reason"]), styles, limit=limit)
        field(out, "reason", reason, styles)
    enforcement = body.get("enforcement") or outcome.get("enforcement") or {}
    if isinstance(enforcement, Mapping) and enforcement:
        level = f"{enforcement.get('backend') or 'none'}, {enforcement.get('level') or '?'}"
        if enforcement.get("degraded"):
            why, _ = agent_text(
                str(enforcement.get("downgrade_reason", "")), styles, styles["warning"], limit=limit
            )
            value = Text(f"⚠ DEGRADED ({level}): ", styles["warning"], end="")
            value.append_text(why)
            field(out, "enforcement", value, styles)
        else:
            field(out, "enforcement", Text(level, styles["within"]), styles)
    if body.get("recorded") is False:
        field(out, "recorded", Text("no: the store was unavailable", styles["warning"]), styles)
    denials = [d for d in body.get("denials") or () if isinstance(d, Mapping)]
    if isinstance(outcome.get("denial"), Mapping) and not denials:
        denials = [outcome["denial"]]
    out.append(
        f"\n  Sandbox denials ({len(denials)})" if denials else "\n  No sandbox denials", styles["heading"]
    )
    out.append("  what the sandbox refused while it ran\n" if denials else "\n", styles["dim"])
    out.append_text(render_denials(denials, styles, limit))
    out.append("\n  Output\n", styles["heading"])
    for name in ("stdout", "stderr"):
        _stream(out, name, body.get(name), styles, limit)
    changes = [c for c in outcome.get("changes") or () if isinstance(c, Mapping)]
    protected = [c for c in changes if c.get("protected")]
    out.append(f"\n  Workspace changes ({len(changes)})", styles["heading"])
    out.append(f"  {len(protected)} protected\n" if changes else "  none seen while it ran\n", styles["dim"])
    for c in sorted(changes, key=lambda c: not c.get("protected"))[:500]:
        is_protected = bool(c.get("protected"))
        out.append(f"    {c.get('kind', '?')!s:<9}", styles["escalation" if is_protected else "label"])
        out.append_text(
            path_text(
                raw_path_shown(str(c.get("path", ""))), styles, styles["escalation"] if is_protected else ""
            )
        )
        if c.get("refused"):
            out.append("  REFUSED: protected (removed after the run)", styles["escalation"])
        elif is_protected:
            out.append("  PROTECTED", styles["escalation"])
        out.append("\n")
    if len(changes) > 500:
        out.append(f"    ⟨{len(changes) - 500} more⟩\n", styles["marker"])
    return out


def _who(body: Mapping[str, Any], styles: Styles) -> Text:
    who = (body.get("attribution") or {}).get("who")
    if not isinstance(who, list) or not who:
        return Text("unattributed", styles["dim"], end="")
    out = Text(end="")
    for i, a in enumerate(who[:5]):
        if not isinstance(a, Mapping):
            continue
        if i:
            out.append(", ", styles["dim"])
        out.append(f"{a.get('kind', '?')} ", styles["label"])
        ident, _ = agent_text(str(a.get("id", "")), styles, limit=64)
        out.append_text(ident)
        if a.get("label"):
            out.append(" ")
            label, _ = agent_text(str(a["label"]), styles, styles["dim"], limit=120)
            out.append_text(label)
    return out


def render_files(records: Sequence[Mapping[str, Any]], styles: Styles, limit: int) -> Text:
    """Protected file events recorded with a request: path, change, pattern, who."""
    out = Text(end="")
    out.append(f"Protected file events ({len(records)})\n", styles["heading"])
    if not records:
        out.append("  none recorded for this request\n", styles["dim"])
        return out
    for r in records[:500]:
        body = r.get("body") or {}
        out.append(f"  {clock_time(r.get('at'))} ", styles["dim"])
        out.append(f"{body.get('change', '?')!s:<9}", styles["escalation"])
        out.append_text(
            path_text(inert(str(body.get("path", r.get("command", "")))), styles, styles["escalation"])
        )
        if body.get("protected_pattern"):
            out.append("  ")
            pattern, _ = agent_text(str(body["protected_pattern"]), styles, styles["escalation"], limit=80)
            out.append_text(pattern)
        out.append("\n    ", styles["dim"])
        out.append_text(_who(body, styles))
        out.append("\n")
    if len(records) > 500:
        out.append(f"  ⟨{len(records) - 500} more⟩\n", styles["marker"])
    return out


# ---------------------------------------------------------------------- history rows of the watcher


def record_row(r: Mapping[str, Any], styles: Styles) -> Text:
    """A history list row for an outcome, file event or tripwire record, in the list's columns.

    Roles: ``time``, ``allow``, ``deny``, ``source``, ``tool``, ``dim``, ``escape``,
    ``lookalike``, ``marker``.
    """
    kind = str(r.get("kind", ""))
    body: Mapping[str, Any] = r.get("body") or {}
    row = Text(no_wrap=True, overflow="crop", end="")
    row.append(f" {clock_time(r.get('at'))} ", styles["time"])
    if kind == "outcome":
        outcome: Mapping[str, Any] = body["outcome"] if isinstance(body.get("outcome"), Mapping) else {}
        good = outcome.get("kind") == "success"
        word = str(body.get("status", "") or outcome.get("state", "outcome"))
        source = f"exit {body.get('exit_code')}" if body.get("exit_code") is not None else ""
        reason = str(outcome.get("kind", ""))
        denials = len(body.get("denials") or ())
        if denials:
            reason = f"{denials} sandbox denial{'s' if denials != 1 else ''}"
        tool, command = str(r.get("tool", "")), str(r.get("command", "") or r.get("request_id", ""))
        verdict_style = styles["allow" if good and not denials else "deny"]
    elif kind == "file_event":
        word = str(body.get("change", "file"))
        session, op = r.get("session_id"), r.get("request_id")
        source = str(session or (f"op {op}" if op else "unattributed"))
        reason, tool, command = str(r.get("reason", "")), "file change", str(r.get("command", ""))
        verdict_style = styles["deny"]
    else:
        word = str(r.get("verdict", "")) or "tripwire"
        source = str(r.get("session_id", ""))
        reason, tool, command = str(r.get("reason", "")), kind.replace("_", " "), str(r.get("command", ""))
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


def render_record(r: Mapping[str, Any], styles: Styles, limit: int) -> Text:
    """One file event or tripwire record from the history, in full."""
    kind = str(r.get("kind", ""))
    body = r.get("body") or {}
    out = Text(end="")
    if kind == "file_event":
        out.append("Protected file change\n", styles["heading"])
        field(out, "path", path_text(inert(str(body.get("path", ""))), styles, styles["program"]), styles)
        field(out, "change", Text(str(body.get("change", "?")), styles["escalation"]), styles)
        pattern, _ = agent_text(
            str(body.get("protected_pattern", "")), styles, styles["escalation"], limit=200
        )
        field(out, "pattern", pattern, styles)
        event = (body.get("attribution") or {}).get("event") or {}
        if isinstance(event, Mapping):
            marks = []
            if event.get("symlink_escape"):
                marks.append("a symbolic link pointing out of the workspace")
            if event.get("path_flagged"):
                marks.append("the name holds control, invisible or undecodable characters")
            for m in marks:
                field(out, "⚠", Text(m, styles["warning"]), styles)
        field(out, "who", _who(body, styles), styles)
    else:
        item = body.get("item") or {}
        state = str(r.get("verdict", "") or item.get("state", ""))
        out.append(f"Tripwire — {state}\n", styles["heading"])
        summary, _ = agent_text(
            str(item.get("summary", r.get("note", ""))), styles, styles["escalation"], limit=300
        )
        field(out, "what", summary, styles)
        session, _ = agent_text(str(item.get("session", r.get("session_id", ""))), styles, limit=64)
        if item.get("session_label"):
            session.append("  ")
            label, _ = agent_text(str(item["session_label"]), styles, styles["dim"], limit=200)
            session.append_text(label)
        field(out, "session", session, styles)
        field(
            out, "path", path_text(inert(str(item.get("display_path", r.get("command", "")))), styles), styles
        )
        pattern, _ = agent_text(
            str(item.get("pattern", r.get("reason", ""))), styles, styles["escalation"], limit=200
        )
        field(out, "pattern", pattern, styles)
        field(out, "item", inert(str(item.get("id", "")))[:40], styles)
    field(out, "workspace", path_text(inert(str(r.get("workspace_root", ""))), styles), styles)
    field(out, "when", clock_time(r.get("at")), styles)
    if r.get("request_id"):
        field(out, "operation", inert(str(r["request_id"]))[:64], styles)
    if kind != "file_event":
        diff = (body.get("item") or {}).get("diff")
        if isinstance(diff, str) and diff:
            out.append("\nDiff\n", styles["heading"])
            text, _ = diff_text(diff, styles, max_lines=limit // 40 or 50)
            out.append_text(text)
    return out
