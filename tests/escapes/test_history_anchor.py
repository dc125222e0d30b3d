"""A history that start-up cannot launder.

The attacker knows the hashing rule and can write the state directory while the daemon
is down: it appends correctly chained rows (here, an "always" grant for a command the
operator denied), moves the meta head with them, and leaves the head file behind.
Before, the next start re-anchored with one WARNING and honoured the grant.
"""

from __future__ import annotations

import threading

import pytest
from support.daemon import DaemonProcess, operation, wait_for, workspace
from support.store import behind_the_head, raw, unguard

from console.policy.grants import Grant, GrantScope
from console.store import Store, row_hash
from console.store.chain import HEAD_SUFFIX, Anchor, HeadFile
from console.store.event import HASHED_COLUMNS

NET = {"network": "any"}  # an escalation: the policy alone never allows it


@pytest.fixture
def daemon(fresh_daemon):
    """A daemon per test: each tampers with its own store."""
    return fresh_daemon


def fingerprint_of(d: DaemonProcess, op: dict) -> str:
    """Submit ``op`` once and deny it: the operator said no, and learns its fingerprint."""
    box: dict = {}
    t = threading.Thread(target=lambda: box.update(a=d.agent().submit(op)), daemon=True)
    t.start()
    with d.operator() as o:
        item = wait_for(lambda: o.call("pending.list")["pending"])[0]
        o.call("decide", {"target": item["request_id"], "action": "deny", "reason": "no"})
    t.join(20)
    assert box["a"]["verdict"] == "deny"
    return str(item["fingerprint"])


def forge_grant_offline(d: DaemonProcess, fingerprint: str) -> None:
    """With the daemon stopped: append a correctly chained grant (meta head moved with
    it) through the store's own code, then put the old head file back."""
    grant = Grant(id="forged", fingerprint=fingerprint, scope=GrantScope.ALWAYS, created_at=1.0)
    behind_the_head(d.loc.database, lambda s: s.add_grant(grant).result())


def submit_quick(d: DaemonProcess, op: dict) -> dict:
    with d.agent() as agent:
        return agent.submit(op, timeout_s=0.5)


def test_forged_chained_grant_with_moved_meta_head_is_not_honoured_after_restart(daemon):
    ws = workspace()
    op = operation(ws, args=["forged-grant"], **NET)
    fp = fingerprint_of(daemon, op)
    daemon.stop()
    forge_grant_offline(daemon, fp)
    daemon.start()

    # Not honoured: the request waits for the operator (and times out), it is not granted.
    answer = submit_quick(daemon, op)
    assert answer["verdict"] == "deny" and answer["reason"] == "approval_timeout", answer

    # Flagged in daemon status and in verify (exit 1, saying what to do).
    assert "UNACCEPTED rows" in daemon.cli("daemon", "status").stdout
    with daemon.operator() as o:
        flagged = o.call("daemon.status")["history"]["unaccepted"]
    assert len(flagged) == 1
    low, high = flagged[0]
    verify = daemon.cli("history", "verify")
    assert verify.returncode == 1 and "UNACCEPTED" in verify.stderr and "history accept" in verify.stderr
    listing = daemon.cli("history", "accept")
    assert listing.returncode == 1 and f"rows {low}-{high}" in listing.stdout

    # The operator reviews and accepts: from then on the grant counts.
    accepted = daemon.cli("history", "accept", "--through", str(high), "--note", "reviewed")
    assert accepted.returncode == 0, accepted.stderr
    assert f"accepted rows {low}-{high}" in accepted.stdout
    assert submit_quick(daemon, op)["verdict"] == "allow"
    assert daemon.cli("history", "verify").returncode == 0


