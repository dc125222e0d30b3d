"""Durable answers stay durable on the faster paths.

The broker now waits on the history writer through console/daemon/durable.py (one loop
wake-up per commit instead of one per write), and a request row's body text is made in
one pass (console/store/event.py). Neither may change what an agent is told or when:
an answer leaves only after its decision row is committed, a write that fails answers
deny ``store_unavailable``, and the stored text is the one the general path writes.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from console.contract.host import OSHost
from console.contract.operation import parse
from console.daemon.broker import Broker
from console.daemon.durable import LoopWaiter
from console.daemon.events import EventHub
from console.policy import Effect, Grant, GrantScope, PolicyConfig
from console.store import Store, StoreUnavailable, request_event
from console.store.event import _encode_body, encode


def _operation(root: Path, **extra):
    obj = {"kind": "process", "executable": "true", "args": ["x"], "workspace_root": str(root)}
    obj.update(extra)
    return parse(obj, OSHost())


def _decisions(db: Path) -> list[tuple[str, str, str]]:
    """Decision rows as a separate connection sees them: only what was committed."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT request_id, verdict, reason FROM events WHERE kind = 'decision'"
        ).fetchall()
    finally:
        conn.close()


@pytest.fixture
def granted(tmp_path):
    """A real store and broker, and an operation a standing grant allows."""
    ws = tmp_path / "ws"
    ws.mkdir()
    op = _operation(ws)
    store = Store.open(tmp_path / "history.db")
    broker = Broker(store, EventHub(), PolicyConfig)
    broker.grants.put(
        Grant(
            id="g-1",
            fingerprint=op.fingerprint,
            scope=GrantScope.ALWAYS,
            effect=Effect.ALLOW,
            created_at=time.time(),
        )
    )
    try:
        yield store, broker, op, tmp_path / "history.db"
    finally:
        store.close()


def test_a_grant_settled_answer_comes_only_after_its_row_is_committed(granted):
    store, broker, op, db = granted

    async def scenario():
        # Holding the writer's lock stops it just before BEGIN … COMMIT of the batch.
        store._writer.lock.acquire()
        try:
            task = asyncio.ensure_future(broker.submit(op, owner=1, peer_pid=1, agent="a-1"))
            await asyncio.sleep(0.3)
            assert not task.done(), "answered before the decision was committed"
            assert _decisions(db) == []
        finally:
            store._writer.lock.release()
        answer = await asyncio.wait_for(task, 10)
        assert (answer.verdict, answer.reason) == ("allow", "grant_always")
        assert (answer.request_id, "allow", "grant_always") in _decisions(db)

    asyncio.run(scenario())


def test_many_answers_at_once_each_wait_for_their_commit(granted):
    store, broker, op, db = granted

    async def scenario():
        answers = await asyncio.gather(
            *(broker.submit(op, owner=1, peer_pid=1, agent="a-1") for _ in range(200))
        )
        stored = {row[0] for row in _decisions(db)}
        assert {a.request_id for a in answers} <= stored
        assert len(stored) == 200

    asyncio.run(scenario())
    assert store.stats().commits < 200  # grouped: fewer commits than answers


def test_a_store_that_cannot_write_answers_deny_with_the_reason(granted):
    store, broker, op, _ = granted
    store.close()

    async def scenario():
        return await broker.submit(op, owner=1, peer_pid=1, agent="a-1")

    answer = asyncio.run(scenario())
    assert (answer.verdict, answer.reason, answer.source) == ("deny", "store_unavailable", "store")
    assert answer.authorization is None


def test_loop_waiter_settles_from_another_thread_with_result_or_error():
    async def scenario():
        waiter = LoopWaiter(asyncio.get_running_loop())
        ok: Future[int] = Future()
        bad: Future[int] = Future()
        pending = [waiter.wait(ok), waiter.wait(bad)]
        await asyncio.sleep(0.05)
        assert not any(p.done() for p in pending)  # nothing before the writer settles

        def writer() -> None:
            ok.set_result(7)
            bad.set_exception(StoreUnavailable("io_error", "disk I/O error"))

        threading.Thread(target=writer).start()
        assert await asyncio.wait_for(pending[0], 5) == 7
        with pytest.raises(StoreUnavailable, match="disk I/O error"):
            await asyncio.wait_for(pending[1], 5)
        # Already settled when asked: answered at once, the same way.
        assert await waiter.wait(ok) == 7

    asyncio.run(scenario())


def test_loop_waiter_wakes_the_loop_once_for_a_batch():
    async def scenario():
        loop = asyncio.get_running_loop()
        waiter = LoopWaiter(loop)
        futures: list[Future[int]] = [Future() for _ in range(50)]
        pending = [waiter.wait(f) for f in futures]
        wakeups = []
        original = loop.call_soon_threadsafe

        def counting(*args, **kwargs):
            wakeups.append(args[0])
            return original(*args, **kwargs)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
        try:

            def writer() -> None:
                for i, f in enumerate(futures):
                    f.set_result(i)

            t = threading.Thread(target=writer)
            t.start()
            t.join()
            assert await asyncio.gather(*pending) == list(range(50))
        finally:
            del loop.call_soon_threadsafe
        assert len(wakeups) == 1

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"env": {"LANG": "C", "PATH": "/usr/bin"}, "args": ["ü", "\x7f", 'q"\\', "\u2028"]},
        {"env": {"é": "1", "\U0001f600": "2", "\uffff": "3"}},  # non-ASCII names: general path
        {"justification": "why \U0001f600", "session_id": "s-1", "timeout_ms": 86_400_000},
        {"stdin": "aGVsbG8=", "output": {"capture_bytes": 1, "max_bytes": 1 << 30}},
    ],
)
@pytest.mark.parametrize("at", [1_796_000_000.123456, 1.0, 0.0, 1e21, 5e-7, 123456789012345680.0])
def test_request_body_text_is_what_the_general_path_writes(tmp_path, extra, at):
    op = _operation(tmp_path, **extra)
    event = request_event(op, request_id="r-1", at=at, peer_pid=1)
    general = _encode_body(dict(event.body))
    assert encode(event)[-1] == general
    assert type(event.body).__name__ == ("dict" if "env" in extra and "é" in extra["env"] else "_Canonical")


def test_request_rows_of_the_fast_path_read_back_and_verify(tmp_path):
    op = _operation(tmp_path, env={"A": "b"}, args=["ü", "q'uote"])
    with Store.open(tmp_path / "h.db") as store:
        store.append(request_event(op, request_id="r-1", at=time.time(), peer_pid=1)).result(10)
        detail = store.request_detail("r-1")
        assert detail is not None
        assert detail["request"]["body"]["operation"] == op.to_wire()
        assert detail["request"]["body"]["fingerprint"] == op.fingerprint
        report = store.verify()
    assert report.ok, report.message
