"""The history search line: free text plus ``key:value`` filters, turned into query params.

    pip install verdict:deny source:timeout tool:claude-code:Bash agent:codex session:agent-1 since:2h

What you type is what is queried: the verdict and source keys rewrite their token in
the line rather than keeping hidden state. Free text is sent as the daemon's ``search``
parameter, which is plain text, never query syntax.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from console.protocol.history import GROUP_WORDS, KIND_GROUPS, KINDS, SOURCES, VERDICTS
from console.tui.model.timefmt import parse_since

_KEYS = {
    "tool": "tool",
    "agent": "agent",
    "session": "session_id",
    "verdict": "verdict",
    "source": "source",
    "since": "since",
    "until": "until",
    "fp": "fingerprint",
    "fingerprint": "fingerprint",
    "id": "request_id",
    "kind": "kinds",
}


@dataclass
class Parsed:
    params: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    group: str = "all"

    def describe(self) -> str:
        """What is shown, in words that match the query (never "everything" for less)."""
        parts = [f"{k}={v}" for k, v in self.params.items() if k not in ("search", "kinds")]
        if "search" in self.params:
            parts.insert(0, f"text contains {self.params['search']!r}")
        what = GROUP_WORDS.get(self.group) or "events of kind " + ",".join(self.params.get("kinds", ()))
        if not parts:
            return what
        # The filter first: a narrow terminal cuts the end of the summary line.
        return ", ".join(parts) + ("" if self.group == "all" else f" ({what})")


def _tokens(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def parse_query(text: str, now: float) -> Parsed:
    out = Parsed()
    free: list[str] = []
    for token in _tokens(text):
        key, sep, value = token.partition(":")
        name = _KEYS.get(key.lower()) if sep else None
        if name is None:
            free.append(token)
            continue
        if not value:
            out.errors.append(f"{key}: needs a value, e.g. {key}:{_example(key)}")
            continue
        if name == "verdict" and value not in VERDICTS:
            out.errors.append(f"verdict: {value!r} is not one of {', '.join(VERDICTS)}")
        elif name == "source" and value not in SOURCES:
            out.errors.append(f"source: {value!r} is not one of {', '.join(SOURCES)}")
        elif name == "kinds":
            if value in KIND_GROUPS:
                out.group = value
                continue
            kinds = value.split(",")
            bad = [k for k in kinds if k not in KINDS]
            if bad:
                names = ", ".join([*KIND_GROUPS, *KINDS])
                out.errors.append(f"kind: {bad[0]!r} is not one of {names}")
            else:
                out.params["kinds"] = kinds
                out.group = ""
        elif name in ("since", "until"):
            try:
                out.params[name] = parse_since(value, now)
            except ValueError as exc:
                out.errors.append(f"{key}: {exc}")
        else:
            out.params[name] = value
    if free:
        out.params["search"] = " ".join(free)
    if out.group:
        out.params["kinds"] = list(KIND_GROUPS[out.group])
    return out


def _example(key: str) -> str:
    return {
        "verdict": "deny",
        "source": "timeout",
        "since": "2h",
        "until": "2026-11-30",
        "kind": "decision",
        "tool": "claude-code:Bash",
        "agent": "codex",
        "session": "agent-1",
        "fp": "9e1c",
        "id": "r-5f2c9a01be",
    }.get(key, "value")


def set_token(text: str, key: str, value: str | None) -> str:
    """``text`` with its ``key:`` filter replaced by ``key:value`` (or removed for None)."""
    kept = [t for t in text.split() if not t.lower().startswith(key + ":")]
    if value is not None:
        kept.append(f"{key}:{value}")
    return " ".join(kept) + (" " if kept else "")


def token_value(text: str, key: str) -> str | None:
    for t in text.split():
        if t.lower().startswith(key + ":"):
            return t.split(":", 1)[1]
    return None


def cycle(values: tuple[str, ...], current: str | None) -> str | None:
    """The next of ``values`` after ``current``; after the last, None (no filter)."""
    if current not in values:
        return values[0]
    i = values.index(current)
    return values[i + 1] if i + 1 < len(values) else None
