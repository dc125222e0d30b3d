"""Tampering with the history shows at once, not only when someone runs `history verify`.

A replaced history database, or a row deleted inside it (the append-only triggers
dropped, the row deleted, the triggers put back), used to be found only by a manual
`history verify`: `daemon start`, `daemon status` and the console said nothing. Now the
daemon checks the tail and anchors when it opens the history and walks every row in the
background; a mismatch is a line in `daemon status`, a non-zero `daemon start --check`,
and in the console a red header pill with a notification.

A broken policy.toml used to start the daemon on the (weaker) defaults with exit 0, and a
damaged history database said "internal error ... report it" quoting an earlier run's
log; now the first refuses to start naming the key, and the second says it is damaged
and how to recover (`history recover`, which keeps the old file aside).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from support.daemon import DaemonProcess, short_tmp, trusting_test_workspaces
from support.tui import Clock, Notices, make_app, screen_text, until

from console.store import Store, daemon_event


@pytest.fixture
def stopped():
    """A daemon that ran (its history has a few rows), now stopped: (process, its state dir's base)."""
    base = short_tmp()
    d = DaemonProcess(base / "s", "approval_timeout_s = 30\n").start()
    d.stop()
    with Store.open(d.loc.database) as store:
        for i in range(20):
            store.append(daemon_event(at=1.0 + i, note=f"row {i}")).result()
    yield d
    d.cli("daemon", "stop", "--force")  # one a test started with `daemon start`
    d.stop()
    shutil.rmtree(base, ignore_errors=True)


def delete_a_row_behind_the_triggers(database: Path, seq: int) -> None:
    """Drop the append-only triggers, delete a row, and put the triggers back as they were."""
    conn = sqlite3.connect(str(database), isolation_level=None)
    triggers = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"
    ).fetchall()
    assert triggers
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    conn.execute("DROP TRIGGER IF EXISTS events_no_delete")
    conn.execute("DELETE FROM events WHERE seq = ?", (seq,))
    for (sql,) in triggers:
        conn.execute(sql)
    conn.close()


def test_a_row_deleted_behind_the_triggers_fails_start_check_and_shows_in_status(stopped):
    d = stopped
    delete_a_row_behind_the_triggers(d.loc.database, 7)
    r = d.cli("daemon", "start", "--check")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "TAMPERED (deleted" in r.stderr and "seq 7" in r.stderr, r.stderr
    status = d.cli("daemon", "status")
    assert status.returncode == 0
    assert "integrity   TAMPERED (deleted, found full verify)" in status.stdout, status.stdout


def test_a_replaced_history_database_fails_start_check(stopped):
    d = stopped
    other = short_tmp("other-")
    with Store.open(other / "history.sqlite3") as store:  # a history of its own, freshly made
        store.append(daemon_event(at=1.0, note="a clean slate")).result()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{d.loc.database}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(other / "history.sqlite3", d.loc.database)
    r = d.cli("daemon", "start", "--check")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "integrity   TAMPERED" in r.stderr and "found at start" in r.stderr, r.stderr
    shutil.rmtree(other, ignore_errors=True)


def test_an_intact_history_passes_start_check(stopped):
    r = stopped.cli("daemon", "start", "--check")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "intact" in r.stdout


async def test_the_console_shows_tamper_as_a_red_pill_and_one_notification(stopped):
    d = stopped
    delete_a_row_behind_the_triggers(d.loc.database, 5)
    d.start()
    seen = Notices()
    app = make_app(d, Clock())
    async with app.run_test(size=(130, 30), message_hook=seen) as pilot:
        await until(pilot, lambda: "history TAMPERED" in screen_text(app).splitlines()[0])
        assert app.pills.items["integrity"] == ("history TAMPERED", "error")
        said = [n for n in seen.raised if n.title == "history"]
        assert len(said) == 1 and said[0].severity == "error"
        assert "deleted" in said[0].message and "agent-console history verify" in said[0].message


def test_a_broken_policy_refuses_to_start_naming_the_key(stopped):
    d = stopped
    d.loc.policy.write_text(trusting_test_workspaces('approval = "sometimes"\ntripwire = "pause"\n'))
    r = d.cli("daemon", "start")
    assert r.returncode == 1
    assert "approval: unknown value" in r.stderr and "does not start on a broken policy" in r.stderr
    assert "internal error" not in r.stderr
    assert d.cli("daemon", "status").returncode == 3  # nothing runs on the weaker defaults


def test_a_damaged_history_says_so_once_and_recovers_keeping_the_old_file(stopped):
    d = stopped
    data = bytearray(d.loc.database.read_bytes())
    for i in range(100, min(len(data), 30_000), 7):
        data[i] = 0x5A
    d.loc.database.write_bytes(data)
    r = d.cli("daemon", "start")
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr  # one message, none of an earlier run's log lines
    assert "history is damaged" in lines[0] and "agent-console history recover" in lines[0]
    assert "internal error" not in r.stderr

    r = d.cli("history", "recover")
    assert r.returncode == 0, r.stderr
    aside = [p for p in d.loc.state_dir.iterdir() if p.name.startswith("history.sqlite3.damaged-")]
    assert any(p.name.endswith(".head") for p in aside)
    kept = next(p for p in aside if not p.name.endswith((".head", "-wal", "-shm")))
    assert kept.read_bytes()[:200] == bytes(data[:200])  # the damaged file itself, untouched

    r = d.cli("daemon", "start", "--check")
    assert r.returncode == 0, r.stderr
    export = d.cli("history", "export").stdout
    assert "the previous one was moved to" in export and kept.name in export


def test_recover_refuses_a_healthy_history_and_a_running_daemon(stopped):
    d = stopped
    r = d.cli("history", "recover")
    assert r.returncode == 2 and "not damaged" in r.stderr
    d.start()
    r = d.cli("history", "recover")
    assert r.returncode == 2 and "stop it first" in r.stderr


def test_the_full_verify_reports_its_progress(tmp_path):
    with Store.open(tmp_path / "h.sqlite3") as store:
        store.append(*(daemon_event(at=1.0 + i, note=f"{i}") for i in range(10_000))).result()
        seen: list[int] = []
        report = store.verify(progress=seen.append)
    assert report.ok
    assert seen and seen == sorted(seen) and seen[-1] < report.checked


def test_status_lines_say_how_far_the_check_is():
    from console.cli.daemon_commands import integrity_lines
    from console.protocol.status import IntegrityStatus

    checking = IntegrityStatus(
        state="checking", checked=4096, total=50_000, findings=[], finished_at=None, error=""
    )
    assert integrity_lines(checking) == ["integrity   checking the history: 4,096 of 50,000 rows so far"]
