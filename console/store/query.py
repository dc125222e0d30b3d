"""History queries: filters, search text and keyset paging, turned into one SQL query.

Search text is data, never FTS syntax: it is matched as one case-insensitive substring
of the command line, cwd, justification, reason or note. Three characters or more go
through the trigram index; shorter text (which has no trigram) is a LIKE scan.

Each query is planned by hand rather than left to SQLite's guesses: exactly one index
drives it (a narrow key, else the search index, else tool or kind, else the primary
key), always walked newest first so ``LIMIT`` stops early; every other filter is written
as ``+column`` so SQLite cannot pick an index that would force a sort of every match.

Two shapes have no index to drive them and scan rows newest first until the page is
full: searches of one or two characters, and an ``until`` far in the past with no other
narrowing filter. They are quick when matches are common; at a million rows a scan that
finds nothing takes a few hundred milliseconds (see benchmarks/store.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from console.store.event import RECORD_COLUMNS, SEARCH_COLUMNS, UNSEARCHED_KINDS, Record

MAX_LIMIT = 5000
MIN_TRIGRAM_CHARS = 3


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    """What to show. Empty strings and None mean "any"; ``since`` is inclusive, ``until`` exclusive.

    ``search`` is trimmed of surrounding whitespace and then matched as plain text.

    ``before_seq`` pages towards older rows, ``after_seq`` towards newer ones (the page
    adjacent to it); either way rows come newest first.
    """

    kinds: tuple[str, ...] | None = ()
    verdict: str | None = ""
    source: str | None = ""
    tool: str | None = ""
    agent: str | None = ""  # the agent kind: requests whose tool is ``<agent>:…``
    session_id: str | None = ""
    fingerprint: str | None = ""
    request_id: str | None = ""
    since: float | None = None
    until: float | None = None
    search: str | None = ""
    before_seq: int | None = None
    after_seq: int | None = None
    limit: int = 200

    def __post_init__(self) -> None:
        kinds = () if self.kinds is None else self.kinds
        if isinstance(kinds, str) or not all(isinstance(k, str) and k for k in kinds):
            raise ValueError("kinds must be a tuple of non-empty event kind names")
        object.__setattr__(self, "kinds", tuple(kinds))
        for name in (
            "verdict",
            "source",
            "tool",
            "agent",
            "session_id",
            "fingerprint",
            "request_id",
            "search",
        ):
            value = getattr(self, name)
            if value is None:
                object.__setattr__(self, name, "")
                continue
            if not isinstance(value, str):
                raise TypeError(f"history query {name} must be a string")
            if "\x00" in value:
                raise ValueError(f"history query {name} must not contain NUL")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            ):
                raise ValueError(f"history query {name} must be a finite number of seconds")
        for name in ("before_seq", "after_seq"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"history query {name} must be an integer")
        if (
            isinstance(self.limit, bool)
            or not isinstance(self.limit, int)
            or not 1 <= self.limit <= MAX_LIMIT
        ):
            raise ValueError(f"history query limit must be between 1 and {MAX_LIMIT}")


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """One page, newest first, with the cursors for the neighbouring pages.

    ``older`` is the ``before_seq`` of the next older page and ``newer`` the
    ``after_seq`` of the next newer one; None when there is nothing more that way.
    """

    records: list[Record] = field(default_factory=list)
    older: int | None = None
    newer: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [r.to_dict() for r in self.records], "older": self.older, "newer": self.newer}


def fts_phrase(text: str) -> str:
    """The text as one FTS5 string: a phrase of its trigrams, i.e. a substring match."""
    return '"' + text.replace('"', '""') + '"'


def like_pattern(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _like_any(params: list[Any], text: str) -> str:
    params.append(like_pattern(text))
    n = len(params)
    return "(" + " OR ".join(f"e.{c} LIKE ?{n} ESCAPE '\\'" for c in SEARCH_COLUMNS) + ")"


_SELECT = ", ".join(f"e.{c}" for c in RECORD_COLUMNS)


def build(q: HistoryQuery, *, ascending: bool, limit: int, select: str = _SELECT) -> tuple[str, list[Any]]:
    """The SQL for a history query and its parameters (numbered ``?N`` placeholders)."""
    params: list[Any] = []
    where: list[str] = []

    def param(value: Any) -> str:
        params.append(value)
        return f"?{len(params)}"

    search = (q.search or "").strip()
    kinds = q.kinds or ()
    equal = {
        "request_id": q.request_id or "",
        "fingerprint": q.fingerprint or "",
        "session_id": q.session_id or "",
        "tool": q.tool or "",
        "verdict": q.verdict or "",
        "source": q.source or "",
    }
    driver = next((c for c in ("request_id", "fingerprint", "session_id") if equal[c]), "")
    use_fts = not driver and len(search) >= MIN_TRIGRAM_CHARS
    if not driver and not use_fts:
        if q.tool:
            driver = "tool"
        elif len(kinds) == 1:
            driver = "kind"

    key = "f.rowid" if use_fts else "e.seq"
    source = "events_fts AS f JOIN events AS e ON e.seq = f.rowid" if use_fts else "events AS e"
    if use_fts:
        where.append(f"events_fts MATCH {param(fts_phrase(search))}")
    elif search:
        where.append(_like_any(params, search))
        # Same rule as the index: a request is found through its decision.
        where.extend(f"+e.kind <> {param(k)}" for k in sorted(UNSEARCHED_KINDS))

    for column, value in equal.items():
        if value:
            prefix = "" if column == driver else "+"
            where.append(f"{prefix}e.{column} = {param(value)}")
    if q.agent:
        # ``<agent>:`` up to ``<agent>;`` (':' + 1): every tool of that agent, by the tool index.
        where.append(f"e.tool >= {param(q.agent + ':')} AND e.tool < {param(q.agent + ';')}")
    if kinds:
        prefix = "" if driver == "kind" else "+"
        if len(kinds) == 1:
            where.append(f"{prefix}e.kind = {param(kinds[0])}")
        else:
            where.append(f"+e.kind IN ({', '.join(param(k) for k in kinds)})")
    if q.since is not None:
        where.append(f"+e.at >= {param(float(q.since))}")
    if q.until is not None:
        where.append(f"+e.at < {param(float(q.until))}")
    if q.before_seq is not None:
        where.append(f"{key} < {param(q.before_seq)}")
    if q.after_seq is not None:
        where.append(f"{key} > {param(q.after_seq)}")

    # Only constants and ?N placeholders are interpolated; values travel as parameters.
    sql = f"SELECT {select} FROM {source}"  # noqa: S608
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY {key} {'ASC' if ascending else 'DESC'} LIMIT {param(limit)}"
    return sql, params
