"""The daemon's history: durable, tamper-evident, searchable (see the package docstring)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import queue
import sqlite3
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from console.contract import strictjson
from console.policy.grants import Effect, Grant, GrantScope
from console.store import schema
from console.store import verify as checks
from console.store.chain import GENESIS, HEAD_SUFFIX, Anchor, HeadFile
from console.store.errors import StoreConflict, StoreUnavailable, unavailable
from console.store.event import (
    RECORD_COLUMNS,
    Event,
    EventKind,
    daemon_event,
    encode,
    grant_event,
    record_from_row,
)
from console.store.query import HistoryPage, HistoryQuery, build
from console.store.verify import VerifyReport
from console.store.writer import Tx, Writer, WriterStats, index_missing

log = logging.getLogger(__name__)

DEFAULT_COUNT_CAP = 10_000
WAL_SIZE_LIMIT = 32 << 20
_EXPORT_CHUNK = 1000
# How far back (events) a new daemon looks for requests its predecessor left pending.
ORPHAN_WINDOW = 50_000
_GRANT_COLUMNS = ", ".join(checks.GRANT_FIELDS)


def _connect(
    path: Path, *, busy_timeout_s: float, reader: bool, immutable: bool = False
) -> sqlite3.Connection:
    # A WAL database on a read-only filesystem cannot create its -shm file; nothing can
    # be writing it there either, so it is opened as immutable.
    target = f"file:{urllib.parse.quote(str(path))}?immutable=1" if immutable else str(path)
    conn = sqlite3.connect(
        target, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s, uri=immutable
    )
    try:
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA temp_store = MEMORY")
        if reader:
            conn.execute("PRAGMA query_only = ON")
            conn.execute("PRAGMA cache_size = -32768")
        else:
            # The writer checkpoints between batches, so a commit never waits for one.
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
    except BaseException:
        conn.close()
        raise
    return conn


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counters since open: batches committed and failed, jobs and events written."""

    commits: int
    failed_batches: int
    jobs: int
    events: int
    largest_batch: int


