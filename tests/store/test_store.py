"""History store: schema, group commit, grants, queries, search and export on real files."""

from __future__ import annotations

import io
import json
import sqlite3
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from support.store import ev, raw

from console.contract.strictjson import canonical
from console.policy.grants import Effect, Grant, GrantScope
from console.store import (
    GENESIS,
    SCHEMA_VERSION,
    Event,
    HistoryQuery,
    Record,
    Store,
    StoreConflict,
    StoreUnavailable,
    row_hash,
    schema,
)
from console.store.chain import HEAD_SUFFIX, Anchor, HeadFile
from console.store.event import TEXT_COLUMNS


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "history.db"


@pytest.fixture
def store(db: Path):
    s = Store.open(db)
    yield s
    s.close()


# -- schema ----------------------------------------------------------------------------------


def test_new_database_is_wal_full_sync_current_schema_and_private(db: Path, store: Store):
    conn = raw(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"events", "meta", "grants", "events_fts"} <= tables
    assert db.stat().st_mode & 0o777 == 0o600
    assert Path(str(db) + HEAD_SUFFIX).stat().st_mode & 0o777 == 0o600


def test_writer_connection_uses_synchronous_full(store: Store):
    # synchronous is per connection; check the one the writer commits with.
    conn = store._writer._connect()
    try:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        conn.close()


