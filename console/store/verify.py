"""Checking the history: the chain row by row, its anchors, and the grants it implies.

A tampered history is reported by the first row that is wrong and how it is wrong:

- ``edited``: a row's content no longer matches its hash (or a row was rewritten
  together with its hash, which its successor then disowns);
- ``deleted``: rows are missing (a gap in the seqs, or a row whose predecessor is gone);
- ``reordered``: rows still exist but sit at seqs other than the ones they were sealed at;
- ``inserted``: a row that the chain or the anchors never had;
- ``truncated``: the newest rows are gone (the chain is shorter than its anchors);
- ``unaccepted``: rows that start-up found past the head anchor (a power loss, or rows
  forged together with the meta row): they stay flagged, and their grants are not
  honoured, until the operator accepts them (``agent-console history accept``);
- ``search_index``: the search index no longer matches the events (rows deleted from
  or altered in it would hide decisions from ``history --search``);
- ``external_anchor``: the history disagrees with a head the operator copied elsewhere
  (``history anchor --to FILE``, checked by ``history verify --anchor FILE``).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import msgspec

from console.store.chain import GENESIS, Anchor, row_hash
from console.store.event import HASHED_COLUMNS, SEARCH_COLUMNS, UNSEARCHED_KINDS

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
    # The newest verified row (what `history anchor --to` copies), and the store's id.
    tail_seq: int = 0
    tail_hash: str = GENESIS
    store_id: str = ""
    # Rows start-up found past the head anchor that the operator has not accepted.
    unaccepted: tuple[tuple[int, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "first_bad_seq": self.first_bad_seq,
            "what": self.what,
            "message": self.message,
            "grants_checked": self.grants_checked,
            "tail_seq": self.tail_seq,
            "tail_hash": self.tail_hash,
            "unaccepted": [list(r) for r in self.unaccepted],
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


PROGRESS_EVERY = 4096  # rows between two progress reports


def walk(
    conn: sqlite3.Connection,
    start: tuple[int, str] | None = None,
    anchored: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Walk:
    """Check every row (or every row after ``start``) in seq order; stop at the first bad one.

    ``anchored`` is the newest seq the anchors vouch for: rows after it that chain
    correctly are still reported as inserted. ``progress`` is told the rows checked so
    far every few thousand rows (a long walk runs in the background of a daemon).
    """
    prev_seq, prev_hash = start or (0, GENESIS)
    checked = 0
    for row in _rows_after(conn, None if start is None else prev_seq):
        if progress is not None and checked % PROGRESS_EVERY == 0 and checked:
            progress(checked)
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
        try:
            data = _decode(body)
        except msgspec.DecodeError:
            return Finding("edited", seq, f"row {seq}'s body is not JSON")
        if isinstance(data, dict) and data.get("event") == "anchor_mismatch":
            return Finding(
                str(data.get("what", "truncated")),
                data.get("first_bad_seq"),
                f"found when the store was opened (recorded at seq {seq}): {data.get('message', '')}",
            )
    return None


def external_finding(
    conn: sqlite3.Connection, found: tuple[int, str], external: Anchor, store_id: str
) -> Finding | None:
    """Whether the (already walked) chain contains the row a copied head names."""
    if external.store_id != store_id:
        return Finding("external_anchor", None, "the anchor file belongs to another history database")
    if found[0] < external.seq:
        return Finding(
            "truncated",
            found[0] + 1,
            f"the history ends at seq {found[0]} but the anchor file says it reached {external.seq}",
        )
    row = conn.execute("SELECT hash FROM events WHERE seq = ?", (external.seq,)).fetchone()
    have = GENESIS if external.seq == 0 else (row[0] if row else None)
    if have != external.hash:
        return Finding(
            "external_anchor",
            external.seq,
            f"row {external.seq} is not the row the anchor file recorded: the history up to it was rewritten",
        )
    return None


# ---------------------------------------------------------------------------------------
# Rows start-up could not vouch for


def _inside(seq: int, ranges: list[tuple[int, int]]) -> bool:
    return any(low <= seq <= high for low, high in ranges)


def unaccepted_ranges(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """Ranges of seqs flagged ``unanchored`` at start-up and not accepted since.

    An acceptance counts only for ranges flagged before it, and only when it does not
    itself lie in any flagged range: a forger who appends a fake acceptance among forged
    rows gets those rows flagged at the next start, acceptance included.
    """
    flagged: list[tuple[int, int, int]] = []  # (flagged at seq, from, to)
    accepts: list[tuple[int, int]] = []  # (at seq, through)
    query = "SELECT seq, body FROM events WHERE kind = 'daemon' ORDER BY seq"
    for seq, body in conn.execute(query):
        try:
            data = _decode(body)
        except msgspec.DecodeError:
            continue
        if not isinstance(data, dict):
            continue
        event = data.get("event")
        if event == "unanchored":
            low, high = data.get("from_seq"), data.get("to_seq")
            if isinstance(low, int) and isinstance(high, int) and 1 <= low <= high:
                flagged.append((seq, low, high))
        elif event == "rows_accepted" and isinstance(data.get("through_seq"), int):
            accepts.append((seq, data["through_seq"]))
    spans = [(low, high) for _, low, high in flagged]
    valid = [(at, through) for at, through in accepts if not _inside(at, spans)]
    return [
        (low, high)
        for at_flag, low, high in flagged
        if not any(at > at_flag and high <= through for at, through in valid)
    ]


def unaccepted_finding(ranges: list[tuple[int, int]]) -> Finding | None:
    if not ranges:
        return None
    spans = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)
    return Finding(
        "unaccepted",
        ranges[0][0],
        f"rows {spans} were found past the head anchor at start-up (a power loss, or rows written "
        "outside agent-console): their grants are not honoured until you review them "
        f"(agent-console history export) and accept them (agent-console history accept --through {ranges[-1][1]})",
    )


# ---------------------------------------------------------------------------------------
# The search index against the events

_VOCAB_ROWS = "temp.agent_console_search_terms"
_LENGTHS = ", ".join(f"max(length({c}) - 2, 0)" for c in SEARCH_COLUMNS)
_HAS_TEXT = " OR ".join(f"{c} <> ''" for c in SEARCH_COLUMNS)


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (FTS5's docsize record: one token count per column)."""
    out, value, i = [], 0, 0
    while i < len(blob):
        for n in range(9):
            byte = blob[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
        value = 0
    return out


def _vocab(conn: sqlite3.Connection, name: str, kind: str) -> None:
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, events_fts, {kind})")