class Store:
    """The history database. Writes go through one group-commit thread; reads use a pool.

    Every write method returns a :class:`concurrent.futures.Future` that resolves only
    once its change is committed to disk, or fails with :class:`StoreUnavailable`
    (nothing of it was stored) or :class:`StoreConflict` (it contradicts the store).
    Cancelling such a future does not cancel the write. Read methods block and may be
    called from any thread; they raise :class:`StoreUnavailable` on I/O faults.
    """

    def __init__(
        self,
        path: Path,
        head: HeadFile | None,
        store_id: str,
        tail: tuple[int, str],
        max_batch: int,
        busy_timeout_s: float,
        *,
        readonly: bool = False,
        immutable: bool = False,
    ) -> None:
        self.path = path
        self.readonly = readonly
        self.opened_tail = tail  # (seq, hash) of the newest row when opened
        # What opening noticed about the anchors (also recorded as `daemon` events).
        self.open_notes: tuple[str, ...] = ()
        # The tail-and-anchor check of opening: what it found wrong (a replaced database,
        # a truncated tail). A full verify finds the rest (rows edited or deleted inside).
        self.open_findings: tuple[checks.Finding, ...] = ()
        # Rows past the head anchor, not yet accepted by the operator (see unaccepted()).
        self.unaccepted_rows: tuple[tuple[int, int], ...] = ()
        self._immutable = immutable
        self._head = head
        self._store_id = store_id
        self._busy = busy_timeout_s
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._all_readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._writer: Writer | None = None
        if head is not None and not readonly:
            self._writer = Writer(
                lambda: _connect(path, busy_timeout_s=busy_timeout_s, reader=False),
                head,
                store_id,
                tail,
                max_batch,
            )

    # -- opening and closing ---------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | str, *, max_batch: int = 2000, busy_timeout_s: float = 5.0) -> Store:
        """Open or create the history at ``path``, migrating it to the current schema.

        Takes an exclusive lock (one process writes a history at a time), sets WAL mode
        and ``synchronous=FULL``, and checks the chain's tail against its anchors: a
        mismatch is recorded in the history itself (``daemon`` event ``anchor_mismatch``)
        so that ``verify`` keeps reporting it. Raises :class:`StoreUnavailable`.
        """
        path = Path(path)
        if not path.parent.is_dir():
            raise StoreUnavailable(
                "cannot_open", f"the directory for the history ({path.parent}) does not exist"
            )
        try:
            head, created = HeadFile.open(str(path) + HEAD_SUFFIX)
        except OSError as exc:
            raise unavailable(exc, "opening the history's head anchor") from None
        try:
            try:
                fcntl.flock(head.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreUnavailable(
                    "in_use", f"the history {path} is already open in another agent-console process"
                ) from None
            return cls._open_locked(path, head, created, max_batch, busy_timeout_s)
        except BaseException:
            head.close()
            raise

    @classmethod
    def _open_locked(
        cls, path: Path, head: HeadFile, created: bool, max_batch: int, busy_timeout_s: float
    ) -> Store:
        try:
            if not path.exists():
                os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600))
            conn = _connect(path, busy_timeout_s=busy_timeout_s, reader=False)
        except (OSError, sqlite3.Error) as exc:
            raise unavailable(exc, f"opening {path}") from None
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreUnavailable(
                    "cannot_open", f"{path} cannot use write-ahead logging (journal mode is {mode})"
                )
            schema.migrate(conn)
            store_id, notes = _reconcile(conn, head, created)
            indexed = index_missing(conn)
            if indexed:
                log.info("history: indexed %d rows a previous daemon had not indexed for search", indexed)
            found = checks.tail(conn)
        except schema.NewerSchema as exc:
            raise StoreUnavailable("newer_schema", str(exc)) from None
        except (OSError, sqlite3.Error, ValueError) as exc:
            raise unavailable(exc, f"opening {path}") from None
        finally:
            conn.close()
        store = cls(path, head, store_id, found, max_batch, busy_timeout_s)
        store.open_notes = tuple(n.note for n in notes)
        store.open_findings = tuple(
            checks.Finding(str(b.get("what", "")), b.get("first_bad_seq"), str(b.get("message", "")))
            for b in (n.body for n in notes)
            if b.get("event") == "anchor_mismatch"
        )
        try:
            if notes:
                store.append(*notes).result()
            store.unaccepted_rows = tuple(store.unaccepted())
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def open_readonly(cls, path: Path | str, *, busy_timeout_s: float = 5.0) -> Store:
        """Open an existing history for reading, beside a daemon that may be writing it.

        Takes no lock and never writes (so no migration and no anchor repair); write
        methods fail with ``StoreUnavailable`` reason ``read_only``. :meth:`verify`
        works: it pairs its snapshot with a head-anchor read that no commit raced.
        """
        path = Path(path)
        if not path.is_file():
            raise StoreUnavailable("cannot_open", f"there is no history at {path}")
        immutable = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
        try:
            conn = _connect(path, busy_timeout_s=busy_timeout_s, reader=True, immutable=immutable)
        except sqlite3.Error as exc:
            raise unavailable(exc, f"opening {path}") from None
        try:
            found = schema.version(conn)
            if found > schema.SCHEMA_VERSION:
                raise StoreUnavailable("newer_schema", str(schema.NewerSchema(found)))
            if found < schema.SCHEMA_VERSION:
                raise StoreUnavailable(
                    "cannot_open",
                    f"the history at {path} has schema version {found} and needs version "
                    f"{schema.SCHEMA_VERSION}; start the daemon once to migrate it",
                )
            row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
            tail = checks.tail(conn)
        except sqlite3.Error as exc:
            raise unavailable(exc, f"reading {path}") from None
        finally:
            conn.close()
        head = HeadFile.open_readonly(str(path) + HEAD_SUFFIX)
        store_id = row[0] if row else ""
        return cls(path, head, store_id, tail, 1, busy_timeout_s, readonly=True, immutable=immutable)

    def close(self) -> None:
        """Finish every queued write, then release the database and its lock."""
        if self._closed:
            return
        if self._writer is not None:
            self._writer.close()
        with self._readers_lock:
            self._closed = True
            for conn in self._all_readers:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._all_readers.clear()
        if self._head is not None:
            self._head.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self) -> StoreStats:
        s = self._writer.stats if self._writer is not None else WriterStats()
        return StoreStats(s.commits, s.failed_batches, s.jobs, s.events, s.largest_batch)

    def _searchable(self) -> None:
        """Wait until every committed row is in the search index (the writer indexes
        shortly after each commit; a search asks it to do so now)."""
        if self._writer is not None:
            self._writer.catch_up().result()

    def _submit(self, job: Callable[[Tx], Any]) -> Future[Any]:
        if self._writer is None:
            return _failed(StoreUnavailable("read_only", "this history was opened read-only"))
        return self._writer.submit(job)

    # -- writes ------------------------------------------------------------------------------

    def append(self, *events: Event, search_later: bool = False) -> Future[list[int]]:
        """Append events in one transaction; resolves to their seqs once durable.

        ``search_later``: resolve without waiting for their search index entries, which
        the writer adds right after (this store's searches wait for them; see writer.py).
        """
        try:
            rows = [encode(e) for e in events]
        except (TypeError, ValueError) as exc:
            return _failed(exc)

        def job(tx: Tx) -> list[int]:
            try:
                return tx.append(rows, search_later=search_later)
            except sqlite3.IntegrityError as exc:
                if "request_id" in str(exc):
                    raise StoreConflict(
                        "that request already has a decision; a request is decided once"
                    ) from None
                raise

        return self._submit(job)

    def add_grant(self, grant: Grant, *, tool: str = "", summary: str = "") -> Future[int]:
        """Store a grant and its ``grant`` event together; resolves to the event's seq."""
        try:
            if not isinstance(grant, Grant):
                raise TypeError("add_grant() takes a console.policy.grants.Grant")
            row = encode(grant_event(grant, tool=tool, summary=summary))
            values = (
                grant.id,
                grant.fingerprint,
                GrantScope(grant.scope).value,
                Effect(grant.effect).value,
                grant.session_id,
                grant.created_at,
                grant.expires_at,
                grant.uses,
                grant.last_used_at,
                grant.revoked_at,
                grant.note,
                tool,
                summary,
            )
        except (TypeError, ValueError) as exc:
            return _failed(exc)

        def job(tx: Tx) -> int:
            (seq,) = tx.append([row])
            try:
                tx.conn.execute(
                    f"INSERT INTO grants ({_GRANT_COLUMNS}) VALUES ({', '.join('?' * 14)})",  # noqa: S608
                    (*values, seq),
                )
            except sqlite3.IntegrityError:
                raise StoreConflict(f"a grant with id {grant.id!r} already exists") from None
            return seq

        return self._submit(job)

    def revoke_grant(self, grant_id: str, at: float) -> Future[bool]:
        """Revoke a grant; resolves to False if it is unknown or already revoked."""

        def job(tx: Tx) -> bool:
            found = tx.conn.execute(
                "SELECT fingerprint, scope, tool, session_id FROM grants WHERE id = ? AND revoked_at IS NULL",
                (grant_id,),
            ).fetchone()
            if found is None:
                return False
            tx.conn.execute("UPDATE grants SET revoked_at = ? WHERE id = ?", (at, grant_id))
            fingerprint, scope, tool, session_id = found
            event = Event(
                kind=EventKind.GRANT_REVOKED,
                at=at,
                fingerprint=fingerprint,
                scope=scope,
                tool=tool,
                session_id=session_id,
                body={"grant_id": grant_id, "at": at},
            )
            tx.append([encode(event)])
            return True

        problem = _grant_call_problem(grant_id, at)
        if problem is not None:
            return _failed(problem)
        at = float(at)
        return self._submit(job)

    def use_grant(self, grant_id: str, at: float, *, request_id: str = "", count: int = 1) -> Future[bool]:
        """Count ``count`` uses of a grant (the last at ``at``); False if it may not be used.

        Atomic: a ``once`` allow grant resolves True for exactly one caller. Revoked and
        expired (``at >= expires_at``) grants resolve False. Writes a ``grant_used`` event
        (linked to ``request_id``) in the same transaction. ``count`` > 1 lets a caller
        record a standing grant's uses in one event instead of one per use.
        """
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            return _failed(ValueError("count must be a positive integer"))

        def job(tx: Tx) -> bool:
            cursor = tx.conn.execute(
                """
                UPDATE grants SET uses = uses + ?3, last_used_at = ?1
                WHERE id = ?2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?1)
                  AND NOT (scope = 'once' AND effect = 'allow' AND (uses >= 1 OR ?3 > 1))
                RETURNING fingerprint, scope, tool, session_id
                """,
                (at, grant_id, count),
            )
            found = cursor.fetchone()
            if found is None:
                return False
            fingerprint, scope, tool, session_id = found
            event = Event(
                kind=EventKind.GRANT_USED,
                at=at,
                request_id=request_id,
                fingerprint=fingerprint,
                scope=scope,
                tool=tool,
                session_id=session_id,
                body={"grant_id": grant_id, "at": at, "count": count},
            )
            tx.append([encode(event)])
            return True

        problem = _grant_call_problem(grant_id, at, request_id)
        if problem is not None:
            return _failed(problem)
        at = float(at)
        return self._submit(job)

    def accept(self, through_seq: int, at: float, note: str = "") -> Future[list[tuple[int, int]]]:
        """Accept every flagged range ending at or before ``through_seq`` (the operator
        reviewed those rows); resolves to the ranges accepted ([] when none was open)."""
        if isinstance(through_seq, bool) or not isinstance(through_seq, int) or through_seq < 1:
            return _failed(ValueError("through_seq must be a positive integer"))

        def job(tx: Tx) -> list[tuple[int, int]]:
            accepted = [r for r in checks.unaccepted_ranges(tx.conn) if r[1] <= through_seq]
            if accepted:
                event = daemon_event(
                    at=at,
                    note=f"operator accepted unanchored rows through seq {through_seq}"
                    + (f": {note}" if note else ""),
                    body={
                        "event": "rows_accepted",
                        "through_seq": through_seq,
                        "ranges": [list(r) for r in accepted],
                    },
                )
                tx.append([encode(event)])
            return accepted

        future: Future[list[tuple[int, int]]] = self._submit(job)

        def refresh(done: Future[list[tuple[int, int]]]) -> None:
            if not done.exception():
                self.unaccepted_rows = tuple(r for r in self.unaccepted_rows if r[1] > through_seq)

        future.add_done_callback(refresh)
        return future

    def unaccepted(self) -> list[tuple[int, int]]:
        """Ranges of rows that start-up found past the head anchor and the operator has
        not accepted: allow grants created in them are not honoured."""
        with self._reader("reading unaccepted rows") as conn:
            return checks.unaccepted_ranges(conn)

    # -- reads -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _reader(self, doing: str) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise StoreUnavailable("closed", "the history store is closed")
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            try:
                conn = _connect(self.path, busy_timeout_s=self._busy, reader=True, immutable=self._immutable)
            except sqlite3.Error as exc:
                raise unavailable(exc, doing) from None
            with self._readers_lock:
                if self._closed:
                    conn.close()
                    raise StoreUnavailable("closed", "the history store is closed") from None
                self._all_readers.append(conn)
        try:
            yield conn
        except sqlite3.Error as exc:
            raise unavailable(exc, doing) from None
        finally:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            with self._readers_lock:
                if not self._closed:
                    self._readers.put(conn)

    def grants(self, *, include_inactive: bool = False, now: float | None = None) -> list[Grant]:
        """Grants in creation order; by default only those that can still apply at ``now``.

        Inactive means revoked, expired, or a ``once`` allow grant already used.
        """
        with self._reader("reading grants") as conn:
            rows = conn.execute(f"SELECT {_GRANT_COLUMNS} FROM grants ORDER BY seq").fetchall()  # noqa: S608
            flagged = checks.unaccepted_ranges(conn)
        when = time.time() if now is None else now
        out = []
        for row in rows:
            in_flagged = any(low <= row[13] <= high for low, high in flagged)
            if in_flagged and row[3] == Effect.ALLOW.value and not include_inactive:
                continue  # created in rows start-up could not vouch for: not honoured until accepted
            g = Grant(
                id=row[0],
                fingerprint=row[1],
                scope=GrantScope(row[2]),
                effect=Effect(row[3]),
                session_id=row[4],
                created_at=row[5],
                expires_at=row[6],
                uses=row[7],
                last_used_at=row[8],
                revoked_at=row[9],
                note=row[10],
            )
            if include_inactive or not g.ended(when):
                out.append(g)
        return out

    def trusted_workspaces(self) -> list[dict[str, Any]]:
        """The runtime trusted workspace roots, replayed from their events in chain order:
        each ``{workspace_root, at, source, request_id}`` as last trusted, oldest first."""
        with self._reader("reading trusted workspaces") as conn:
            rows = conn.execute(
                "SELECT kind, workspace_root, at, source, request_id FROM events "
                "WHERE kind IN ('workspace_trusted', 'workspace_untrusted') ORDER BY seq"
            ).fetchall()
        current: dict[str, dict[str, Any]] = {}
        for kind, root, at, source, request_id in rows:
            current.pop(root, None)
            if kind == EventKind.WORKSPACE_TRUSTED:
                current[root] = {"workspace_root": root, "at": at, "source": source, "request_id": request_id}
        return list(current.values())

    def history(self, q: HistoryQuery) -> HistoryPage:
        """One page of matching events, newest first (see HistoryQuery for paging)."""
        ascending = q.after_seq is not None and q.before_seq is None
        sql, params = build(q, ascending=ascending, limit=q.limit + 1)
        if q.search:
            self._searchable()
        with self._reader("searching the history") as conn:
            rows = conn.execute(sql, params).fetchall()
        more = len(rows) > q.limit
        rows = rows[: q.limit]
        if ascending:
            rows.reverse()
        records = [record_from_row(r) for r in rows]
        if not records:
            return HistoryPage()
        newest, oldest = records[0].seq, records[-1].seq
        if ascending:
            return HistoryPage(records, older=oldest, newer=newest if more else None)
        return HistoryPage(records, older=oldest if more else None, newer=newest)

    def count(self, q: HistoryQuery, *, cap: int = DEFAULT_COUNT_CAP) -> int:
        """How many events match, counting at most ``cap`` (so a broad search stays fast).

        A result equal to ``cap`` means "``cap`` or more". Paging fields and ``limit``
        are ignored.
        """
        if cap < 1:
            raise ValueError("count cap must be at least 1")
        sql, params = build(
            replace(q, before_seq=None, after_seq=None), ascending=False, limit=cap, select="1"
        )
        if q.search:
            self._searchable()
        with self._reader("counting history") as conn:
            return int(conn.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0])  # noqa: S608

    def request_detail(self, request_id: str) -> dict[str, Any] | None:
        """Everything recorded about one request, or None when nothing is.

        Keys: ``request``, ``decision``, ``outcome`` (each a record dict or None),
        ``file_events`` and ``events`` (every record with this request id, oldest first).
        """
        sql, params = build(HistoryQuery(request_id=request_id, limit=1), ascending=True, limit=-1)
        with self._reader("reading a request") as conn:
            rows = conn.execute(sql, params).fetchall()
        if not rows:
            return None
        records = [record_from_row(r).to_dict() for r in rows]

        def first(kind: str) -> dict[str, Any] | None:
            return next((r for r in records if r["kind"] == kind), None)

        return {
            "request_id": request_id,
            "request": first(EventKind.REQUEST),
            "decision": first(EventKind.DECISION),
            "outcome": first(EventKind.OUTCOME),
            "file_events": [r for r in records if r["kind"] == EventKind.FILE_EVENT],
            "events": records,
        }

    def grant_rows(self, *, include_inactive: bool = False, now: float | None = None) -> list[dict[str, Any]]:
        """Grants as dicts, with the tool and command summary they were granted for
        (what the grants screen and `agent-console grants` show)."""
        grants = {g.id: g for g in self.grants(include_inactive=include_inactive, now=now)}
        with self._reader("reading grants") as conn:
            labels = {
                row[0]: (row[1], row[2]) for row in conn.execute("SELECT id, tool, summary FROM grants")
            }
        out = []
        for grant_id, g in grants.items():
            tool, summary = labels.get(grant_id, ("", ""))
            out.append({**g.to_dict(), "tool": tool, "summary": summary})
        return out

    def undecided_requests(self) -> list[dict[str, Any]]:
        """Requests since the last daemon start that never got a decision: what was
        pending when a daemon died. The next daemon records how they ended."""
        with self._reader("finding undecided requests") as conn:
            # Bounded: since the last start, and never more than the newest events (a
            # history written without start markers must not cost a scan of millions).
            started = conn.execute(
                "SELECT max(seq) FROM events WHERE kind = 'daemon' AND note = 'started'"
            ).fetchone()[0]
            head = conn.execute("SELECT max(seq) FROM events").fetchone()[0] or 0
            since = max(started or 0, head - ORPHAN_WINDOW)
            cols = ", ".join(f"r.{c}" for c in RECORD_COLUMNS)
            rows = conn.execute(
                f"SELECT {cols} FROM events AS r WHERE r.kind = 'request' AND r.seq > ? "  # noqa: S608
                "AND NOT EXISTS (SELECT 1 FROM events AS d WHERE d.request_id = r.request_id AND d.kind = 'decision') "
                "ORDER BY r.seq",
                (since,),
            ).fetchall()
        return [record_from_row(r).to_dict() for r in rows]

    def previous_decisions(self, tool: str, executable: str, limit: int = 20) -> list[dict[str, Any]]:
        """The newest decisions for the same tool and executable, newest first, as dicts."""
        if not 1 <= limit <= 1000:
            raise ValueError("limit must be between 1 and 1000")
        cols = ", ".join(f"e.{c}" for c in RECORD_COLUMNS)
        where = "e.executable = ? AND +e.tool = ? AND +e.kind = 'decision'"
        sql = f"SELECT {cols} FROM events AS e WHERE {where} ORDER BY e.seq DESC LIMIT ?"  # noqa: S608
        with self._reader("reading previous decisions") as conn:
            rows = conn.execute(sql, (executable, tool, limit)).fetchall()
        return [record_from_row(r).to_dict() for r in rows]

    def export_jsonl(self, out: IO[str], q: HistoryQuery | None = None) -> int:
        """Write matching records (all by default), oldest first, one JSON object a line.

        Each line is a record dict (every column, ``body`` as an object, ``prev_hash``
        and ``hash``), so a full export can be re-verified with the documented rule.
        ``limit`` is ignored; paging fields bound the range. Returns the line count.
        """
        base = q or HistoryQuery()
        cursor_seq = base.after_seq
        written = 0
        if base.search:
            self._searchable()
        with self._reader("exporting the history") as conn:
            conn.execute("BEGIN")
            while True:
                sql, params = build(replace(base, after_seq=cursor_seq), ascending=True, limit=_EXPORT_CHUNK)
                rows = conn.execute(sql, params).fetchall()
                for row in rows:
                    out.write(strictjson.dumps(record_from_row(row).to_dict()) + "\n")
                written += len(rows)
                if len(rows) < _EXPORT_CHUNK:
                    return written
                cursor_seq = rows[-1][0]

    def _snapshot_with_anchor(self, conn: sqlite3.Connection) -> tuple[Anchor | None, str, int | None]:
        """Start a read snapshot on ``conn`` and read the head anchor that matches it, and
        (in the writing process) the seq through which the snapshot's search index is
        complete, as the writer knows it (None: ``meta.indexed_seq`` says).

        In the writing process, the writer's lock keeps batches out meanwhile. Beside
        another process, the anchor is read before and after the snapshot starts until
        both reads agree: every batch writes the anchor before it commits, so an
        unchanged anchor names any batch the snapshot could contain.
        """

        def read() -> bytes | None:
            return None if self._head is None else self._head.read_bytes()

        if self._writer is not None:
            with self._writer.lock:
                indexed = self._writer.indexed_through()
                conn.execute("BEGIN")
                conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()
                return (*_parse_anchor(read()), indexed)
        for _ in range(100):
            before = read()
            conn.execute("BEGIN")
            conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()
            after = read()
            if before == after:
                return (*_parse_anchor(after), None)
            conn.execute("ROLLBACK")
            time.sleep(0.001)
        raise StoreUnavailable("locked", "the history kept changing while verify tried to read its anchor")

    def verify(
        self, external: Anchor | None = None, *, progress: Callable[[int], None] | None = None
    ) -> VerifyReport:
        """Walk the whole chain and check its anchors, the grants table, the search index,
        rows not yet accepted and, if given, a head the operator copied elsewhere.

        Reads one consistent snapshot, taken while no batch is between ``BEGIN`` and its
        anchor update, so it can run while the daemon is writing.
        """
        # Best effort: entries still to come are allowed for (see _snapshot_with_anchor).
        with contextlib.suppress(StoreUnavailable):
            self._searchable()
        with self._reader("verifying the history") as conn:
            anchor, anchor_error, indexed = self._snapshot_with_anchor(conn)
            anchored = None
            if anchor is not None and anchor.store_id == self._store_id:
                anchored = max(anchor.seq, anchor.pending_seq or 0)
            result = checks.walk(conn, anchored=anchored, progress=progress)
            finding = result.finding
            if finding is None and external is not None:
                finding = checks.external_finding(conn, result.tail, external, self._store_id)
            if finding is None:
                finding = checks.anchor_finding(
                    result.tail, anchor, anchor_error, checks.meta_head(conn), self._store_id
                )
            if finding is None:
                finding = checks.recorded_finding(conn)
            grants_checked, grant_problem = checks.grants_finding(conn)
            finding = finding or grant_problem
            unaccepted = tuple(checks.unaccepted_ranges(conn))
            finding = finding or checks.unaccepted_finding(list(unaccepted))
            finding = finding or checks.search_index_finding(conn, indexed)
        common = {
            "checked": result.checked,
            "grants_checked": grants_checked,
            "tail_seq": result.tail[0],
            "tail_hash": result.tail[1],
            "store_id": self._store_id,
            "unaccepted": unaccepted,
        }
        if finding is None:
            beyond = ""
            if external is not None and result.tail[0] > external.seq:
                beyond = f"; {result.tail[0] - external.seq} rows were added after the anchor file's seq {external.seq}"
            return VerifyReport(
                ok=True,
                message=f"OK: {result.checked} events and {grants_checked} grants verified{beyond}",
                **common,  # type: ignore[arg-type]  # the fields both reports share
            )
        return VerifyReport(
            ok=False,
            first_bad_seq=finding.first_bad_seq,
            what=finding.what,
            message=finding.message,
            **common,  # type: ignore[arg-type]  # the fields both reports share
        )


