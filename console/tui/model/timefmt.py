"""Ages, times and durations as the console writes and reads them."""

from __future__ import annotations

import re
from datetime import datetime

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w)?")
_UNITS = {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def age(seconds: float) -> str:
    """``42s``, ``3m``, ``5h``, ``2d``: short enough for a queue column."""
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def ago(seconds: float) -> str:
    """``12 min ago`` for sentences; ``just now`` under a second."""
    seconds = max(0, int(seconds))
    if seconds < 1:
        return "just now"
    if seconds < 60:
        return f"{seconds} s ago"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return "just now"


def age_ago(seconds: float) -> str:
    """``42s ago``, ``3m ago`` for a column; ``just now`` under a second."""
    return "just now" if seconds < 1 else f"{age(seconds)} ago"


def clock_time(ts: float | None, *, with_date: bool = True) -> str:
    if not ts:
        return "-"
    fmt = "%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S"
    return datetime.fromtimestamp(ts).strftime(fmt)


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``2h``, ``7d``, ``1w`` → seconds; ValueError otherwise."""
    m = _DURATION.fullmatch(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"not a duration: {text.strip()!r} (use e.g. 90s, 30m, 8h, 7d)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_since(text: str, now: float) -> float:
    """A time filter: a duration meaning that long ago (``2h``), or an ISO date/time."""
    try:
        return now - parse_duration(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(f"not a time: {text.strip()!r} (use 2h, 2026-11-30 or 2026-11-30T14:00)") from None
