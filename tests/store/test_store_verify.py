"""verify(): every kind of tampering is reported at the right row, as the right kind."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from support.store import ev, raw, unguard

from console.policy.grants import Grant, GrantScope
from console.store import GENESIS, HistoryQuery, Store, row_hash
from console.store.chain import HEAD_SUFFIX, Anchor, HeadFile
from console.store.event import HASHED_COLUMNS

N = 20


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "history.db"


@pytest.fixture
def store(db: Path):
    s = Store.open(db)
    s.append(*[ev(i, note=f"n{i}") for i in range(1, N + 1)]).result()
    yield s
    s.close()


@pytest.fixture
def conn(db: Path, store: Store) -> sqlite3.Connection:
    c = raw(db)
    unguard(c)
    return c


def row(conn: sqlite3.Connection, seq: int) -> dict:
    cols = (*HASHED_COLUMNS, "prev_hash", "hash")
    values = conn.execute(f"SELECT {', '.join(cols)} FROM events WHERE seq = ?", (seq,)).fetchone()
    return dict(zip(cols, values, strict=True))


def insert(conn: sqlite3.Connection, r: dict) -> None:
    conn.execute(f"INSERT INTO events ({', '.join(r)}) VALUES ({', '.join('?' * len(r))})", tuple(r.values()))


def sealed(r: dict, prev_hash: str) -> dict:
    """The row re-sealed after ``prev_hash`` by someone who knows the rule."""
    cols = {k: r[k] for k in HASHED_COLUMNS}
    return {**cols, "prev_hash": prev_hash, "hash": row_hash(prev_hash, cols)}


def assert_bad(store: Store, what: str, seq: int | None) -> None:
    report = store.verify()
    assert not report.ok
    assert (report.what, report.first_bad_seq) == (what, seq), report.message
    assert report.message


def test_untouched_history_verifies(store: Store):
    store.add_grant(Grant(id="g", fingerprint="f" * 64, scope=GrantScope.ONCE)).result()
    store.use_grant("g", 5.0).result()
    report = store.verify()
    assert report.ok
    assert (report.checked, report.grants_checked) == (N + 2, 1)


@pytest.mark.parametrize("column", ["command", "at", "verdict", "body", "peer_pid", "kind"])
def test_an_edited_column_is_reported_at_its_row(store: Store, conn: sqlite3.Connection, column: str):
    value = {"command": "rm -rf /", "at": 1.5, "verdict": "allow", "body": '{"x":1}', "peer_pid": 7}
    value["kind"] = "request"
    conn.execute(f"UPDATE events SET {column} = ? WHERE seq = 7", (value[column],))
    assert_bad(store, "edited", 7)


def test_an_edited_hash_is_reported(store: Store, conn: sqlite3.Connection):
    conn.execute("UPDATE events SET hash = ? WHERE seq = 7", ("0" * 64,))
    assert_bad(store, "edited", 7)


def test_a_row_rewritten_with_a_recomputed_hash_is_reported(store: Store, conn: sqlite3.Connection):
    r = row(conn, 7)
    r["command"] = "something else"
    forged = sealed(r, r["prev_hash"])
    conn.execute("UPDATE events SET command = ?, hash = ? WHERE seq = 7", (forged["command"], forged["hash"]))
    assert_bad(store, "edited", 7)


def test_a_deleted_middle_row_is_reported(store: Store, conn: sqlite3.Connection):
    conn.execute("DELETE FROM events WHERE seq = 9")
    assert_bad(store, "deleted", 9)


def test_deleted_rows_with_later_rows_renumbered_are_reported(store: Store, conn: sqlite3.Connection):
    conn.execute("DELETE FROM events WHERE seq IN (9, 10)")
    conn.execute("UPDATE events SET seq = -seq WHERE seq > 10")
    conn.execute("UPDATE events SET seq = -seq - 2 WHERE seq < 0")
    assert_bad(store, "deleted", 9)


def test_the_first_row_deleted_is_reported(store: Store, conn: sqlite3.Connection):
    conn.execute("DELETE FROM events WHERE seq = 1")
    assert_bad(store, "deleted", 1)


@pytest.mark.parametrize(("a", "b"), [(5, 9), (5, 6), (1, 2), (3, N)])
def test_swapped_rows_are_reported_as_reordered(store: Store, conn: sqlite3.Connection, a: int, b: int):
    conn.execute("UPDATE events SET seq = -1 WHERE seq = ?", (a,))
    conn.execute("UPDATE events SET seq = ? WHERE seq = ?", (a, b))
    conn.execute("UPDATE events SET seq = ? WHERE seq = -1", (b,))
    assert_bad(store, "reordered", a)


def test_a_forged_row_inserted_in_the_middle_is_reported(store: Store, conn: sqlite3.Connection):
    conn.execute("UPDATE events SET seq = -seq WHERE seq > 10")
    conn.execute("UPDATE events SET seq = -seq + 1 WHERE seq < 0")
    forged = row(conn, 10) | {
        "seq": 11,
        "command": "forged",
        "request_id": "forged",
        "prev_hash": "1" * 64,
        "hash": "2" * 64,
    }
    insert(conn, forged)
    assert_bad(store, "inserted", 11)


def test_a_correctly_sealed_forged_row_in_the_middle_is_reported(store: Store, conn: sqlite3.Connection):
    before = row(conn, 10)
    conn.execute("UPDATE events SET seq = -seq WHERE seq > 10")
    conn.execute("UPDATE events SET seq = -seq + 1 WHERE seq < 0")
    insert(conn, sealed(before | {"seq": 11, "command": "forged", "request_id": "forged"}, before["hash"]))
    assert_bad(store, "inserted", 11)


def test_a_forged_row_before_the_first_is_reported(store: Store, conn: sqlite3.Connection):
    insert(conn, sealed(row(conn, 1) | {"seq": 0, "request_id": "forged"}, GENESIS))
    assert_bad(store, "inserted", 0)


@pytest.mark.parametrize("edit_meta", [False, True])
def test_a_correctly_sealed_row_appended_outside_the_store_is_reported(
    store: Store, conn: sqlite3.Connection, edit_meta: bool
):
    last = row(conn, N)
    forged = sealed(last | {"seq": N + 1, "command": "forged", "request_id": "forged"}, last["hash"])
    insert(conn, forged)
    if edit_meta:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'head_seq'", (str(N + 1),))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'head_hash'", (forged["hash"],))
    assert_bad(store, "inserted", N + 1)


def test_a_truncated_tail_is_reported(store: Store, conn: sqlite3.Connection):
    conn.execute("DELETE FROM events WHERE seq > 17")
    assert_bad(store, "truncated", 18)


def test_a_truncated_tail_with_meta_edited_is_caught_by_the_head_file(store: Store, conn: sqlite3.Connection):
    conn.execute("DELETE FROM events WHERE seq > 17")
    conn.execute("UPDATE meta SET value = '17' WHERE key = 'head_seq'")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'head_hash'", (row(conn, 17)["hash"],))
    assert_bad(store, "truncated", 18)


def test_truncation_found_at_open_is_recorded_and_keeps_being_reported(db: Path, store: Store):
    store.close()
    c = raw(db)
    unguard(c)
    c.execute("DELETE FROM events WHERE seq > 17")
    c.execute("UPDATE meta SET value = '17' WHERE key = 'head_seq'")
    c.execute("UPDATE meta SET value = ? WHERE key = 'head_hash'", (row(c, 17)["hash"],))
    c.close()
    with Store.open(db) as s:
        assert len(s.open_notes) == 1
        assert "newest 3 rows were removed" in s.open_notes[0]
        # The store keeps working (the daemon must keep recording) ...
        assert s.append(ev(100)).result() == [19]
        # ... and the evidence is in the chain itself, so it is reported from now on.
        assert_bad(s, "truncated", 18)
    with Store.open(db) as s:
        assert_bad(s, "truncated", 18)


def test_a_deleted_head_file_is_reported_at_open(db: Path, store: Store):
    store.close()
    Path(str(db) + HEAD_SUFFIX).unlink()
    c = raw(db)
    unguard(c)
    c.execute("DELETE FROM events WHERE seq > 17")
    c.execute("UPDATE meta SET value = '17' WHERE key = 'head_seq'")
    c.execute("UPDATE meta SET value = ? WHERE key = 'head_hash'", (row(c, 17)["hash"],))
    c.close()
    with Store.open(db) as s:
        report = s.verify()
    assert (report.ok, report.what) == (False, "truncated")
    assert "missing" in report.message


def test_a_crash_between_commit_and_anchor_update_is_accepted(db: Path, store: Store):
    store.close()
    c = raw(db)
    store_id = c.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]
    # The head file as a crash right after COMMIT leaves it: the batch still "pending".
    head, _ = HeadFile.open(str(db) + HEAD_SUFFIX)
    head.write(Anchor(store_id, 15, row(c, 15)["hash"], N, row(c, N)["hash"]))
    head.close()
    with Store.open(db) as s:
        report = s.verify()
        assert report.ok, report.message
    assert HeadFile.open(str(db) + HEAD_SUFFIX)[0].read() == Anchor(store_id, N, row(c, N)["hash"])


def test_a_head_file_that_lost_its_last_writes_flags_the_rows_until_accepted(db: Path, store: Store):
    store.close()
    c = raw(db)
    store_id = c.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]
    head, _ = HeadFile.open(str(db) + HEAD_SUFFIX)
    head.write(Anchor(store_id, 12, row(c, 12)["hash"]))  # as after a power loss (or a forgery)
    head.close()
    with Store.open(db) as s:
        assert s.unaccepted_rows == ((13, N),)
        assert_bad(s, "unaccepted", 13)
        notes = [r.event.body for r in s.history(HistoryQuery(kinds=("daemon",))).records]
        assert notes == [{"event": "unanchored", "from_seq": 13, "to_seq": N, "chained": True}]
        assert s.accept(N, 100.0).result() == [(13, N)]
        assert s.verify().ok
        assert s.unaccepted_rows == ()
    with Store.open(db) as s:  # accepted for good; nothing new is flagged
        assert s.verify().ok and s.unaccepted() == []


def test_a_head_file_from_another_database_is_reported(db: Path, tmp_path: Path, store: Store):
    store.close()
    other = tmp_path / "other.db"
    Store.open(other).close()
    Path(str(db) + HEAD_SUFFIX).write_bytes(Path(str(other) + HEAD_SUFFIX).read_bytes())
    with Store.open(db) as s:
        report = s.verify()
    assert (report.ok, report.what) == (False, "truncated")
    assert "another database" in report.message


# -- the grants table against its events -----------------------------------------------------


@pytest.fixture
def granted(store: Store, conn: sqlite3.Connection) -> Store:
    store.add_grant(Grant(id="once", fingerprint="a" * 64, scope=GrantScope.ONCE)).result()
    store.add_grant(Grant(id="always", fingerprint="b" * 64, scope=GrantScope.ALWAYS)).result()
    assert store.use_grant("once", 10.0).result()
    assert store.revoke_grant("always", 11.0).result()
    assert store.verify().ok
    return store


def test_a_used_once_grant_reset_in_the_table_is_reported(granted: Store, conn: sqlite3.Connection):
    conn.execute("UPDATE grants SET uses = 0 WHERE id = 'once'")
    assert_bad(granted, "edited", N + 1)


def test_an_unrevoked_grant_is_reported(granted: Store, conn: sqlite3.Connection):
    conn.execute("UPDATE grants SET revoked_at = NULL WHERE id = 'always'")
    assert_bad(granted, "edited", N + 2)


def test_a_grant_row_without_an_event_is_reported(granted: Store, conn: sqlite3.Connection):
    conn.execute(
        "INSERT INTO grants (id, fingerprint, scope, effect, created_at, seq) "
        "VALUES ('forged', ?, 'always', 'allow', 0, 0)",
        ("c" * 64,),
    )
    assert_bad(granted, "inserted", None)


def test_a_deleted_grant_row_is_reported(granted: Store, conn: sqlite3.Connection):
    conn.execute("DELETE FROM grants WHERE id = 'always'")
    assert_bad(granted, "deleted", N + 2)


# -- the search index against the events -----------------------------------------------------


def _index(conn: sqlite3.Connection, command: str, seq: int, r: dict) -> None:
    conn.execute(
        f"INSERT INTO events_fts(events_fts, rowid, command, cwd, justification, reason, note) "
        f"VALUES ('{command}', ?, ?, ?, ?, ?, ?)",
        (seq, r["command"], r["cwd"], r["justification"], r["reason"], r["note"]),
    )


def test_deleted_search_index_entries_are_reported(store: Store, conn: sqlite3.Connection):
    _index(conn, "delete", 7, row(conn, 7))
    assert_bad(store, "search_index", 7)


def test_a_search_index_entry_rewritten_with_other_text_of_the_same_length_is_reported(
    store: Store, conn: sqlite3.Connection
):
    r = row(conn, 9)
    _index(conn, "delete", 9, r)
    conn.execute(
        "INSERT INTO events_fts(rowid, command, cwd, justification, reason, note) VALUES (?, ?, ?, ?, ?, ?)",
        (9, "ls -l " + "x" * (len(r["command"]) - 6), r["cwd"], r["justification"], r["reason"], r["note"]),
    )
    assert_bad(store, "search_index", 9)


def test_a_search_index_entry_for_an_event_without_one_is_reported(store: Store, conn: sqlite3.Connection):
    conn.execute(
        "INSERT INTO events_fts(rowid, command, cwd, justification, reason, note) VALUES (500, 'ghost', '', '', '', '')"
    )
    assert_bad(store, "search_index", 500)


def test_a_rebuilt_search_index_still_verifies(store: Store, conn: sqlite3.Connection):
    # `rebuild` (and histories from schema 3) index request rows too: that is not tampering.
    conn.execute("INSERT INTO events_fts(events_fts) VALUES ('rebuild')")
    assert store.verify().ok
