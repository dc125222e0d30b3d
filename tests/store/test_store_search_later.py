"""Decisions answered before their search entries are written (``search_later``).

The answer waits only for the rows' own commit; the writer indexes them right after. No
search may miss an answered row, a crash after the answer loses nothing (opening indexes
what the index lacks), and verify reads a history with entries still to come as intact.
Real daemon, real SQLite, a real kill -9.
"""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

import pytest
from support.daemon import operation, workspace
from support.store import acked_then_killed, ev, raw

from console.store import HistoryQuery, Store, StoreUnavailable
from console.store import writer as writer_module


def test_a_search_right_after_a_daemon_decision_finds_it(daemon):
    ws = workspace()
    with daemon.agent() as agent, daemon.operator() as op:
        for i in range(20):
            needle = f"needle-{i}-in-history"
            answer = agent.submit(operation(ws, args=[needle]))
            assert answer["verdict"] == "allow"
            rows = op.call("history.query", {"search": needle})["rows"]
            assert [r["request_id"] for r in rows] == [answer["request_id"]], needle
            assert op.call("history.query", {"search": needle, "count": True})["count"] == 1
        report = op.call("history.verify")
    assert report["ok"], report


@pytest.fixture
def slow_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer left to index only when asked: rows stay unindexed until a search."""
    monkeypatch.setattr(writer_module, "INDEX_DELAY_S", 3600.0)
    monkeypatch.setattr(writer_module, "INDEX_EVERY_ROWS", 1 << 30)


def test_a_search_waits_for_entries_still_to_be_written(tmp_path: Path, slow_index: None):
    db = tmp_path / "history.db"
    with Store.open(db) as store:
        store.append(*[ev(i, command=f"echo later-{i}") for i in range(1, 6)], search_later=True).result()
        # Committed, answered, not yet in the index ...
        assert raw(db).execute("SELECT count(*) FROM events_fts_docsize").fetchone()[0] == 0
        # ... yet every search of the store finds them.
        found = store.history(HistoryQuery(search="later-3"))
        assert [r.seq for r in found.records] == [3]
        assert store.count(HistoryQuery(search="echo later")) == 5
        assert raw(db).execute("SELECT count(*) FROM events_fts_docsize").fetchone()[0] == 5
        assert store.verify().ok


def test_verify_beside_a_writer_with_entries_still_to_come_reads_an_intact_history(
    tmp_path: Path, slow_index: None
):
    db = tmp_path / "history.db"
    with Store.open(db) as store:
        store.append(*[ev(i) for i in range(1, 4)]).result()
        store.append(*[ev(i) for i in range(4, 9)], search_later=True).result()
        beside = Store.open_readonly(db)
        try:
            report = beside.verify()
        finally:
            beside.close()
        assert report.ok, report.message
        # The rows the index already covers are still held to it.
        conn = raw(db)
        r = conn.execute(
            "SELECT command, cwd, justification, reason, note FROM events WHERE seq = 2"
        ).fetchone()
        conn.execute(
            "INSERT INTO events_fts(events_fts, rowid, command, cwd, justification, reason, note) "
            "VALUES ('delete', 2, ?, ?, ?, ?, ?)",
            r,
        )
        conn.close()
        beside = Store.open_readonly(db)
        try:
            report = beside.verify()
        finally:
            beside.close()
        assert (report.ok, report.what, report.first_bad_seq) == (False, "search_index", 2), report.message


def test_the_writing_process_does_not_take_a_lowered_indexed_seq_for_an_excuse(tmp_path: Path):
    db = tmp_path / "history.db"
    with Store.open(db) as store:
        store.append(*[ev(i) for i in range(1, 6)]).result()
        conn = raw(db)
        conn.execute("UPDATE meta SET value = '0' WHERE key = 'indexed_seq'")
        r = conn.execute(
            "SELECT command, cwd, justification, reason, note FROM events WHERE seq = 3"
        ).fetchone()
        conn.execute(
            "INSERT INTO events_fts(events_fts, rowid, command, cwd, justification, reason, note) "
            "VALUES ('delete', 3, ?, ?, ?, ?, ?)",
            r,
        )
        conn.close()
        report = store.verify()
        assert (report.ok, report.what, report.first_bad_seq) == (False, "search_index", 3), report.message


CHILD = textwrap.dedent(
    """
    import sys
    from console.store import Event, Store
    store = Store.open(sys.argv[1])
    i = 0
    while True:
        rid = f"r{i}"
        seq, = store.append(Event(kind="decision", at=float(i), request_id=rid, verdict="allow",
                                  command=f"cmd needle{i}x"), search_later=True).result()
        print(seq, i, flush=True)
        i += 1
    """
)


@pytest.mark.parametrize("acks", [30, 600])
def test_rows_answered_before_a_kill_9_are_found_by_search_after_it(tmp_path: Path, acks: int):
    db = tmp_path / "history.db"
    acked = acked_then_killed(db, CHILD, acks)
    with Store.open(db) as store:
        for seq, i in acked.items():
            found = store.history(HistoryQuery(search=f"needle{i}x"))
            assert [r.seq for r in found.records] == [seq], i
        report = store.verify()
        assert report.ok, report.message


class _CommitThenFail:
    """A connection whose next COMMIT lands and then reports an I/O error, as a disk can
    (the fault that makes a batch "uncertain"); everything else is the real connection."""

    def __init__(self, conn) -> None:
        self._conn = conn

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def execute(self, sql, *args):
        result = self._conn.execute(sql, *args)
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return result


def test_an_uncertain_commit_is_indexed_even_when_the_first_reindex_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A batch whose COMMIT reached the disk but reported failure is picked up by the
    next connection, which indexes its rows; if that indexing fails too (the same full
    disk), the connection after must try again, or the rows stay out of every search and
    verify cries tampering over a history nobody touched."""
    db = tmp_path / "history.db"
    with Store.open(db) as store:
        store.append(ev(0, command="before")).result(timeout=10)
        writer = store._writer
        writer._conn = _CommitThenFail(writer._conn)
        with pytest.raises(StoreUnavailable):
            store.append(ev(1, command="uncertain needle"), search_later=True).result(timeout=10)
        real = writer_module.index_missing
        calls = []

        def fails_once(conn):
            calls.append(1)
            if len(calls) == 1:
                raise sqlite3.OperationalError("database or disk is full")
            return real(conn)

        monkeypatch.setattr(writer_module, "index_missing", fails_once)
        with pytest.raises(StoreUnavailable):
            store.append(ev(2, command="after")).result(timeout=10)
        store.append(ev(3, command="later")).result(timeout=10)
        assert len(calls) == 2, "the next connection tries the index again"
        found = store.history(HistoryQuery(search="needle")).records
        assert [r.event.request_id for r in found] == ["r1"]
        report = store.verify()
        assert report.ok, report.message


