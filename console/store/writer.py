"""Group commit: one thread writes every change, a batch of queued jobs per transaction.

A job is a function run inside the batch's ``BEGIN IMMEDIATE … COMMIT`` under its own
savepoint, so one job that conflicts (a second decision for a request) fails alone (a
batch of one job needs no savepoint: its transaction is rolled back instead).
Futures resolve only after ``COMMIT`` has returned, i.e. once the batch is on disk
(``synchronous=FULL``). If the batch cannot be committed (disk full, read-only file,
I/O error) every job in it fails with :class:`StoreUnavailable` and nothing of it is
kept; the next batch tries again on a fresh connection, so the store recovers by
itself once the fault clears.

Rows are indexed for search (trigrams of their text) in their own batch, just before
``COMMIT``, unless appended with ``search_later``: the daemon's decisions that answer
an agent at once, whose answer then waits for their rows and column indexes only. Their
search entries are written after the commit, by the same thread, in a transaction of
their own that covers many batches: every few dozen milliseconds, when enough rows
wait, or at once when a reader asks (:meth:`Writer.catch_up`, which every search of the
store calls first, so no search misses a row that was answered). That transaction is
not synced by itself (the next commit's sync covers it). ``meta.indexed_seq`` says
through which seq the index is complete; after a crash, opening indexes what is past it.
The index's segments are merged by the same thread in small steps while no job waits,
never inside a pass (FTS5's automatic merging is off, console/store/schema.py).

The write-ahead log is copied into the database by a second thread on its own
connection (:class:`Checkpointer`), beside the writer, so no commit waits for a
checkpoint; it runs every few commits, which keeps the log short and rewritten in
place (a commit that makes the log file grow costs more than one into a reused log).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import Any

from console.store.chain import GENESIS, Anchor, HeadFile, row_hash
from console.store.errors import StoreConflict, StoreUnavailable, unavailable
from console.store.event import (
    EVENT_COLUMNS,
    HASHED_COLUMNS,
    SEARCH_COLUMNS,
    SEARCH_POSITIONS,
    UNSEARCHED_KINDS,
)

log = logging.getLogger(__name__)

_INSERT = (
    f"INSERT INTO events ({', '.join(HASHED_COLUMNS)}, prev_hash, hash) "  # noqa: S608
    f"VALUES ({', '.join('?' * (len(HASHED_COLUMNS) + 2))})"
)
_INDEX = (
    f"INSERT INTO events_fts(rowid, {', '.join(SEARCH_COLUMNS)}) "  # noqa: S608
    f"VALUES ({', '.join('?' * (len(SEARCH_COLUMNS) + 1))})"
)
# Rows committed but not yet in the search index are indexed once this many wait, or
# this long after the first of them (a search never waits for that: it asks at once).
# Few at a time: a decision that arrives while the writer indexes waits for that pass
# (about 30 us a row), so the passes are kept short. At 1,000 grant-settled decisions/s
# (two rows each), passes of up to 256 rows (in practice 50 ms, ~100 rows) gave a median
# p99 of 10.8 ms (runs up to 80 ms) and p50 of 1.9 ms; passes of 16 rows 7.5 ms (up to
# 13 ms) and 1.3 ms, at the same closed-loop rate (nine interleaved pairs of
# `benchmarks/daemon.py --only grant`).
INDEX_EVERY_ROWS = 16
INDEX_DELAY_S = 0.05
# Pages of the search index merged per step, between decisions (Writer._merge_while_idle).
MERGE_PAGES = 4
# Commits between two checkpoints: about 14 log pages each (a decision's two rows and
# their index entries), so the log stays within a few MiB and is reused from its start.
CHECKPOINT_EVERY_COMMITS = 32
# Errors that belong to one job (its input contradicts the store), not to the batch.
_JOB_ERRORS = (StoreConflict, ValueError, TypeError, KeyError, sqlite3.IntegrityError)


def index_missing(conn: sqlite3.Connection) -> int:
    """Index the rows past ``meta.indexed_seq`` that the search index lacks (a daemon
    stopped before it indexed them); returns how many. ``conn`` is in autocommit mode."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'indexed_seq'").fetchone()
    tail = conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]
    done = int(row[0]) if row is not None and str(row[0]).isdigit() else 0
    if row is not None and done >= tail:
        return 0
    texts = " OR ".join(f"{c} <> ''" for c in SEARCH_COLUMNS)
    skip = ", ".join("?" * len(UNSEARCHED_KINDS))
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows = conn.execute(
            f"SELECT seq, {', '.join(SEARCH_COLUMNS)} FROM events "  # noqa: S608
            f"WHERE seq > ? AND kind NOT IN ({skip}) AND ({texts}) "
            "AND seq NOT IN (SELECT id FROM events_fts_docsize) ORDER BY seq",
            (done, *sorted(UNSEARCHED_KINDS)),
        ).fetchall()
        conn.executemany(_INDEX, rows)
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('indexed_seq', ?)", (str(tail),))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return len(rows)


