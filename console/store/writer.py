"""Group commit: one thread writes every change, a batch of queued jobs per transaction.

A job is a function run inside the batch's ``BEGIN IMMEDIATE … COMMIT`` under its own
savepoint, so one job that conflicts (a second decision for a request) fails alone.
Futures resolve only after ``COMMIT`` has returned, i.e. once the batch is on disk
(``synchronous=FULL``). If the batch cannot be committed (disk full, read-only file,
I/O error) every job in it fails with :class:`StoreUnavailable` and nothing of it is
kept; the next batch tries again on a fresh connection, so the store recovers by
itself once the fault clears.
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
# Errors that belong to one job (its input contradicts the store), not to the batch.
_JOB_ERRORS = (StoreConflict, ValueError, TypeError, KeyError, sqlite3.IntegrityError)


class Tx:
    """What a job sees: the open transaction and the chain's head inside it."""

    def __init__(self, conn: sqlite3.Connection, seq: int, hash_: str) -> None:
        self.conn = conn
        self.seq = seq
        self.hash = hash_
        # Search rows for the batch, indexed in one statement just before COMMIT.
        self.search: list[tuple[Any, ...]] = []

    def append(self, rows: Sequence[tuple[Any, ...]]) -> list[int]:
        """Chain and insert encoded events (values of EVENT_COLUMNS); returns their seqs."""
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
                self.search.append((self.seq, *texts))
        self.conn.executemany(_INSERT, out)
        return seqs


JobFn = Callable[[Tx], Any]


@dataclass(slots=True)
class _Job:
    fn: JobFn
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
                batch = [self._queue.get()]
                while len(batch) < self._max_batch:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                jobs = [j for j in batch if j is not _STOP]
                if jobs:
                    self._run_batch(jobs)
                if len(jobs) != len(batch):
                    self._checkpoint("TRUNCATE")
                    break
                if time.monotonic() - self._last_checkpoint >= self._checkpoint_interval:
                    self._checkpoint("PASSIVE")
        except BaseException as exc:
            self._dead = StoreUnavailable("internal", f"the history writer stopped: {exc!r}")
            log.exception("history writer stopped")
        finally:
            self._drain()
            if self._conn is not None:
                try:
                    self._conn.close()
                except sqlite3.Error:
                    log.exception("closing the history writer connection")
                self._conn = None

    def _checkpoint(self, mode: str) -> None:
        """Copy the WAL into the database, here, between batches.

        Here no write can race it, so it completes and the next transaction starts the
        WAL over (a checkpoint on another thread never catches up under steady writes,
        and the WAL grows without bound). Callers of the batch just committed already
        have their answers; the next batch waits, gathering more jobs meanwhile.
        """
        self._last_checkpoint = time.monotonic()
        if self._unchecked_commits == 0 or self._conn is None:
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
        settled: list[tuple[Future[Any], bool, Any]] = []
        try:
            with self.lock:
                settled = self._commit_batch(jobs)
        except BaseException as exc:
            error = unavailable(exc, "committing to the history")
            if error.reason == "internal":
                log.exception("history batch failed")
            else:
                log.warning("%s", error)
            self.stats.failed_batches += 1
            settled = [(job.future, False, error) for job in jobs]
        for future, ok, value in settled:
            _settle(future, ok, value)

    def _commit_batch(self, jobs: list[_Job]) -> list[tuple[Future[Any], bool, Any]]:
        conn = self._ensure_conn()
        start_seq, start_hash = self.seq, self.hash
        tx = Tx(conn, start_seq, start_hash)
        results: list[tuple[Future[Any], bool, Any]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for job in jobs:
                mark = (tx.seq, tx.hash, len(tx.search))
                conn.execute("SAVEPOINT job")
                try:
                    value = job.fn(tx)
                except _JOB_ERRORS as exc:
                    conn.execute("ROLLBACK TO job")
                    conn.execute("RELEASE job")
                    tx.seq, tx.hash = mark[0], mark[1]
                    del tx.search[mark[2] :]
                    if isinstance(exc, sqlite3.IntegrityError):
                        exc = StoreConflict(f"the history refused the change: {exc}")
                    results.append((job.future, False, exc))
                else:
                    conn.execute("RELEASE job")
                    results.append((job.future, True, value))
            appended = tx.seq != start_seq
            if appended:
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('head_seq', ?), ('head_hash', ?)",
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
        if appended:
            try:
                self._head.write(Anchor(self._store_id, tx.seq, tx.hash))
            except OSError:
                # The pending anchor already names this tail; verify and open accept it.
                log.warning("could not finish the history head anchor", exc_info=True)
        stats = self.stats
        stats.commits += 1
        stats.jobs += len(jobs)
        stats.events += tx.seq - start_seq
        stats.largest_batch = max(stats.largest_batch, len(jobs))
        self._unchecked_commits += 1
        return results
