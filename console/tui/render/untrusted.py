"""Preparing agent-supplied text for display: escaped, bounded, and with its tricks named.

Everything here returns plain strings and flags; styling happens in :mod:`console.tui.render.present`.
The escaping itself is :func:`console.contract.inert.inert`, shared with the CLI, so
the console and ``agent-console pending`` show the same characters.

Bounding matters as much as escaping: a 100,000-character justification or a thousand
blank lines would push the real command off the screen. :func:`block` keeps the head,
says exactly how much it left out, and collapses runs of blank lines into one visible
marker; the typed-ahead guard treats anything truncated as not yet seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from console.contract.inert import Finding, findings, inert, lookalike_spans

__all__ = ["CANDIDATE", "Line", "Shown", "block", "escaped_line", "lookalike_spans", "one_line"]

BLANK_RUN = 2  # more consecutive blank lines than this collapse into one marker
# Characters :func:`inert` may rewrite: anything but printable ASCII other than backslash.
CANDIDATE = re.compile(r"[^\x20-\x5b\x5d-\x7e]")


@dataclass(frozen=True, slots=True)
class Line:
    """One display line: agent text, or a marker the console itself wrote.

    ``escapes`` are the spans of ``text`` that stand for a character the agent sent
    (``\\e`` for a real ESC), so they can be shown apart from the same letters typed.
    """

    text: str
    marker: bool = False
    escapes: tuple[tuple[int, int], ...] = ()


def escaped_line(raw: str) -> Line:
    """``raw`` made inert, with the spans of its escapes."""
    if not CANDIDATE.search(raw):
        return Line(raw)
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    at = 0
    for ch in raw:
        piece = inert(ch) if CANDIDATE.match(ch) else ch
        if piece != ch:
            spans.append((at, at + len(piece)))
        parts.append(piece)
        at += len(piece)
    return Line("".join(parts), escapes=tuple(spans))


@dataclass(frozen=True, slots=True)
class Shown:
    lines: tuple[Line, ...]
    truncated: bool = False
    findings: frozenset[Finding] = field(default_factory=frozenset)

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)


def one_line(text: str, limit: int) -> tuple[str, bool]:
    """``text`` escaped onto one line (newlines shown as ``\\n``), cut to ``limit`` characters.

    Returns the text and whether it was cut.
    """
    if len(text) > limit * 8:
        text = text[: limit * 8]  # escaping only lengthens: no need to look further
    shown = inert(text)
    if len(shown) <= limit:
        return shown, False
    return shown[: max(0, limit - 1)] + "…", True


def block(text: str, *, max_chars: int, max_lines: int, expanded: bool = False) -> Shown:
    """Multi-line agent text: escaped, blank runs collapsed, and bounded unless ``expanded``.

    Blank lines do not count against ``max_chars``: padding cannot push the real text
    past the cut.
    """
    found = frozenset(findings(text))
    truncated = False
    hidden_chars = 0
    lines: list[Line] = []
    blank = 0
    used = 0
    offset = 0

    def close_blank_run() -> None:
        nonlocal blank
        if blank > BLANK_RUN:
            lines.append(Line(f"⟨{blank} empty lines⟩", marker=True))
        else:
            lines.extend(Line("") for _ in range(blank))
        blank = 0

    for raw in text.split("\n"):
        start = offset
        offset += len(raw) + 1
        if not raw.strip():
            blank += 1
            continue
        close_blank_run()
        if not expanded and used + len(raw) > max_chars:
            keep = max_chars - used
            if keep > 0:
                lines.append(escaped_line(raw[:keep]))
            truncated = True
            hidden_chars = len(text) - start - max(keep, 0)
            break
        used += len(raw)
        lines.append(escaped_line(raw))
    else:
        # Trailing blank lines are padding: always name them, never show them as space.
        if blank > 1:  # one trailing newline is ordinary
            lines.append(Line(f"⟨{blank} empty lines⟩", marker=True))
    if not expanded and len(lines) > max_lines:
        hidden_lines = len(lines) - max_lines
        lines = lines[:max_lines]
        truncated = True
        lines.append(Line(f"⟨{hidden_lines} more lines hidden — expand to see all⟩", marker=True))
    if hidden_chars:
        lines.append(Line(f"⟨{hidden_chars:,} more characters hidden — expand to see all⟩", marker=True))
    return Shown(tuple(lines), truncated, found)
