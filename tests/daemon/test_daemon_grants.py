"""The broker's grant book against a real store: revoking by id or fingerprint prefix,
and a standing grant's uses counted in memory and written in one row per flush."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from console.daemon.broker import Broker
from console.daemon.errors import Conflict, InvalidParams, NotFound
from console.daemon.events import EventHub
from console.policy import Effect, Grant, GrantScope, PolicyConfig
from console.protocol.events import Topic
from console.store import Store

FP_A = "abcdef" + "0" * 58
FP_B = "abcdef" + "1" * 58


@pytest.fixture
def book(tmp_path):
    store = Store.open(tmp_path / "history.db")
    events = EventHub()
    heard: list[dict[str, Any]] = []
    events.subscribe(1, frozenset({Topic.GRANTS}), lambda raw: heard.append(msgspec.json.decode(raw)))
    broker = Broker(store, events, PolicyConfig, clock=lambda: 100.0)
    try:
        yield broker.grants, store, heard
    finally:
        store.close()


def _grant(gid: str, fp: str, scope: GrantScope = GrantScope.ALWAYS) -> Grant:
    return Grant(id=gid, fingerprint=fp, scope=scope, effect=Effect.ALLOW, created_at=50.0)


def test_added_grants_apply_and_revoking_a_prefix_ends_each_of_its_operation(book):
    grants, store, heard = book

    async def scenario():
        await grants.add(_grant("g-1", FP_A), tool="git", summary="git status")
        await grants.add(_grant("g-2", FP_A, GrantScope.SESSION))
        await grants.add(_grant("g-3", FP_B))
        assert [g.id for g in grants.for_operation(FP_A)] == ["g-1", "g-2"]
        with pytest.raises(Conflict):
            await grants.revoke("abcdef")  # two operations share it
        with pytest.raises(InvalidParams):
            await grants.revoke("abc")
        assert await grants.revoke(FP_A[:10]) == ["g-1", "g-2"]
        with pytest.raises(NotFound):
            await grants.revoke(FP_A)
        assert await grants.revoke("g-3") == ["g-3"]

    asyncio.run(scenario())
    assert [(g.id, g.revoked_at) for g in store.grants(include_inactive=True)] == [
        ("g-1", 100.0),
        ("g-2", 100.0),
        ("g-3", 100.0),
    ]
    assert [(e["change"], e.get("grant_ids") or e["grant"]["id"]) for e in heard] == [
        ("added", "g-1"),
        ("added", "g-2"),
        ("added", "g-3"),
        ("revoked", ["g-1", "g-2"]),
        ("revoked", ["g-3"]),
    ]


def test_a_standing_grants_uses_are_written_together_at_the_flush(book):
    grants, store, heard = book

    async def scenario():
        await grants.add(_grant("g-1", FP_A))
        assert grants.record_use(grants.for_operation(FP_A)[0], 101.0, "r-1") is None
        assert grants.record_use(grants.for_operation(FP_A)[0], 102.0, "r-2") is None
        assert [(g.uses, g.last_used_at) for g in store.grants()] == [(0, None)]
        await grants.flush_uses()
        await grants.flush_uses()  # nothing new: no write, no event

    asyncio.run(scenario())
    assert [(g.uses, g.last_used_at) for g in store.grants()] == [(2, 102.0)]
    assert [e["change"] for e in heard] == ["added", "used"]


def test_a_once_grant_is_used_by_one_request_only(book):
    grants, store, _ = book

    async def scenario():
        await grants.add(_grant("g-1", FP_A, GrantScope.ONCE))
        (once,) = grants.for_operation(FP_A)
        grants.consume_once(once, 101.0)
        assert grants.for_operation(FP_A)[0].uses == 1
        used = grants.record_use(once, 101.0, "r-1")
        assert used is not None
        assert await asyncio.wrap_future(used) is True

    asyncio.run(scenario())
    assert store.grants() == []  # used up