def test_a_forged_acceptance_among_the_forged_rows_accepts_nothing(daemon):
    ws = workspace()
    op = operation(ws, args=["forged-accept"], **NET)
    fp = fingerprint_of(daemon, op)
    daemon.stop()
    forge_grant_offline(daemon, fp)
    daemon.start()  # rows flagged here
    daemon.stop()
    # The attacker now forges an acceptance too (chained, meta moved, head file kept).
    head = str(daemon.loc.database) + HEAD_SUFFIX
    with open(head, "rb") as f:
        saved = f.read()
    with Store.open(daemon.loc.database) as s:
        s.accept(10**6, 2.0).result()
    with open(head, "wb") as f:
        f.write(saved)
    daemon.start()
    assert submit_quick(daemon, op)["verdict"] == "deny"
    assert daemon.cli("history", "verify").returncode == 1


def test_an_anchor_kept_elsewhere_catches_a_fully_resealed_history(daemon, tmp_path):
    ws = workspace()
    with daemon.agent() as agent:
        for i in range(5):
            assert agent.submit(operation(ws, args=[f"a{i}"]))["verdict"] == "allow"
    kept = tmp_path / "history.anchor"
    r = daemon.cli("history", "anchor", "--to", str(kept))
    assert r.returncode == 0, r.stderr
    assert daemon.cli("history", "verify", "--anchor", str(kept)).returncode == 0
    daemon.stop()

    # The attacker rewrites one old decision and re-seals every row after it, the meta
    # head and the head file: the state directory's own anchors all agree.
    db = daemon.loc.database
    c = raw(db)
    unguard(c)
    cols = (*HASHED_COLUMNS, "prev_hash", "hash")
    rows = [
        dict(zip(cols, r, strict=True))
        for r in c.execute(f"SELECT {', '.join(cols)} FROM events ORDER BY seq")
    ]
    target = next(r for r in rows if r["kind"] == "decision")
    prev = None
    for r in rows:
        if r["seq"] == target["seq"]:
            r["reason"] = "rewritten"
        if prev is not None:
            r["prev_hash"] = prev
        if r["seq"] >= target["seq"]:
            r["hash"] = row_hash(r["prev_hash"], {k: r[k] for k in HASHED_COLUMNS})
            c.execute(
                "UPDATE events SET reason = ?, prev_hash = ?, hash = ? WHERE seq = ?",
                (r["reason"], r["prev_hash"], r["hash"], r["seq"]),
            )
        prev = r["hash"]
    c.execute("INSERT INTO events_fts(events_fts) VALUES ('rebuild')")  # the search index too
    last = rows[-1]
    c.execute("UPDATE meta SET value = ? WHERE key = 'head_hash'", (last["hash"],))
    store_id = c.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]
    c.close()
    head, _ = HeadFile.open(str(db) + HEAD_SUFFIX)
    head.write(Anchor(store_id, last["seq"], last["hash"]))
    head.close()

    assert daemon.cli("history", "verify").returncode == 0  # the local anchors were rewritten too
    caught = daemon.cli("history", "verify", "--anchor", str(kept))
    assert caught.returncode == 1, caught.stdout
    assert "anchor file" in caught.stderr


def test_deleted_search_index_rows_are_reported_by_verify(daemon):
    ws = workspace()
    with daemon.agent() as agent:
        assert agent.submit(operation(ws, args=["needle-in-history"]))["verdict"] == "allow"
    assert daemon.cli("history", "--search", "needle-in").stdout.count("needle-in-history") == 1
    daemon.stop()
    c = raw(daemon.loc.database)
    seq, *texts = c.execute(
        "SELECT seq, command, cwd, justification, reason, note FROM events "
        "WHERE kind = 'decision' AND command LIKE '%needle-in-history%'"
    ).fetchone()
    c.execute(
        "INSERT INTO events_fts(events_fts, rowid, command, cwd, justification, reason, note) "
        "VALUES ('delete', ?, ?, ?, ?, ?, ?)",
        (seq, *texts),
    )
    c.close()
    daemon.start()
    assert "needle-in-history" not in daemon.cli("history", "--search", "needle-in").stdout  # hidden ...
    r = daemon.cli("history", "verify")
    assert r.returncode == 1 and "search index" in r.stderr and str(seq) in r.stderr  # ... and caught
