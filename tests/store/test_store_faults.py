"""Real faults: a full disk, a read-only mount, a file the kernel refuses to write, kill -9.

Each must give StoreUnavailable (never a crash, never a half-written batch) and the
store must work again once the fault clears.
"""

from __future__ import annotations

import tempfile
import textwrap
from concurrent.futures import Future
from pathlib import Path

import pytest
from support.store import acked_then_killed, chattr, ev, immutable_base, raw, remount, tmpfs

from console.store import HistoryQuery, Store, StoreUnavailable


def _rids(db: Path) -> set[str]:
    return {r[0] for r in raw(db).execute("SELECT request_id FROM events WHERE kind = 'decision'")}


@pytest.mark.needs_root
def test_disk_full_fails_the_batch_cleanly_and_recovers(tmp_path: Path):
    with tmpfs(tmp_path / "small", "512k") as fs:
        db = fs / "history.db"
        with Store.open(db) as store:
            ok: list[str] = []
            failed: list[StoreUnavailable] = []
            for i in range(400):
                rid = f"r{i}"
                future = store.append(ev(i, request_id=rid, body={"pad": "x" * 8000}))
                try:
                    future.result(timeout=30)
                    ok.append(rid)
                except StoreUnavailable as exc:
                    failed.append(exc)
                    if len(failed) >= 3:
                        break
            assert failed, "the 512k tmpfs never filled up"
            assert {e.reason for e in failed} == {"disk_full"}, [str(e) for e in failed]
            assert "free space" in str(failed[0])
            # Reads keep working while writes cannot.
            assert len(store.history(HistoryQuery(limit=5)).records) == 5
            # Only what was acknowledged is stored: no part of a failed batch.
            assert _rids(db) == set(ok)

            remount(fs, "size=32m")
            seqs = store.append(ev(9999, request_id="after")).result(timeout=30)
            assert seqs == [len(ok) + 1]
            assert _rids(db) == {*ok, "after"}
            report = store.verify()
            assert report.ok, report.message
        with Store.open(db) as store:
            assert store.verify().ok


@pytest.mark.needs_root
def test_a_full_disk_at_open_is_a_clear_error(tmp_path: Path):
    with tmpfs(tmp_path / "tiny", "4k") as fs:
        with pytest.raises(StoreUnavailable) as info:
            Store.open(fs / "history.db")
        assert info.value.reason == "disk_full"
        assert "free space" in str(info.value)


@pytest.mark.needs_root
def test_a_read_only_mount_refuses_opening_for_write_but_allows_reading(tmp_path: Path):
    with tmpfs(tmp_path / "ro", "8m") as fs:
        db = fs / "history.db"
        with Store.open(db) as store:
            store.append(ev(1), ev(2)).result()
        remount(fs, "ro")
        with pytest.raises(StoreUnavailable) as info:
            Store.open(db)
        assert info.value.reason == "read_only"
        assert "not writable" in str(info.value)
        with Store.open_readonly(db) as reader:
            assert [r.seq for r in reader.history(HistoryQuery()).records] == [2, 1]
            assert reader.verify().ok
        remount(fs, "rw")
        with Store.open(db) as store:
            assert store.append(ev(3)).result() == [3]
            assert store.verify().ok


@pytest.mark.needs_root
def test_a_database_the_kernel_refuses_to_write_fails_live_and_recovers():
    # A filesystem cannot be remounted read-only while SQLite holds the file open for
    # writing (EBUSY), so the live refusal comes from the immutable flag instead: the
    # kernel then refuses every write to the database and its WAL, as on a read-only disk.
    base = Path(tempfile.mkdtemp(dir=immutable_base()))
    db = base / "history.db"
    wal = Path(str(db) + "-wal")
    with Store.open(db) as store:
        assert store.append(ev(1, request_id="before")).result() == [1]
        chattr("+i", db, wal)
        try:
            failures = []
            for i in range(3):
                with pytest.raises(StoreUnavailable) as info:
                    store.append(ev(10 + i, request_id=f"refused{i}")).result(timeout=30)
                failures.append(info.value.reason)
            assert set(failures) <= {"read_only", "io_error"}
            assert "read_only" in failures  # the reconnected writer sees a read-only file
            assert len(store.history(HistoryQuery()).records) == 1
        finally:
            chattr("-i", db, wal)
        assert store.append(ev(2, request_id="after")).result(timeout=30) == [2]
        assert _rids(db) == {"before", "after"}
        assert store.verify().ok
        assert store.stats().failed_batches == 3


def test_the_writer_survives_an_unexpected_error_in_a_batch(tmp_path: Path):
    with Store.open(tmp_path / "history.db") as store:
        broken: Future[object] = store._writer.submit(lambda tx: 1 / 0)
        with pytest.raises(StoreUnavailable) as info:
            broken.result(timeout=10)
        assert info.value.reason == "internal"
        assert store.append(ev(1)).result(timeout=10) == [1]
        assert store.verify().ok


CHILD = textwrap.dedent(
    """
    import sys, threading
    from console.store import Event, Store
    store = Store.open(sys.argv[1])
    lock = threading.Lock()
    def work(t):
        i = 0
        while True:
            rid = f"{t}-{i}"
            seq, = store.append(Event(kind="decision", at=float(i), request_id=rid, verdict="allow",
                                      command=f"cmd {rid}", body={"n": i})).result()
            with lock:
                print(seq, rid, flush=True)
            i += 1
    for t in range(8):
        threading.Thread(target=work, args=(t,), daemon=True).start()
    threading.Event().wait()
    """
)


@pytest.mark.parametrize("acks", [50, 400, 1500])
def test_every_acknowledged_write_survives_kill_9(tmp_path: Path, acks: int):
    db = tmp_path / "history.db"
    acked = acked_then_killed(db, CHILD, acks)
    with Store.open(db) as store:
        stored = dict(
            raw(db).execute("SELECT seq, request_id FROM events WHERE kind = 'decision'").fetchall()
        )
        assert {s: stored.get(s) for s in acked} == acked
        report = store.verify()
        assert report.ok, report.message
        # A crash between a commit and the anchor update is normal, never "tampering".
        notes = store.history(HistoryQuery(kinds=("daemon",))).records
        assert all(r.event.body.get("event") != "anchor_mismatch" for r in notes)