def indexed_seq(conn: sqlite3.Connection) -> int | None:
    """Through which seq the search index is complete (``meta.indexed_seq``); None when
    the history does not say, and then every row must be indexed."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'indexed_seq'").fetchone()
    if row is None or not str(row[0]).isdigit():
        return None
    return int(row[0])


def search_index_finding(conn: sqlite3.Connection, indexed_through: int | None = None) -> Finding | None:
    """Whether every indexed event has exactly its own trigrams in ``events_fts``.

    The trigram tokenizer makes one token per three characters of each column, so an
    event's token counts are known from its text. Two fast checks: the index's own
    per-event sizes (``events_fts_docsize``) against the text, and the index's total
    of token instances against their sum; only when the total disagrees is every
    instance walked to name the event. ``conn`` must be inside its read snapshot.
    Request rows are not indexed by the writer (older histories indexed them): for
    them either no entry or their exact entry is right. So for rows past
    ``indexed_through`` (by default ``meta.indexed_seq``; the writing process passes what
    its writer knows), which the writer indexes shortly after their commit.
    """
    through = indexed_seq(conn) if indexed_through is None else indexed_through
    sizes = conn.execute("SELECT id, sz FROM events_fts_docsize ORDER BY id")
    expected = conn.execute(
        f"SELECT seq, kind, {_LENGTHS} FROM events WHERE {_HAS_TEXT} ORDER BY seq"  # noqa: S608
    )
    total = 0
    have = next(sizes, None)
    for seq, kind, *lengths in expected:
        if have is not None and have[0] < seq:
            return _extra(have[0])
        counts = _varints(bytes(have[1])) if have is not None and have[0] == seq else None
        if have is not None and have[0] == seq:
            have = next(sizes, None)
        if counts == lengths:
            total += sum(lengths)
            continue
        if counts is None and (
            kind in UNSEARCHED_KINDS or not any(lengths) or (through is not None and seq > through)
        ):
            continue
        return _altered(seq)
    if have is not None:
        return _extra(have[0])
    return _terms_finding(conn, through)


def _altered(seq: int) -> Finding:
    return Finding(
        "search_index",
        seq,
        f"the search index does not match event {seq} (entries removed or altered): "
        "history --search would not find it as it is",
    )


def _extra(seq: int) -> Finding:
    return Finding("search_index", seq, f"the search index holds entries for event {seq}, which has none")


_CHECK = "temp.agent_console_search_check"
_CHECK_TERMS = "temp.agent_console_search_check_terms"
_COLS = ", ".join(SEARCH_COLUMNS)


@contextlib.contextmanager
def _temp_writes(conn: sqlite3.Connection) -> Iterator[None]:
    """Let a query-only reader write its temp schema (never the database file)."""
    query_only = conn.execute("PRAGMA query_only").fetchone()[0]
    conn.execute("PRAGMA query_only = OFF")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA query_only = {int(query_only)}")


def _terms_finding(conn: sqlite3.Connection, through: int | None) -> Finding | None:
    """Re-tokenize the events into a throw-away index (SQLite's own trigram tokenizer,
    so no second implementation can disagree) and compare, term by term, how many
    events each term is in. Catches an entry rewritten with other text of the same
    length, which the sizes cannot. About 1.5 s per 100,000 events."""
    unsearched = ", ".join(f"'{k}'" for k in sorted(UNSEARCHED_KINDS))
    with _temp_writes(conn):
        conn.execute(f"DROP TABLE IF EXISTS {_CHECK}")
        conn.execute(
            f"CREATE VIRTUAL TABLE {_CHECK} USING fts5({_COLS}, content='', tokenize='trigram', detail='none')"
        )
        conn.execute(
            f"INSERT INTO {_CHECK}(rowid, {_COLS}) SELECT seq, {_COLS} FROM events "  # noqa: S608
            f"WHERE ({_HAS_TEXT}) AND ((kind NOT IN ({unsearched}) AND seq <= ?) "
            "OR seq IN (SELECT id FROM events_fts_docsize))",
            (through if through is not None else 2**62,),
        )
        _vocab(conn, _VOCAB_ROWS, "row")
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {_CHECK_TERMS} "
            "USING fts5vocab(temp, agent_console_search_check, row)"
        )
    try:
        differs = conn.execute(
            f"SELECT term FROM (SELECT term, doc FROM {_VOCAB_ROWS} EXCEPT SELECT term, doc FROM {_CHECK_TERMS}) "  # noqa: S608
            f"UNION SELECT term FROM (SELECT term, doc FROM {_CHECK_TERMS} EXCEPT SELECT term, doc FROM {_VOCAB_ROWS}) "
            "LIMIT 1"
        ).fetchone()
        if differs is None:
            return None
        phrase = '"' + str(differs[0]).replace('"', '""') + '"'
        indexed = {
            r[0] for r in conn.execute("SELECT rowid FROM events_fts WHERE events_fts MATCH ?", (phrase,))
        }
        wanted = {
            r[0]
            for r in conn.execute(
                f"SELECT rowid FROM {_CHECK} WHERE agent_console_search_check MATCH ?",  # noqa: S608
                (phrase,),
            )
        }
        odd = sorted(indexed ^ wanted)
        return (
            _altered(odd[0])
            if odd
            else Finding("search_index", None, "the search index's terms do not match the events' text")
        )
    finally:
        with _temp_writes(conn):
            conn.execute(f"DROP TABLE IF EXISTS {_CHECK_TERMS}")
            conn.execute(f"DROP TABLE IF EXISTS {_CHECK}")


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
    try:
        expected, problem = replay_grants(conn)
    except (msgspec.DecodeError, KeyError, TypeError, AttributeError):
        return 0, Finding("edited", None, "a grant event's body is not what agent-console writes")
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