def _parse_anchor(data: bytes | None) -> tuple[Anchor | None, str]:
    if data is None:
        return None, "missing"
    if not data:
        return None, "empty"
    try:
        return Anchor.from_bytes(data), ""
    except ValueError as exc:
        return None, str(exc)


def _grant_call_problem(grant_id: Any, at: Any, request_id: Any = "") -> Exception | None:
    if not isinstance(grant_id, str) or not grant_id:
        return TypeError("grant_id must be a non-empty string")
    if not isinstance(request_id, str):
        return TypeError("request_id must be a string")
    if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
        return ValueError("at must be a finite number of seconds")
    return None


def _failed(exc: BaseException) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(exc)
    return future


def _reconcile(conn: sqlite3.Connection, head: HeadFile, created: bool) -> tuple[str, list[Event]]:
    """Make the head anchor agree with the database; returns the store id and notes to record.

    The cases: a fresh store (write the first anchor); the tail is the anchor's pending
    batch (a crash between commit and anchor update: finish it); the anchor lags but the
    rows after it chain from it and the meta row agrees (the file lost its last writes
    in a power loss: re-anchor and say so); anything else is a mismatch that is recorded
    as an ``anchor_mismatch`` event before the anchor moves on.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row is None:
            store_id = uuid.uuid4().hex
            conn.execute("INSERT INTO meta(key, value) VALUES ('store_id', ?)", (store_id,))
        else:
            store_id = row[0]
        found = checks.tail(conn)
        meta = checks.meta_head(conn)
        if meta is None and found[0] == 0:
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('head_seq', '0'), ('head_hash', ?)",
                (GENESIS,),
            )
            meta = (0, GENESIS)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise

    anchor_error = ""
    try:
        anchor = head.read()
    except ValueError as exc:
        anchor, anchor_error = None, str(exc)
    if anchor is None and not anchor_error and not created:
        anchor_error = "empty"

    notes: list[Event] = []
    finding = checks.anchor_finding(found, anchor, anchor_error, meta, store_id)
    now = time.time()
    # The newest seq the head file vouches for. Rows after it may be a power loss's lost
    # anchor writes, or rows forged together with the meta row: nothing here can tell.
    # They are flagged (never silently re-anchored) and their grants wait for the operator.
    vouched = 0
    if anchor is not None and anchor.store_id == store_id:
        vouched = found[0] if anchor.accepts(*found) else max(anchor.seq, anchor.pending_seq or 0)
    if found[0] > vouched:
        lag_hash = anchor.pending_hash if anchor and vouched != anchor.seq and anchor.pending_hash else None
        chained = (
            anchor is not None
            and anchor.store_id == store_id
            and meta == found
            and _chains_from(conn, vouched, lag_hash or anchor.hash)
        )
        span = f"row {found[0]} is" if found[0] == vouched + 1 else f"rows {vouched + 1}-{found[0]} are"
        message = (
            f"{span} past the head anchor (seq {vouched}): flagged until the "
            "operator accepts them (agent-console history accept)"
        )
        log.warning("history: %s", message)
        notes.append(
            daemon_event(
                at=now,
                note=f"unanchored rows: {message}",
                body={"event": "unanchored", "from_seq": vouched + 1, "to_seq": found[0], "chained": chained},
            )
        )
        if chained:
            finding = None  # the chain itself is intact; the flag is what remains to settle
    if finding is not None:
        log.error("history anchor mismatch: %s", finding.message)
        notes.append(
            daemon_event(
                at=now,
                note=f"history anchor mismatch: {finding.message}",
                body={"event": "anchor_mismatch", **finding.to_body()},
            )
        )
    if finding is not None or anchor is None or anchor != Anchor(store_id, *found):
        head.write(Anchor(store_id, *found), sync=True)
    return store_id, notes


def _chains_from(conn: sqlite3.Connection, seq: int, hash_: str) -> bool:
    if seq > 0:
        row = conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
        if row is None or row[0] != hash_:
            return False
    return checks.walk(conn, start=(seq, hash_)).finding is None