class Tx:
    """What a job sees: the open transaction and the chain's head inside it."""

    def __init__(self, conn: sqlite3.Connection, seq: int, hash_: str) -> None:
        self.conn = conn
        self.seq = seq
        self.hash = hash_
        # Search rows for the batch, indexed in one statement just before COMMIT, and
        # those indexed after it (Writer._index).
        self.search: list[tuple[Any, ...]] = []
        self.later: list[tuple[Any, ...]] = []

    def append(self, rows: Sequence[tuple[Any, ...]], *, search_later: bool = False) -> list[int]:
        """Chain and insert encoded events (values of EVENT_COLUMNS); returns their seqs.

        ``search_later``: their search entries are written after the batch's commit."""
        search = self.later if search_later else self.search
        out = []
        seqs = []
        for values in rows:
            self.seq += 1
            columns = dict(zip(EVENT_COLUMNS, values, strict=True))
            columns["seq"] = self.seq
            digest = row_hash(self.hash, columns)
            out.append((self.seq, *values, self.hash, digest))
            seqs.append(self.seq)
            self.hash = digest
            texts = tuple(values[i] for i in SEARCH_POSITIONS)
            if any(texts) and values[0] not in UNSEARCHED_KINDS:
                search.append((self.seq, *texts))
        self.conn.executemany(_INSERT, out)
        return seqs


JobFn = Callable[[Tx], Any]


@dataclass(slots=True)
class _Job:
    fn: JobFn | None  # None: a reader waiting for the search index to catch up
    future: Future[Any]


_STOP = object()


@dataclass(slots=True)
class WriterStats:
    commits: int = 0
    failed_batches: int = 0
    jobs: int = 0
    events: int = 0
    largest_batch: int = 0


def _settle(future: Future[Any], ok: bool, value: Any) -> None:
    # A caller may have cancelled its future (asyncio.wrap_future does when the awaiting
    # task is cancelled); the write still happened, nobody is listening.
    if future.done():
        return
    try:
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)
    except InvalidStateError:
        pass


