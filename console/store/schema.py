"""The database schema as an ordered list of migrations.

``PRAGMA user_version`` is the number of migrations applied. Opening a database runs
the missing ones in order, each in its own transaction, so a crash mid-way leaves a
database at a consistent earlier version. Never edit a released migration; append one.
"""

from __future__ import annotations

import sqlite3

_TEXT = "TEXT NOT NULL DEFAULT ''"

_V1_EVENTS = (
    f"""
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        at REAL NOT NULL,
        request_id {_TEXT},
        fingerprint {_TEXT},
        tool {_TEXT},
        executable {_TEXT},
        command {_TEXT},
        cwd {_TEXT},
        workspace_root {_TEXT},
        session_id {_TEXT},
        verdict {_TEXT},
        source {_TEXT},
        scope {_TEXT},
        reason {_TEXT},
        note {_TEXT},
        justification {_TEXT},
        peer_pid INTEGER,
        latency_ms REAL,
        body TEXT NOT NULL DEFAULT '{{}}',
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL
    )
    """,
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    # Each index ends in the rowid (seq), so `col = ? ORDER BY seq DESC` walks it backwards.
    "CREATE INDEX events_request ON events(request_id)",
    "CREATE INDEX events_fingerprint ON events(fingerprint)",
    "CREATE INDEX events_tool ON events(tool)",
    "CREATE INDEX events_executable ON events(executable)",
    "CREATE INDEX events_session ON events(session_id)",
    "CREATE INDEX events_kind ON events(kind)",
    # A backstop for the broker: a request is decided once.
    "CREATE UNIQUE INDEX events_one_decision ON events(request_id) WHERE kind = 'decision' AND request_id <> ''",
    """
    CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'history events are append-only'); END
    """,
    """
    CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'history events are append-only'); END
    """,
)

_V2_GRANTS = (
    f"""
    CREATE TABLE grants (
        id TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        scope TEXT NOT NULL,
        effect TEXT NOT NULL,
        session_id {_TEXT},
        created_at REAL NOT NULL,
        expires_at REAL,
        uses INTEGER NOT NULL DEFAULT 0,
        last_used_at REAL,
        revoked_at REAL,
        note {_TEXT},
        tool {_TEXT},
        summary {_TEXT},
        seq INTEGER NOT NULL
    )
    """,
    "CREATE INDEX grants_fingerprint ON grants(fingerprint)",
)

# Trigram tokens make every search a case-insensitive substring match, which is what an
# operator typing part of a path (`hooks/pre-com`) expects.
_V3_SEARCH = (
    """
    CREATE VIRTUAL TABLE events_fts USING fts5(
        command, cwd, justification, reason, note,
        content='events', content_rowid='seq', tokenize='trigram', detail='full'
    )
    """,
    """
    CREATE TRIGGER events_fts_insert AFTER INSERT ON events
    WHEN new.command <> '' OR new.cwd <> '' OR new.justification <> '' OR new.reason <> ''
         OR new.note <> ''
    BEGIN
        INSERT INTO events_fts(rowid, command, cwd, justification, reason, note)
        VALUES (new.seq, new.command, new.cwd, new.justification, new.reason, new.note);
    END
    """,
    "INSERT INTO events_fts(events_fts) VALUES ('rebuild')",
)

# The writer now indexes each batch with one statement before COMMIT: FTS5 flushes its
# pending terms at every statement savepoint, and a trigger opens one per inserted row,
# which made every row write its own tiny index segment (about five times the cost).
_V4_INDEX_IN_WRITER = ("DROP TRIGGER IF EXISTS events_fts_insert",)

# The search index is written after each commit rather than in it (console/store/
# writer.py); ``indexed_seq`` says through which seq it is complete. Until now every batch
# indexed its own rows, so a history that reaches this migration is complete.
_V5_INDEXED_SEQ = (
    "INSERT OR REPLACE INTO meta(key, value) "
    "SELECT 'indexed_seq', CAST(coalesce(max(seq), 0) AS TEXT) FROM events",
)

# The search index merges its segments only when the writer asks (console/store/writer.py,
# between decisions), never inside an index pass: FTS5's automatic merging made one pass
# in a few hundred take several milliseconds of CPU, and every decision that arrived
# meanwhile waited for it (the 1,000 requests/s p99).
_V6_MERGE_WHEN_IDLE = ("INSERT INTO events_fts(events_fts, rank) VALUES ('automerge', 0)",)

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    _V1_EVENTS,
    _V2_GRANTS,
    _V3_SEARCH,
    _V4_INDEX_IN_WRITER,
    _V5_INDEXED_SEQ,
    _V6_MERGE_WHEN_IDLE,
)
SCHEMA_VERSION = len(MIGRATIONS)


class NewerSchema(Exception):
    def __init__(self, found: int) -> None:
        super().__init__(
            f"the history database has schema version {found}, newer than this agent-console "
            f"understands ({SCHEMA_VERSION}); upgrade agent-console"
        )
        self.found = found


def version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> list[int]:
    """Apply the migrations up to ``target``; returns the versions applied.

    ``conn`` must be in autocommit mode (``isolation_level=None``).
    """
    current = version(conn)
    if current > SCHEMA_VERSION:
        raise NewerSchema(current)
    applied = []
    for number in range(current + 1, target + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read inside the write lock: another opener may have migrated meanwhile.
            if version(conn) >= number:
                conn.execute("ROLLBACK")
                continue
            for statement in MIGRATIONS[number - 1]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        applied.append(number)
    return applied