def test_migrates_a_version_1_database_with_its_rows(db: Path):
    conn = raw(db)
    conn.execute("PRAGMA journal_mode = WAL")
    assert schema.migrate(conn, target=1) == [1]
    # Write rows the way a version-1 store did: chained, with meta and head anchors.
    prev = GENESIS
    for seq in (1, 2):
        cols: dict = dict.fromkeys(TEXT_COLUMNS, "")
        cols |= {"seq": seq, "kind": "decision", "at": 1.0 * seq, "command": f"old command {seq}"}
        cols |= {"peer_pid": None, "latency_ms": None, "body": "{}"}
        digest = row_hash(prev, cols)
        names = ", ".join(cols)
        conn.execute(
            f"INSERT INTO events ({names}, prev_hash, hash) VALUES ({', '.join('?' * (len(cols) + 2))})",
            (*cols.values(), prev, digest),
        )
        prev = digest
    conn.execute(
        "INSERT INTO meta VALUES ('store_id', 'v1store'), ('head_seq', '2'), ('head_hash', ?)", (prev,)
    )
    head, _ = HeadFile.open(str(db) + HEAD_SUFFIX)
    head.write(Anchor("v1store", 2, prev))
    head.close()
    conn.close()

    with Store.open(db) as s:
        assert raw(db).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        # The search index was built over the rows that predate it.
        assert [r.seq for r in s.history(HistoryQuery(search="old command")).records] == [2, 1]
        # v4 moved indexing into the writer: no trigger, and new rows are indexed once.
        triggers = {r[0] for r in raw(db).execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        assert "events_fts_insert" not in triggers
        s.append(ev(3, command="old command 3")).result()
        assert [r.seq for r in s.history(HistoryQuery(search="old command")).records] == [3, 2, 1]
        assert (
            raw(db).execute("SELECT count(*) FROM events_fts WHERE events_fts MATCH 'command'").fetchone()[0]
            == 3
        )
        assert s.add_grant(Grant(id="g", fingerprint="f" * 64, scope=GrantScope.ALWAYS)).result() == 4
        report = s.verify()
    assert report.ok, report.message
    assert report.checked == 4


def test_newer_schema_is_refused_clearly(db: Path):
    Store.open(db).close()
    conn = raw(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreUnavailable, match="newer than this agent-console") as info:
        Store.open(db)
    assert info.value.reason == "newer_schema"


def test_garbage_file_is_refused_clearly(db: Path):
    db.write_bytes(b"this is not a database, it is text" * 200)
    with pytest.raises(StoreUnavailable) as info:
        Store.open(db)
    assert info.value.reason == "corrupt"
    assert str(db) in str(info.value)


def test_missing_directory_is_refused_clearly(tmp_path: Path):
    with pytest.raises(StoreUnavailable, match="does not exist"):
        Store.open(tmp_path / "nope" / "history.db")


def test_second_opener_is_refused_while_the_first_holds_it(db: Path, store: Store):
    with pytest.raises(StoreUnavailable, match="already open") as info:
        Store.open(db)
    assert info.value.reason == "in_use"


# -- writes and group commit -----------------------------------------------------------------


def test_append_returns_seqs_after_commit_and_rows_are_on_disk(db: Path, store: Store):
    seqs = store.append(ev(1), ev(2), ev(3)).result(timeout=10)
    assert seqs == [1, 2, 3]
    # A separate connection sees them: committed, not just queued.
    assert raw(db).execute("SELECT count(*) FROM events").fetchone()[0] == 3


def test_concurrent_appends_from_threads_are_all_durable_and_contiguous(db: Path, store: Store):
    def worker(t: int) -> list[int]:
        out = []
        for i in range(150):
            out += store.append(ev(t * 1000 + i, request_id=f"t{t}-{i}")).result(timeout=30)
        return out

    with ThreadPoolExecutor(8) as pool:
        seqs = sorted(s for chunk in pool.map(worker, range(8)) for s in chunk)
    assert seqs == list(range(1, 8 * 150 + 1))
    conn = raw(db)
    assert conn.execute("SELECT count(*), min(seq), max(seq) FROM events").fetchone() == (1200, 1, 1200)
    assert store.verify().ok


def test_queued_appends_are_batched_into_few_commits(db: Path, store: Store):
    # Hold the database's write lock from outside so every append queues up behind it.
    blocker = raw(db)
    blocker.execute("BEGIN IMMEDIATE")
    futures: list[Future[list[int]]] = []
    lock = threading.Lock()

    def submit(t: int) -> None:
        for i in range(125):
            f = store.append(ev(t * 1000 + i, request_id=f"b{t}-{i}"))
            with lock:
                futures.append(f)

    threads = [threading.Thread(target=submit, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(futures) == 1000
    assert not any(f.done() for f in futures)  # nothing resolves before its commit
    blocker.execute("COMMIT")
    seqs = sorted(s for f in futures for s in f.result(timeout=30))
    assert seqs == list(range(1, 1001))
    stats = store.stats()
    assert stats.events == 1000
    # The first batch (whatever was queued when the writer woke) waits for the lock;
    # everything queued meanwhile goes into the second.
    assert stats.commits == 2, stats


def test_max_batch_bounds_a_batch(db: Path):
    with Store.open(db, max_batch=10) as s:
        blocker = raw(db)
        blocker.execute("BEGIN IMMEDIATE")
        futures = [s.append(ev(i)) for i in range(100)]
        blocker.execute("COMMIT")
        for f in futures:
            f.result(timeout=30)
        assert s.stats().largest_batch == 10
        assert s.stats().commits >= 10


def test_a_conflicting_job_fails_alone_in_its_batch(db: Path, store: Store):
    store.append(ev(1, request_id="dup")).result()
    blocker = raw(db)
    blocker.execute("BEGIN IMMEDIATE")
    before = store.append(ev(2, request_id="a"))
    second = store.append(ev(3, request_id="dup"), ev(4, request_id="b"))  # atomic: neither is kept
    after = store.append(ev(5, request_id="c"))
    blocker.execute("COMMIT")
    assert before.result(timeout=10) == [2]
    with pytest.raises(StoreConflict, match="already has a decision"):
        second.result(timeout=10)
    assert after.result(timeout=10) == [3]
    assert store.verify().ok


def test_a_conflicting_job_alone_in_its_batch_is_undone_and_the_store_goes_on(db: Path, store: Store):
    # A batch of one job runs without a savepoint: its failure rolls back the whole
    # transaction, which must leave neither rows nor a stale chain head behind.
    store.append(ev(1, request_id="dup")).result()
    with pytest.raises(StoreConflict, match="already has a decision"):
        store.append(ev(2, request_id="dup")).result(timeout=10)
    assert store.stats().largest_batch == 1
    assert store.append(ev(3, request_id="c")).result(timeout=10) == [2]
    assert raw(db).execute("SELECT count(*) FROM events").fetchone()[0] == 2
    assert store.verify().ok


def test_the_head_anchor_names_the_tail_once_the_writer_is_idle(db: Path, store: Store):
    # Answers are given before the anchor is rewritten as committed; the rewrite still
    # follows before the next batch (the pending anchor covers the moment between).
    for i in range(3):
        store.append(ev(i)).result()
    store.append(ev(9)).result()
    tail = raw(db).execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    head = HeadFile.open_readonly(str(db) + HEAD_SUFFIX)
    assert head is not None
    deadline = time.monotonic() + 10
    while (anchor := head.read()) is not None and anchor.pending_seq is not None:
        assert time.monotonic() < deadline, anchor
        time.sleep(0.01)
    assert anchor is not None and (anchor.seq, anchor.hash) == tuple(tail)


def test_bad_events_fail_their_own_call_with_a_clear_error(store: Store):
    cases = [
        (ev(1, kind="Bad Kind"), "event kind"),
        (ev(1, at=float("nan")), "at must be finite"),
        (ev(1, command="a\x00b"), "NUL"),
        (ev(1, note="\ud800"), "surrogate"),
        (ev(1, body={"x": float("inf")}), "non-finite"),
        (ev(1, body={"x": object()}), "not JSON"),
        (ev(1, body={1: "x"}), "keys must be strings"),
        (ev(1, peer_pid="12"), "peer_pid"),
    ]
    for event, message in cases:
        with pytest.raises((ValueError, TypeError), match=message):
            store.append(event).result()
    assert store.append(ev(1)).result() == [1]


def test_close_drains_queued_writes_and_later_writes_fail(db: Path):
    s = Store.open(db)
    blocker = raw(db)
    blocker.execute("BEGIN IMMEDIATE")
    futures = [s.append(ev(i)) for i in range(50)]
    threading.Timer(0.2, lambda: blocker.execute("COMMIT")).start()
    s.close()
    assert all(f.done() and f.exception() is None for f in futures)
    late = s.append(ev(99))
    with pytest.raises(StoreUnavailable, match="closed"):
        late.result()
    with pytest.raises(StoreUnavailable, match="closed"):
        s.history(HistoryQuery())
    assert raw(db).execute("SELECT count(*) FROM events").fetchone()[0] == 50


def test_a_cancelled_future_does_not_cancel_the_write(db: Path, store: Store):
    blocker = raw(db)
    blocker.execute("BEGIN IMMEDIATE")
    f = store.append(ev(1))
    assert f.cancel()
    blocker.execute("COMMIT")
    assert store.append(ev(2)).result(timeout=10) == [2]
    assert raw(db).execute("SELECT count(*) FROM events").fetchone()[0] == 2


# -- grants ----------------------------------------------------------------------------------


def grant(gid: str, scope: GrantScope = GrantScope.ONCE, **kw) -> Grant:
    return Grant(id=gid, fingerprint=kw.pop("fingerprint", "a" * 64), scope=scope, created_at=100.0, **kw)


def test_add_grant_writes_the_row_and_its_event_together(store: Store):
    seq = store.add_grant(
        grant("g1", GrantScope.ALWAYS, note="ok"), tool="shell", summary="git push"
    ).result()
    (g,) = store.grants()
    assert g == grant("g1", GrantScope.ALWAYS, note="ok")
    page = store.history(HistoryQuery(kinds=("grant",)))
    assert [r.seq for r in page.records] == [seq]
    rec = page.records[0]
    assert (rec.event.command, rec.event.tool, rec.event.scope, rec.event.verdict) == (
        "git push",
        "shell",
        "always",
        "allow",
    )
    with pytest.raises(StoreConflict, match="already exists"):
        store.add_grant(grant("g1")).result()


def test_a_once_grant_is_consumed_by_exactly_one_of_many_concurrent_callers(store: Store):
    for round_ in range(5):
        gid = f"once-{round_}"
        store.add_grant(grant(gid)).result()
        barrier = threading.Barrier(16)

        def use(i: int, gid: str = gid, barrier: threading.Barrier = barrier) -> bool:
            barrier.wait()
            return store.use_grant(gid, 200.0 + i, request_id=f"req-{i}").result(timeout=10)

        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(use, range(16)))
        assert results.count(True) == 1
        (g,) = [g for g in store.grants(include_inactive=True) if g.id == gid]
        assert g.uses == 1
        assert gid not in {g.id for g in store.grants(now=300.0)}
    used = store.history(HistoryQuery(kinds=("grant_used",)))
    assert len(used.records) == 5
    assert all(r.event.request_id.startswith("req-") for r in used.records)
    assert store.verify().ok


def test_standing_grants_count_every_use_and_deny_rules_can_be_used_repeatedly(store: Store):
    store.add_grant(grant("always", GrantScope.ALWAYS)).result()
    store.add_grant(grant("deny-once", GrantScope.ONCE, effect=Effect.DENY)).result()
    assert all(store.use_grant("always", 200.0 + i).result() for i in range(3))
    assert all(store.use_grant("deny-once", 200.0 + i).result() for i in range(2))
    uses = {g.id: (g.uses, g.last_used_at) for g in store.grants()}
    assert uses == {"always": (3, 202.0), "deny-once": (2, 201.0)}


def test_grant_calls_refuse_bad_arguments_clearly(store: Store):
    store.add_grant(grant("g")).result()
    for call in (
        lambda: store.use_grant("g", float("nan")),
        lambda: store.use_grant("g", "soon"),  # type: ignore[arg-type]
        lambda: store.use_grant("", 1.0),
        lambda: store.revoke_grant("g", float("inf")),
        lambda: store.revoke_grant(None, 1.0),  # type: ignore[arg-type]
    ):
        with pytest.raises((TypeError, ValueError), match=r"grant_id|finite"):
            call().result()
    assert store.verify().ok
    assert store.use_grant("g", 1.0).result() is True


def test_revoke_grant(store: Store):
    store.add_grant(grant("g", GrantScope.SESSION, session_id="s1")).result()
    assert store.revoke_grant("g", 150.0).result() is True
    assert store.revoke_grant("g", 160.0).result() is False
    assert store.revoke_grant("unknown", 160.0).result() is False
    assert store.use_grant("g", 170.0).result() is False
    assert store.grants(now=151.0) == []
    (g,) = store.grants(include_inactive=True)
    assert g.revoked_at == 150.0
    assert len(store.history(HistoryQuery(kinds=("grant_revoked",))).records) == 1


def test_expiry_is_kept_and_enforced(db: Path):
    with Store.open(db) as s:
        s.add_grant(grant("g", GrantScope.ALWAYS, expires_at=500.0)).result()
        assert [g.expires_at for g in s.grants(now=499.0)] == [500.0]
        assert s.grants(now=500.0) == []
        assert s.use_grant("g", 499.0).result() is True
        assert s.use_grant("g", 500.0).result() is False
    with Store.open(db) as s:
        (g,) = s.grants(include_inactive=True)
        assert (g.expires_at, g.uses, g.last_used_at) == (500.0, 1, 499.0)
        assert s.verify().ok


# -- history queries -------------------------------------------------------------------------

KINDS = ("request", "decision", "outcome", "file_event")


def _corpus(store: Store) -> list[Event]:
    events = _corpus_events()
    for chunk in range(0, 240, 40):
        store.append(*events[chunk : chunk + 40]).result()
    return events


def _corpus_events() -> list[Event]:
    events = []
    for i in range(240):
        kind = KINDS[i % 4]
        events.append(
            Event(
                kind=kind,
                at=1000.0 + i,
                request_id=f"r{i // 4}",
                fingerprint=f"fp{i % 7}",
                tool=("shell", "git", "claude-code:Bash")[i % 3],
                executable="/usr/bin/git" if i % 3 == 1 else "/bin/sh",
                session_id=f"s{i % 5}",
                verdict=("allow", "deny")[i % 2] if kind == "decision" else "",
                source=("operator", "policy", "timeout")[i % 3] if kind == "decision" else "",
                command=f"cmd number {i}",
            )
        )
    return events


@pytest.mark.parametrize(
    ("query", "predicate"),
    [
        (HistoryQuery(), lambda e: True),
        (HistoryQuery(kinds=("decision",)), lambda e: e.kind == "decision"),
        (HistoryQuery(kinds=("decision", "outcome")), lambda e: e.kind in ("decision", "outcome")),
        (HistoryQuery(verdict="deny"), lambda e: e.verdict == "deny"),
        (HistoryQuery(source="timeout"), lambda e: e.source == "timeout"),
        (HistoryQuery(tool="git"), lambda e: e.tool == "git"),
        (HistoryQuery(session_id="s3"), lambda e: e.session_id == "s3"),
        (HistoryQuery(fingerprint="fp2"), lambda e: e.fingerprint == "fp2"),
        (HistoryQuery(request_id="r7"), lambda e: e.request_id == "r7"),
        (HistoryQuery(since=1100.0), lambda e: e.at >= 1100.0),
        (HistoryQuery(until=1050.0), lambda e: e.at < 1050.0),
        (
            HistoryQuery(since=1010.0, until=1020.0, kinds=("request",)),
            lambda e: 1010 <= e.at < 1020 and e.kind == "request",
        ),
        (
            HistoryQuery(kinds=("decision",), verdict="allow", tool="shell", session_id="s0"),
            lambda e: (e.kind, e.verdict, e.tool, e.session_id) == ("decision", "allow", "shell", "s0"),
        ),
        # Search leaves out request events: their decisions repeat the same text.
        (
            HistoryQuery(search="number 1", tool="git"),
            lambda e: "number 1" in e.command and e.tool == "git" and e.kind != "request",
        ),
        (
            HistoryQuery(search="r 2", session_id="s1"),
            lambda e: "r 2" in e.command and e.session_id == "s1" and e.kind != "request",
        ),
        (HistoryQuery(search="7", kinds=("outcome",)), lambda e: "7" in e.command and e.kind == "outcome"),
    ],
)
def test_history_filters(store: Store, query: HistoryQuery, predicate):
    events = _corpus(store)
    want = [i + 1 for i, e in enumerate(events) if predicate(e)][::-1]
    page = store.history(query)
    assert [r.seq for r in page.records] == want[: query.limit]
    assert store.count(query) == len(want)


def test_keyset_paging_both_ways(store: Store):
    events = _corpus(store)
    want = [i + 1 for i, e in enumerate(events) if e.kind == "decision"][::-1]
    got: list[int] = []
    q = HistoryQuery(kinds=("decision",), limit=7)
    page = store.history(q)
    while True:
        got += [r.seq for r in page.records]
        if page.older is None:
            break
        page = store.history(HistoryQuery(kinds=("decision",), limit=7, before_seq=page.older))
    assert got == want
    # And back up from the oldest page, newest first within each page.
    up: list[int] = []
    page = store.history(HistoryQuery(kinds=("decision",), limit=7, after_seq=0))
    while True:
        up = [r.seq for r in page.records] + up
        if page.newer is None:
            break
        page = store.history(HistoryQuery(kinds=("decision",), limit=7, after_seq=page.newer))
    assert up == want


def test_count_is_capped(store: Store):
    _corpus(store)
    assert store.count(HistoryQuery()) == 240
    assert store.count(HistoryQuery(), cap=100) == 100


def test_request_detail_and_previous_decisions(store: Store):
    _corpus(store)
    detail = store.request_detail("r3")
    assert detail is not None
    assert [e["kind"] for e in detail["events"]] == list(KINDS)
    assert detail["request"]["seq"] == 13
    assert detail["decision"]["seq"] == 14
    assert detail["outcome"]["seq"] == 15
    assert [f["seq"] for f in detail["file_events"]] == [16]
    assert store.request_detail("nope") is None
    events = _corpus_events()
    want = [
        i + 1
        for i, e in enumerate(events)
        if e.kind == "decision" and e.tool == "git" and e.executable == "/usr/bin/git"
    ][::-1]
    prev = store.previous_decisions("git", "/usr/bin/git", limit=3)
    assert [p["seq"] for p in prev] == want[:3]
    assert store.previous_decisions("git", "/bin/nothing") == []


def test_bad_queries_are_refused_clearly():
    with pytest.raises(ValueError, match="limit"):
        HistoryQuery(limit=0)
    with pytest.raises(ValueError, match="limit"):
        HistoryQuery(limit=100_000)
    with pytest.raises(ValueError, match="kinds"):
        HistoryQuery(kinds="decision")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="since"):
        HistoryQuery(since=float("nan"))
    with pytest.raises(ValueError, match="NUL"):
        HistoryQuery(search="a\x00b")


# -- search ----------------------------------------------------------------------------------

TEXTS = [
    "rm -rf /tmp/build",
    'echo "x marks the spot"',
    "grep NEAR( src",
    "ls * | wc",
    "git log --format=%H:%s",
    "make AND test",
    "x - y",
    "cat ünïcødé.txt",
    "日本語のファイル",
    "touch .git/hooks/pre-commit",
    "plain text only",
    "100% done",
    "a_b_c",
    "launch 🚀 now",
    "it's a quote",
    "back\\slash",
    "(paren) {brace} ^caret",
    "NOT this col: value",
    'say " OR " loudly',
    "rm* AND more",
    "NEAR(a b, 2) query",
]

HOSTILE = [
    "rm -rf",
    '"x',
    "NEAR(",
    "*",
    ":",
    "AND",
    "-",
    "ünïcødé",
    "日本語",
    "🚀",
    "",
    "   ",
    "hooks/pre-com",
    "%",
    "_",
    "100%",
    "a_b",
    "OR",
    "NOT",
    "^",
    "(",
    "{brace}",
    "col:",
    "'",
    "\\",
    '" OR "',
    "rm* AND",
    "NEAR(a b, 2)",
    "x - y",
    "PRE-COMMIT",
]


@pytest.mark.parametrize("needle", HOSTILE)
def test_search_treats_operator_input_as_plain_text(store: Store, needle: str):
    events = []
    for i, text in enumerate(TEXTS):
        # Spread the texts over every searchable column.
        column = ("command", "cwd", "justification", "reason", "note")[i % 5]
        events.append(ev(i, **{column: text, "command": text if column == "command" else "x"}))
    events.append(ev(99, command="", note=""))
    store.append(*events).result()
    stripped = needle.strip()

    def matches(e: Event) -> bool:
        fields = (e.command, e.cwd, e.justification, e.reason, e.note)
        return any(stripped.lower() in f.lower() for f in fields)

    want = [i + 1 for i, e in enumerate(events) if matches(e)][::-1]
    page = store.history(HistoryQuery(search=needle))
    assert [r.seq for r in page.records] == want
    assert store.count(HistoryQuery(search=needle)) == len(want)
    if stripped:
        assert want  # every hostile input really occurs in the corpus


def test_search_finds_paths_by_substring_and_ignores_case(store: Store):
    store.append(ev(1, command="touch /w/.git/hooks/pre-commit"), ev(2, command="ls /w/src")).result()
    assert [r.seq for r in store.history(HistoryQuery(search="HOOKS/PRE-COM")).records] == [1]
    assert [r.seq for r in store.history(HistoryQuery(search="ks/p")).records] == [1]
    assert [r.seq for r in store.history(HistoryQuery(search="w/")).records] == [2, 1]


# -- export ----------------------------------------------------------------------------------


def test_export_jsonl_round_trips_and_rechecks_with_the_documented_rule(store: Store):
    _corpus(store)
    store.add_grant(grant("g")).result()
    out = io.StringIO()
    assert store.export_jsonl(out) == 241
    lines = out.getvalue().splitlines()
    records = [Record.from_dict(json.loads(line)) for line in lines]
    stored = store.history(HistoryQuery(limit=1000)).records[::-1]
    assert records == stored
    prev = GENESIS
    for line in lines:
        d = json.loads(line)
        cols = {k: v for k, v in d.items() if k not in ("prev_hash", "hash")}
        cols["body"] = canonical(d["body"]).decode()
        assert d["prev_hash"] == prev
        assert row_hash(prev, cols) == d["hash"]
        prev = d["hash"]


def test_export_with_a_query(store: Store):
    events = _corpus(store)
    out = io.StringIO()
    n = store.export_jsonl(out, HistoryQuery(kinds=("decision",), verdict="deny"))
    seqs = [json.loads(line)["seq"] for line in out.getvalue().splitlines()]
    assert n == len(seqs)
    assert seqs == [i + 1 for i, e in enumerate(events) if e.kind == "decision" and e.verdict == "deny"]


def test_reads_work_from_many_threads_while_writing(store: Store):
    _corpus(store)
    stop = time.monotonic() + 1.0
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            while time.monotonic() < stop:
                page = store.history(HistoryQuery(search="number", limit=50))
                assert len(page.records) == 50
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    i = 0
    while time.monotonic() < stop:
        store.append(ev(10_000 + i, request_id=f"w{i}")).result()
        i += 1
    for t in threads:
        t.join()
    assert errors == []
    assert store.verify().ok


def test_raw_sqlite_cannot_update_events_without_dropping_the_guard(db: Path, store: Store):
    store.append(ev(1)).result()
    conn = raw(db)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET command = 'x'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM events")


# -- reading beside the writer ---------------------------------------------------------------


def _write_continuously(store: Store, stop: threading.Event) -> threading.Thread:
    def run() -> None:
        i = 0
        while not stop.is_set():
            store.append(ev(50_000 + i, request_id=f"bg{i}")).result()
            i += 1

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_verify_while_the_writer_is_busy(store: Store):
    _corpus(store)
    stop = threading.Event()
    thread = _write_continuously(store, stop)
    try:
        reports = [store.verify() for _ in range(5)]
    finally:
        stop.set()
        thread.join()
    assert all(r.ok for r in reports), [r.message for r in reports]
    assert reports[-1].checked > 240


def test_a_read_only_opener_reads_and_verifies_beside_a_writer(db: Path, store: Store):
    _corpus(store)
    stop = threading.Event()
    thread = _write_continuously(store, stop)
    try:
        with Store.open_readonly(db) as reader:
            reports = [reader.verify() for _ in range(5)]
            assert len(reader.history(HistoryQuery(limit=10)).records) == 10
            with pytest.raises(StoreUnavailable, match="read-only") as info:
                reader.append(ev(1)).result()
            assert info.value.reason == "read_only"
    finally:
        stop.set()
        thread.join()
    assert all(r.ok for r in reports), [r.message for r in reports]


def test_read_only_open_of_a_missing_or_old_history_is_refused(tmp_path: Path):
    with pytest.raises(StoreUnavailable, match="no history"):
        Store.open_readonly(tmp_path / "none.db")
    old = tmp_path / "old.db"
    conn = raw(old)
    schema.migrate(conn, target=1)
    conn.close()
    with pytest.raises(StoreUnavailable, match="start the daemon once"):
        Store.open_readonly(old)


def test_page_to_dict_and_none_filters(store: Store):
    _corpus(store)
    q = HistoryQuery(kinds=None, verdict=None, search=None, tool="git", limit=2)
    d = store.history(q).to_dict()
    assert set(d) == {"rows", "older", "newer"}
    assert [r["tool"] for r in d["rows"]] == ["git", "git"]
    assert d["older"] == d["rows"][-1]["seq"]
    json.dumps(d)  # plain JSON types only


def test_use_grant_counts_several_uses_in_one_event(store: Store):
    g = Grant(id="g-many", fingerprint="f" * 64, scope=GrantScope.ALWAYS, created_at=1000.0)
    store.add_grant(g).result()
    assert store.use_grant("g-many", 1001.0, count=5).result() is True
    assert store.use_grant("g-many", 1002.0).result() is True
    [row] = store.grants()
    assert (row.uses, row.last_used_at) == (6, 1002.0)
    assert store.verify().ok
    once = Grant(id="g-once", fingerprint="e" * 64, scope=GrantScope.ONCE, created_at=1000.0)
    store.add_grant(once).result()
    assert store.use_grant("g-once", 1003.0, count=2).result() is False  # a once grant is used once
    with pytest.raises(ValueError, match="count must be a positive integer"):
        store.use_grant("g-many", 1004.0, count=0).result()