def test_the_search_index_is_merged_between_decisions_not_inside_a_pass(tmp_path: Path):
    # FTS5 merged segments inside the index pass that reached its threshold, which made one
    # pass in a few hundred take milliseconds while decisions waited. Automatic merging is
    # off; the writer merges in small steps while idle. With crisis merges pushed out of
    # the way, the segments the passes add would pile up (50 here) if nothing merged them.
    db = tmp_path / "h.db"
    store = Store.open(db)
    try:
        blocker = raw(db)
        assert blocker.execute("SELECT v FROM events_fts_config WHERE k = 'automerge'").fetchone() == (0,)
        blocker.execute("INSERT INTO events_fts(events_fts, rank) VALUES ('crisismerge', 64)")
        for i in range(1, 801):  # 50 index passes, the writer idle between the appends
            store.append(ev(i, command=f"git commit -m 'change {i}'"), search_later=True).result()
        for i in (1, 7, 400, 800):  # every pass's rows are still found, merged or not
            (found,) = store.history(HistoryQuery(search=f"change {i}'")).records
            assert found.event.request_id == f"r{i}"
        segments = blocker.execute("SELECT count(DISTINCT segid) FROM events_fts_idx").fetchone()[0]
        assert segments <= 8, segments
    finally:
        store.close()
