"""Checking the history: the chain row by row, its anchors, and the grants it implies.

A tampered history is reported by the first row that is wrong and how it is wrong:

- ``edited``: a row's content no longer matches its hash (or a row was rewritten
  together with its hash, which its successor then disowns);
- ``deleted``: rows are missing (a gap in the seqs, or a row whose predecessor is gone);
- ``reordered``: rows still exist but sit at seqs other than the ones they were sealed at;
- ``inserted``: a row that the chain or the anchors never had;
- ``truncated``: the newest rows are gone (the chain is shorter than its anchors).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from console.store.chain import GENESIS, Anchor, row_hash
from console.store.event import HASHED_COLUMNS

_N = len(HASHED_COLUMNS)
_SELECT = f"SELECT {', '.join(HASHED_COLUMNS)}, prev_hash, hash FROM events"  # noqa: S608
# How far from its current seq a moved row's original seq is looked for.
_MOVE_WINDOW = 2048
_decode = msgspec.json.Decoder().decode


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """``ok``, how many rows and grants were checked, and the first problem if any."""

    ok: bool
    checked: int
    first_bad_seq: int | None = None
    what: str = ""
    message: str = ""
    grants_checked: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "first_bad_seq": self.first_bad_seq,
            "what": self.what,
            "message": self.message,
            "grants_checked": self.grants_checked,
        }


@dataclass(frozen=True, slots=True)
class Finding:
    what: str
    first_bad_seq: int | None
    message: str

    def to_body(self) -> dict[str, Any]:
        return {"what": self.what, "first_bad_seq": self.first_bad_seq, "message": self.message}


def _hash_of(row: tuple[Any, ...], seq: int | None = None) -> str:
    columns = dict(zip(HASHED_COLUMNS, row[:_N], strict=True))
    if seq is not None:
        columns["seq"] = seq
    return str(row_hash(row[_N], columns))


def _prev(row: tuple[Any, ...]) -> str:
    return str(row[_N])


def _hash(row: tuple[Any, ...]) -> str:
    return str(row[_N + 1])


def _rows_after(conn: sqlite3.Connection, seq: int | None) -> Iterator[tuple[Any, ...]]:
    if seq is None:  # every row, including any forged with a seq below 1
        return conn.execute(_SELECT + " ORDER BY seq")
    return conn.execute(_SELECT + " WHERE seq > ? ORDER BY seq", (seq,))


@dataclass(frozen=True, slots=True)
class Walk:
    checked: int
    tail: tuple[int, str]
    finding: Finding | None


def walk(conn: sqlite3.Connection, start: tuple[int, str] | None = None, anchored: int | None = None) -> Walk:
    """Check every row (or every row after ``start``) in seq order; stop at the first bad one.

    ``anchored`` is the newest seq the anchors vouch for: rows after it that chain
    correctly are still reported as inserted.
    """
    prev_seq, prev_hash = start or (0, GENESIS)
    checked = 0
    for row in _rows_after(conn, None if start is None else prev_seq):
        seq = row[0]
        if seq == prev_seq + 1 and _prev(row) == prev_hash and _hash_of(row) == _hash(row):
            if anchored is not None and seq > anchored:
                return Walk(checked, (prev_seq, prev_hash), _beyond_anchor(anchored))
            prev_seq, prev_hash = seq, _hash(row)
            checked += 1
            continue
        return Walk(checked, (prev_seq, prev_hash), _classify(conn, row, prev_seq, prev_hash, anchored))
    return Walk(checked, (prev_seq, prev_hash), None)


def _beyond_anchor(anchored: int) -> Finding:
    return Finding(
        "inserted",
        anchored + 1,
        f"rows from seq {anchored + 1} on are not covered by the head anchor (appended outside agent-console)",
    )


def _original_seq(conn: sqlite3.Connection, row: tuple[Any, ...]) -> int | None:
    """The seq a moved row was sealed at, if it is near or right after its predecessor."""
    seq = row[0]
    candidates: list[int] = []
    found = conn.execute("SELECT seq FROM events WHERE hash = ? LIMIT 1", (_prev(row),)).fetchone()
    if found is not None:
        candidates.append(found[0] + 1)
    for distance in range(1, _MOVE_WINDOW + 1):
        candidates.extend((seq + distance, seq - distance))
    for candidate in candidates:
        if candidate >= 1 and candidate != seq and _hash_of(row, candidate) == _hash(row):
            return candidate
    return None


def _classify(
    conn: sqlite3.Connection, row: tuple[Any, ...], prev_seq: int, prev_hash: str, anchored: int | None
) -> Finding:
    seq = row[0]
    expected = prev_seq + 1
    if anchored is not None and prev_seq >= anchored and seq > anchored:
        return _beyond_anchor(anchored)
    if seq < expected:
        return Finding("inserted", seq, f"a row with seq {seq} comes before seq {expected}")
    if seq > expected:
        span = f"seq {expected}" if seq == expected + 1 else f"seqs {expected}-{seq - 1}"
        return Finding("deleted", expected, f"{span} missing: the history jumps from {prev_seq} to {seq}")
    if _hash_of(row) == _hash(row):
        if prev_seq == 0:
            return Finding("edited", seq, f"row {seq} does not start from the genesis hash")
        return Finding(
            "edited",
            prev_seq,
            f"row {prev_seq} was rewritten together with its hash: row {seq} was chained to another one",
        )
    original = _original_seq(conn, row)
    if original is None:
        nxt = conn.execute(_SELECT + " WHERE seq > ? ORDER BY seq LIMIT 1", (seq,)).fetchone()
        if (
            nxt is not None
            and nxt[0] == seq + 1
            and _prev(nxt) == prev_hash
            and _hash_of(nxt, seq) == _hash(nxt)
        ):
            return Finding("inserted", seq, f"row {seq} was inserted: the rows after it were shifted by one")
        return Finding("edited", seq, f"row {seq} was edited: its content does not match its hash")
    if original < seq:
        return Finding(
            "inserted",
            original,
            f"row {seq} was sealed as seq {original}: rows were inserted before it",
        )
    predecessor_exists = conn.execute("SELECT 1 FROM events WHERE hash = ? LIMIT 1", (_prev(row),)).fetchone()
    if predecessor_exists:
        return Finding("reordered", seq, f"row {seq} holds the row sealed as seq {original}")
    return Finding(
        "deleted", seq, f"row {seq} was sealed as seq {original}: rows before it were deleted and renumbered"
    )


# ---------------------------------------------------------------------------------------
# Anchors


def tail(conn: sqlite3.Connection) -> tuple[int, str]:
    row = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    return (row[0], row[1]) if row else (0, GENESIS)


def meta_head(conn: sqlite3.Connection) -> tuple[int, str] | None:
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('head_seq', 'head_hash')"))
    if "head_seq" not in rows or "head_hash" not in rows:
        return None
    try:
        return int(rows["head_seq"]), rows["head_hash"]
    except ValueError:
        return None


def _compare(found: tuple[int, str], ref_seq: int, ref_hash: str, where: str) -> Finding | None:
    seq, hash_ = found
    if seq < ref_seq:
        return Finding(
            "truncated",
            seq + 1,
            f"the history ends at seq {seq} but {where} says it ended at {ref_seq}: "
            f"the newest {ref_seq - seq} rows were removed",
        )
    if seq > ref_seq:
        return _beyond_anchor(ref_seq)
    if hash_ != ref_hash:
        return Finding("edited", seq, f"row {seq} is not the row {where} records as the newest")
    return None


def anchor_finding(
    found: tuple[int, str],
    anchor: Anchor | None,
    anchor_error: str,
    meta: tuple[int, str] | None,
    store_id: str,
) -> Finding | None:
    """Whether the chain's verified tail agrees with the meta row and the head file."""
    if meta is None:
        if found[0] != 0:
            return Finding("truncated", None, "the meta table lost its head anchor")
    else:
        problem = _compare(found, meta[0], meta[1], "the meta table")
        if problem is not None:
            return problem
    if anchor is None:
        if found[0] == 0:
            return None
        why = anchor_error or "missing"
        return Finding("truncated", None, f"the head anchor file is {why}: cannot rule out a truncated tail")
    if anchor.store_id != store_id:
        return Finding("truncated", None, "the head anchor file belongs to another database")
    if anchor.accepts(*found):
        return None
    if anchor.pending_seq is not None and anchor.pending_hash is not None and found[0] > anchor.seq:
        return _compare(found, anchor.pending_seq, anchor.pending_hash, "the head anchor file")
    return _compare(found, anchor.seq, anchor.hash, "the head anchor file")