class Checkpointer:
    """Copies the write-ahead log into the database, on its own thread and connection.

    A ``PASSIVE`` checkpoint runs beside the writer's commits (SQLite lets a checkpoint
    and a writer proceed together). SQLite starts the log over only when a write
    transaction begins on a log that is copied whole, and under steady commits one always
    lands while the copy runs, so the log would grow without end: once a copy has ended
    (``ended``), the writer finishes it itself between two batches, which is quick because
    only the frames of the commits made meanwhile are left, and its next transaction
    starts the log over.
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._conn: sqlite3.Connection | None = None
        self._kick = threading.Event()
        self._stopping = False
        self.running = False  # from kick() until the checkpoint it asked for has ended
        self.ended = False  # a checkpoint ended since the writer last finished one
        self._thread = threading.Thread(target=self._loop, name="store-checkpoint", daemon=True)
        self._thread.start()

    def kick(self) -> None:
        """Ask for a checkpoint soon (returns at once)."""
        self.running = True
        self._kick.set()

    def close(self) -> None:
        self._stopping = True
        self._kick.set()
        self._thread.join()

    def _loop(self) -> None:
        try:
            while True:
                self._kick.wait()
                self._kick.clear()
                if self._stopping:
                    return
                try:
                    self._once()
                finally:
                    self.ended = True
                    self.running = False
        finally:
            self._drop()

    def _once(self) -> None:
        try:
            if self._conn is None:
                self._conn = self._connect()
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:
            log.warning("history checkpoint failed: %s", exc)
            self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()


class Writer:
    """The single writer thread. ``lock`` is held from ``BEGIN`` until the anchor is written."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        head: HeadFile,
        store_id: str,
        tail: tuple[int, str],
        max_batch: int,
        checkpoint_interval_s: float = 0.5,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._connect = connect
        self._conn: sqlite3.Connection | None = None
        self._head = head
        self._store_id = store_id
        self.seq, self.hash = tail
        self._max_batch = max_batch
        self._checkpoint_interval = checkpoint_interval_s
        self._last_checkpoint = time.monotonic()
        self._unchecked_commits = 0
        # Search rows of committed batches, not yet indexed, and since when.
        self._unindexed: list[tuple[Any, ...]] = []
        self._unindexed_since = 0.0
        self._merge_due = True  # the index may hold segments to merge (checked once)
        self._checkpointer = Checkpointer(connect)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._submit_lock = threading.Lock()
        self._closed = False
        self._dead: StoreUnavailable | None = None
        self._uncertain: tuple[int, str] | None = None
        self.lock = threading.Lock()
        self.stats = WriterStats()
        self._thread = threading.Thread(target=self._loop, name="store-writer", daemon=True)
        self._thread.start()

    # -- called from any thread -----------------------------------------------------------

    def submit(self, fn: JobFn) -> Future[Any]:
        future: Future[Any] = Future()
        with self._submit_lock:
            problem = self._refusal()
            if problem is not None:
                future.set_exception(problem)
                return future
            self._queue.put(_Job(fn, future))
        return future

    def catch_up(self) -> Future[None]:
        """Resolves once every row committed so far is in the search index.

        Done at once when nothing waits (the list is filled before any answer of its
        batch is given, so an answered row is either indexed or waiting here)."""
        if not self._unindexed:
            done: Future[None] = Future()
            done.set_result(None)
            return done
        future: Future[None] = Future()
        with self._submit_lock:
            problem = self._refusal()
            if problem is not None:
                future.set_exception(problem)
                return future
            self._queue.put(_Job(None, future))
        return future

    def indexed_through(self) -> int:
        """The seq through which every committed row is in the search index. Exact only
        while :attr:`lock` is held (no batch commits meanwhile)."""
        waiting = self._unindexed
        return waiting[0][0] - 1 if waiting else self.seq

    def close(self) -> None:
        """Stop accepting jobs, finish every queued one, stop the thread."""
        with self._submit_lock:
            if not self._closed:
                self._closed = True
                self._queue.put(_STOP)
        self._thread.join()

    def _refusal(self) -> StoreUnavailable | None:
        if self._closed:
            return StoreUnavailable("closed", "the history store is closed")
        if self._dead is not None:
            return self._dead
        if not self._thread.is_alive():
            return StoreUnavailable("internal", "the history writer thread has stopped")
        return None

    # -- the writer thread ------------------------------------------------------------------

    def _loop(self) -> None:
        try:
            while True:
                try:
                    batch = [self._queue.get(timeout=self._index_wait())]
                except queue.Empty:
                    self._index([])
                    continue
                while len(batch) < self._max_batch:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                jobs = [j for j in batch if j is not _STOP and j.fn is not None]
                waiting = [j for j in batch if j is not _STOP and j.fn is None]
                stop = any(j is _STOP for j in batch)
                if jobs:
                    self._run_batch(jobs)
                if waiting or stop or len(self._unindexed) >= INDEX_EVERY_ROWS or self._index_wait() == 0:
                    self._index(waiting)
                if stop:
                    self._checkpointer.close()
                    self._checkpoint("TRUNCATE", force=True)
                    break
                self._merge_while_idle()
                checkpointer = self._checkpointer
                if checkpointer.running:
                    continue
                if checkpointer.ended:
                    checkpointer.ended = False
                    self._checkpoint("PASSIVE", force=True)
                elif self._unchecked_commits and (
                    self._unchecked_commits >= CHECKPOINT_EVERY_COMMITS
                    or time.monotonic() - self._last_checkpoint >= self._checkpoint_interval
                ):
                    self._last_checkpoint = time.monotonic()
                    self._unchecked_commits = 0
                    checkpointer.kick()
        except BaseException as exc:
            self._dead = StoreUnavailable("internal", f"the history writer stopped: {exc!r}")
            log.exception("history writer stopped")
        finally:
            self._checkpointer.close()
            self._drain()
            if self._conn is not None:
                try:
                    self._conn.close()
                except sqlite3.Error:
                    log.exception("closing the history writer connection")
                self._conn = None

    def _merge_while_idle(self) -> None:
        """Merge the search index's segments in small steps while no job waits.

        The index passes only add segments (``automerge`` is off, schema.py); left alone,
        FTS5 would merge a level at once when it holds ``crisismerge`` (16) of them, in
        the pass that reaches it. A step writes about :data:`MERGE_PAGES` pages and is
        not synced by itself, like an index pass. Only on a connection already open: a
        dropped one is opened again by the next batch, which also settles a commit whose
        outcome was uncertain (:meth:`_ensure_conn`), and a merge must not stand in for it."""
        while self._merge_due and self._queue.empty():
            conn = self._conn
            if conn is None:
                return
            try:
                conn.execute("PRAGMA synchronous = NORMAL")
                try:
                    before = conn.total_changes
                    conn.execute(
                        "INSERT INTO events_fts(events_fts, rank) VALUES ('merge', ?)", (MERGE_PAGES,)
                    )
                    # Fewer than two rows changed: nothing was left to merge.
                    self._merge_due = conn.total_changes - before >= 2
                finally:
                    conn.execute("PRAGMA synchronous = FULL")
            except Exception as exc:  # never the writer's end: the next index pass retries
                log.warning("merging the history's search index: %s", exc)
                self._drop_conn()
                self._merge_due = False
                return

    def _index_wait(self) -> float | None:
        if not self._unindexed:
            return None
        return max(0.0, self._unindexed_since + INDEX_DELAY_S - time.monotonic())

    def _index(self, waiting: list[_Job]) -> None:
        """Write the search index for every committed row that waits, in one transaction.

        Not synced by itself: the next commit's sync makes it durable, and a crash before
        that loses only index entries, which opening writes again (``indexed_seq``). If it
        fails, the rows keep waiting and the readers waiting for them are told why. Rows
        the index already holds are skipped (a commit reported as failed may have reached
        the disk), so no row is ever indexed twice."""
        rows = self._unindexed
        if rows:
            try:
                conn = self._ensure_conn()
                conn.execute("PRAGMA synchronous = NORMAL")
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    held = {
                        r[0]
                        for r in conn.execute(
                            "SELECT id FROM events_fts_docsize WHERE id BETWEEN ? AND ?",
                            (rows[0][0], rows[-1][0]),
                        )
                    }
                    conn.executemany(_INDEX, [r for r in rows if r[0] not in held] if held else rows)
                    conn.execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES ('indexed_seq', ?)", (str(self.seq),)
                    )
                    conn.execute("COMMIT")
                    self._unindexed = []
                    self._merge_due = True
                finally:
                    conn.execute("PRAGMA synchronous = FULL")
            except BaseException as exc:
                self._drop_conn()
                error = unavailable(exc, "writing the history's search index")
                log.warning("%s", error)
                self._unindexed_since = time.monotonic()
                for job in waiting:
                    _settle(job.future, False, error)
                return
        for job in waiting:
            _settle(job.future, True, None)

    def _checkpoint(self, mode: str, *, force: bool = False) -> None:
        """Copy the WAL into the database, here, between batches: at close, and to finish
        each copy of the checkpointer (see :class:`Checkpointer`).

        Here no write can race it, so it completes and the next transaction starts the
        WAL over. Callers of the batch just committed already have their answers; the
        next batch waits, gathering more jobs meanwhile.
        """
        self._last_checkpoint = time.monotonic()
        if (self._unchecked_commits == 0 and not force) or self._conn is None:
            return
        try:
            self._conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
            self._unchecked_commits = 0
        except sqlite3.Error as exc:
            log.warning("history checkpoint failed: %s", exc)
            self._drop_conn()

    def _drain(self) -> None:
        """Fail whatever is still queued (only after the loop itself broke)."""
        error = self._dead or StoreUnavailable("closed", "the history store is closed")
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not _STOP:
                _settle(item.future, False, error)

    def _ensure_conn(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        conn = self._connect()
        try:
            row = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
            tail = (row[0], row[1]) if row else (0, GENESIS)
            if tail != (self.seq, self.hash):
                if tail == self._uncertain:
                    # A commit reported failure yet reached the disk: those callers were told
                    # "unavailable" (fail closed); the rows are real, so continue after them.
                    log.warning("a history batch reported as failed was committed (seq %d)", tail[0])
                    # Its rows were never queued for the search index: index what lacks it,
                    # and only then take its tail as ours, so a failure here (the same full
                    # disk) leaves the batch uncertain and the next connection tries again.
                    index_missing(conn)
                    self.seq, self.hash = tail
                else:
                    raise StoreUnavailable(
                        "corrupt",
                        f"the history's newest row changed outside agent-console (expected seq "
                        f"{self.seq}, found {tail[0]}); run `agent-console history verify`",
                    )
        except BaseException:
            conn.close()
            raise
        self._uncertain = None
        self._conn = conn
        return conn

    def _drop_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        with contextlib.suppress(sqlite3.Error):
            conn.close()

    def _run_batch(self, jobs: list[_Job]) -> None:
        try:
            with self.lock:
                self._commit_batch(jobs)
        except BaseException as exc:
            error = unavailable(exc, "committing to the history")
            if error.reason == "internal":
                log.exception("history batch failed")
            else:
                log.warning("%s", error)
            self.stats.failed_batches += 1
            for job in jobs:
                _settle(job.future, False, error)

    def _commit_batch(self, jobs: list[_Job]) -> None:
        """Run the jobs in one transaction and settle their futures once it is committed.

        A job that fails alone is undone to its savepoint; a batch of one job needs none,
        since undoing it is undoing the transaction. The futures are settled right after
        ``COMMIT``, before the head anchor is rewritten as committed: until then the
        pending anchor already names this tail, which open and verify accept."""
        conn = self._ensure_conn()
        start_seq, start_hash = self.seq, self.hash
        tx = Tx(conn, start_seq, start_hash)
        results: list[tuple[Future[Any], bool, Any]] = []
        savepoints = len(jobs) > 1
        try:
            conn.execute("BEGIN IMMEDIATE")
            for job in jobs:
                mark = (tx.seq, tx.hash, len(tx.search), len(tx.later))
                if savepoints:
                    conn.execute("SAVEPOINT job")
                fn = job.fn
                assert fn is not None  # only jobs with a function reach a batch
                try:
                    value = fn(tx)
                except _JOB_ERRORS as exc:
                    if savepoints:
                        conn.execute("ROLLBACK TO job")
                        conn.execute("RELEASE job")
                    else:
                        conn.execute("ROLLBACK")
                    tx.seq, tx.hash = mark[0], mark[1]
                    del tx.search[mark[2] :]
                    del tx.later[mark[3] :]
                    if isinstance(exc, sqlite3.IntegrityError):
                        exc = StoreConflict(f"the history refused the change: {exc}")
                    results.append((job.future, False, exc))
                else:
                    if savepoints:
                        conn.execute("RELEASE job")
                    results.append((job.future, True, value))
            if not conn.in_transaction:  # the batch's one job failed and was rolled back
                for future, ok, value in results:
                    _settle(future, ok, value)
                return
            appended = tx.seq != start_seq
            if appended and (tx.later or self._unindexed):
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('head_seq', ?), ('head_hash', ?)",
                    (str(tx.seq), tx.hash),
                )
            elif appended:  # nothing waits for the search index: it is complete with this batch
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('head_seq', ?1), ('head_hash', ?2), "
                    "('indexed_seq', ?1)",
                    (str(tx.seq), tx.hash),
                )
            if tx.search:
                # Last statement before COMMIT: FTS5 flushes its pending terms at every later
                # statement, so indexing the batch last makes it one flush.
                conn.executemany(_INDEX, tx.search)
            if appended:
                self._head.write(Anchor(self._store_id, start_seq, start_hash, tx.seq, tx.hash))
            self._uncertain = (tx.seq, tx.hash)
            conn.execute("COMMIT")
        except BaseException:
            self._drop_conn()
            raise
        self._uncertain = None
        self.seq, self.hash = tx.seq, tx.hash
        if tx.later:
            # Before any answer of this batch is given (see catch_up).
            if not self._unindexed:
                self._unindexed_since = time.monotonic()
            self._unindexed.extend(tx.later)
        stats = self.stats  # before the answers: a caller that has one may read them
        stats.commits += 1
        stats.jobs += len(jobs)
        stats.events += tx.seq - start_seq
        stats.largest_batch = max(stats.largest_batch, len(jobs))
        self._unchecked_commits += 1
        for future, ok, value in results:
            _settle(future, ok, value)
        if appended:
            try:
                self._head.write(Anchor(self._store_id, tx.seq, tx.hash))
            except OSError:
                # The pending anchor already names this tail; verify and open accept it.
                log.warning("could not finish the history head anchor", exc_info=True)