def recorded_finding(conn: sqlite3.Connection) -> Finding | None:
    """A mismatch that opening the store found and wrote into the history itself."""
    for seq, body in conn.execute("SELECT seq, body FROM events WHERE kind = 'daemon' ORDER BY seq"):
        data = _decode(body)
        if isinstance(data, dict) and data.get("event") == "anchor_mismatch":
            return Finding(
                str(data.get("what", "truncated")),
                data.get("first_bad_seq"),
                f"found when the store was opened (recorded at seq {seq}): {data.get('message', '')}",
            )
    return None


# ---------------------------------------------------------------------------------------
# Grants: the table is derived state; replaying the grant events must reproduce it.

GRANT_FIELDS = (
    "id",
    "fingerprint",
    "scope",
    "effect",
    "session_id",
    "created_at",
    "expires_at",
    "uses",
    "last_used_at",
    "revoked_at",
    "note",
    "tool",
    "summary",
    "seq",
)


def replay_grants(conn: sqlite3.Connection) -> tuple[dict[str, dict[str, Any]], Finding | None]:
    grants: dict[str, dict[str, Any]] = {}
    query = (
        "SELECT seq, kind, body FROM events WHERE kind IN ('grant', 'grant_revoked', 'grant_used') "
        "ORDER BY seq"
    )
    for seq, kind, body in conn.execute(query):
        data = _decode(body)
        if kind == "grant":
            g = data["grant"]
            row = {name: g.get(name) for name in GRANT_FIELDS[:11]}
            row.update(tool=data.get("tool", ""), summary=data.get("summary", ""), seq=seq)
            grants[row["id"]] = row
            continue
        used = grants.get(data.get("grant_id"))
        if used is None:
            return grants, Finding(
                "edited", seq, f"event {seq} ({kind}) names a grant that was never created"
            )
        if kind == "grant_revoked":
            used["revoked_at"] = data["at"]
        else:
            used["uses"] += data.get("count", 1)
            used["last_used_at"] = data["at"]
    return grants, None


def grants_finding(conn: sqlite3.Connection) -> tuple[int, Finding | None]:
    expected, problem = replay_grants(conn)
    if problem is not None:
        return len(expected), problem
    actual = {
        row[0]: dict(zip(GRANT_FIELDS, row, strict=True))
        for row in conn.execute(f"SELECT {', '.join(GRANT_FIELDS)} FROM grants")  # noqa: S608
    }
    for grant_id, want in sorted(expected.items(), key=lambda item: item[1]["seq"]):
        have = actual.get(grant_id)
        if have is None:
            return len(expected), Finding(
                "deleted", want["seq"], f"grant {grant_id!r} (created at seq {want['seq']}) is missing"
            )
        for name in GRANT_FIELDS:
            if have[name] != want[name]:
                return len(expected), Finding(
                    "edited",
                    want["seq"],
                    f"grant {grant_id!r} (created at seq {want['seq']}): {name} in the grants table "
                    f"differs from its events",
                )
    extra = sorted(actual.keys() - expected.keys())
    if extra:
        return len(expected), Finding(
            "inserted", None, f"grant {extra[0]!r} is in the grants table but no event created it"
        )
    return len(expected), None
