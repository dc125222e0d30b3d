"""The daemon's events, typed (console/protocol/events.py), against their documentation
and against a real daemon.

- docs/protocol.md's event table names every kind and every field; each row must be
  exactly its Struct (topic, change, fields, which fields may be absent);
- the events a real daemon sends, for every kind a test can make it send, decode to
  their kind and encode back to the same JSON content;
- a client refuses an event frame that is no event, says why, and still delivers the
  events after it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import pytest
from support.daemon import (
    in_background,
    operation,
    running_daemon,
    submit_in_thread,
    wait_for,
    workspace,
)
from support.events import DECIDED
from support.fake_daemon import client_of
from support.paths import REPO

from console.client import AsyncClient, Client
from console.protocol import events as ev
from console.protocol import jsonrpc

DOC = REPO / "docs" / "protocol.md"
HEADER = "| topic | change | kind | fields | what |"
E = TypeVar("E", bound=ev.Event)


# ------------------------------------------------------------------ the document


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def documented() -> list[tuple[str, list[str], str, list[str]]]:
    """(topic, changes, kind, fields) for each row of the event table."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    assert HEADER in lines, f"docs/protocol.md has no event table starting {HEADER!r}"
    rows = []
    for line in lines[lines.index(HEADER) + 2 :]:
        if not line.startswith("|"):
            break
        topic, change, kind, fields, _what = (c.strip() for c in line.strip().strip("|").split("|"))
        (topic_name,) = _names(topic)
        (kind_name,) = _names(kind)
        rows.append((topic_name, _names(change), kind_name, _names(fields)))
    return rows


def _changes(kind: type[ev.Event]) -> list[str]:
    """What ``change`` may be for ``kind``: its tag, the values of its field, or nothing."""
    config = kind.__struct_config__
    if config.tag_field == "change":
        return [str(config.tag)]
    hint = typing.get_type_hints(kind).get("change")
    return list(typing.get_args(hint)) if hint is not None else []


def test_the_event_table_lists_every_kind_once():
    kinds = [kind for _, _, kind, _ in documented()]
    assert sorted(kinds) == sorted(k.__name__ for k in ev.KINDS)


@pytest.mark.parametrize("row", documented(), ids=lambda row: row[2])
def test_each_documented_event_is_its_struct(row):
    topic, changes, name, fields = row
    kind = getattr(ev, name)
    assert ev.TOPIC[kind].value == topic
    assert changes == _changes(kind)
    struct_fields = {f.encode_name: f for f in msgspec.structs.fields(kind)}
    on_wire = [f for f in ev.wire_fields(kind) if f not in ("topic", "change")]
    assert [f.rstrip("?") for f in fields] == on_wire, f"docs/protocol.md's fields of {name}"
    optional = {f.rstrip("?") for f in fields if f.endswith("?")}
    assert optional == {n for n, f in struct_fields.items() if f.default is msgspec.UNSET}


def test_subscribe_documents_every_topic():
    text = DOC.read_text(encoding="utf-8")
    listed = re.search(r'`\{"topics": \[([^\]]*)\]\}`', text)
    assert listed is not None
    assert [t.strip().strip('"') for t in listed.group(1).split(",")] == [t.value for t in ev.Topic]


def test_the_console_has_one_message_per_kind():
    from console.tui.link import DaemonLink

    for kind in ev.KINDS:
        message = getattr(DaemonLink, kind.__name__)
        assert message.KIND is kind and not message.bubble


# ------------------------------------------------------------------ a real daemon


class Recorder:
    """Every event an operator connection receives: as sent (decoded JSON) and typed."""

    def __init__(self, op: Client) -> None:
        self.op = op
        self.raw: list[dict[str, Any]] = []
        self.typed: list[ev.Event] = []

    def mark(self) -> int:
        return len(self.typed)

    def until(self, kind: type[E], where: Callable[[E], bool] = lambda _e: True, since: int = 0) -> E:
        """The first event of ``kind`` from ``since`` on that ``where`` holds for, reading on."""
        i = since
        while True:
            while i < len(self.typed):
                event = self.typed[i]
                i += 1
                if isinstance(event, kind) and where(event):
                    return event
            raw = self.op.next_event()
            self.raw.append(raw)
            self.typed.append(ev.decode_event(raw))

    def assert_round_trips(self) -> None:
        for raw, typed in zip(self.raw, self.typed, strict=True):
            assert msgspec.json.decode(msgspec.json.encode(typed)) == raw


def new_session(op: Client, cwd: Path, command: str) -> str:
    info = op.call("sessions.new", {"unconfined": True, "argv": ["sh", "-c", command], "cwd": str(cwd)})[
        "session"
    ]
    return str(info["id"])


def test_a_grant_is_one_shape_in_the_answer_the_event_and_the_list():
    """decide's answer and the ``added`` event gave a grant without what it was granted
    for (``tool``, ``summary``), which only ``grants.list`` had."""
    ws = workspace()
    with running_daemon("approval_timeout_s = 60\n") as d, d.operator() as op:
        op.subscribe(["pending", "grants"])
        seen = Recorder(op)
        answer = submit_in_thread(d, operation(ws, args=["shape"], network="any", tool="claude-code:Bash"))
        rid = seen.until(ev.PendingAdded).request.request_id
        decided = op.call("decide", {"target": rid, "action": "approve", "scope": "always"})
        event = seen.until(ev.GrantAdded).grant
        assert answer()["verdict"] == "allow"
        (listed,) = op.call("grants.list")["grants"]
        assert decided["grant"] == msgspec.to_builtins(event) == listed
        assert (event.tool, event.summary.endswith(" shape")) == ("claude-code:Bash", True)


def test_a_real_daemons_events_decode_to_their_kinds():
    ws, other = workspace(), workspace()
    with running_daemon("approval_timeout_s = 60\n") as d, d.operator() as op:
        op.subscribe()
        seen = Recorder(op)
        net = operation(ws, args=["typed"], network="any")

        answer = submit_in_thread(d, net)
        pending = seen.until(ev.PendingAdded)
        rid = pending.request.request_id
        op.call("decide", {"target": rid, "action": "approve", "scope": "always"})
        grant = seen.until(ev.GrantAdded).grant
        assert seen.until(ev.Decided, lambda e: e.request_id == rid).queued is True
        assert answer()["verdict"] == "allow"

        with d.agent() as agent:  # the same operation again: the grant answers it
            again = agent.submit(net)["request_id"]
        assert seen.until(ev.Decided, lambda e: e.request_id == again).queued is False
        assert grant.id in seen.until(ev.GrantsUsed).grant_ids
        op.call("grants.revoke", {"target": grant.id})
        assert seen.until(ev.GrantsRevoked).grant_ids == [grant.id]

        mark = seen.mark()
        op.call("watch.add", {"workspace_root": str(other)})
        seen.until(ev.WatchStatusChanged, since=mark)
        mark = seen.mark()
        d.loc.policy.write_text(d.loc.policy.read_text().replace("= 60", "= 59"))  # a real change
        assert seen.until(ev.StatusChanged, since=mark).status.policy.config is not msgspec.UNSET

        sid = new_session(op, other, "echo typed > src/typed.txt; sleep 30")
        seen.until(ev.SessionChanged, lambda e: e.change == "created" and e.session.id == sid)
        seen.until(ev.WatchBatch, lambda e: any(x.path == "src/typed.txt" for x in e.events))
        op.call("sessions.kill", {"session": sid, "grace_s": 1})
        seen.until(ev.SessionChanged, lambda e: e.change == "exited" and e.session.id == sid)

        with d.agent() as agent:
            agent.call("agent.attention", {"state": "waiting", "session_id": "typed", "message": "look"})
        changed = seen.until(ev.AttentionChanged)
        assert changed.entry.state == "waiting" and changed.waiting == 1
    seen.assert_round_trips()


@pytest.mark.needs_bwrap
def test_a_real_daemons_watch_and_outcome_events_decode_to_their_kinds():
    ws = workspace()
    (ws / ".env").write_text("TOKEN=old\n")
    policy = f'tripwire = "pause"\nwatch = ["{ws}"]\n'
    with running_daemon(policy) as d, d.operator() as op:
        wait_for(lambda: op.call("watch.status")["ok"])
        op.subscribe()
        seen = Recorder(op)

        with d.agent() as agent:
            done = agent.call("operation.exec", {"operation": operation(ws), "stream": False})
        finished = seen.until(ev.OutcomeFinished)
        assert finished.request_id == done["decision"]["request_id"] and finished.exit_code == 0

        sid = new_session(op, ws, "sleep 0.5; echo x >> .env; sleep 60")
        item = seen.until(ev.TripwireRaised, lambda e: e.item.session == sid).item
        assert item.state == "paused"
        op.call("tripwire.resolve", {"id": item.id, "action": "kill"})
        assert seen.until(ev.TripwireResolved).item.id == item.id

        mark = seen.mark()
        d.loc.policy.write_text(d.loc.policy.read_text().replace('"pause"', '"alert"'))
        seen.until(ev.StatusChanged, since=mark)
        sid = new_session(op, ws, "sleep 0.5; echo k > id_rsa; sleep 30")
        alert = seen.until(ev.WatchAlert, lambda e: e.session == sid)
        assert alert.display_path == "id_rsa" and alert.operation is msgspec.UNSET
        op.call("sessions.kill", {"session": sid, "grace_s": 1})
    seen.assert_round_trips()


async def test_the_async_client_yields_typed_events(daemon):
    op = await AsyncClient.connect(daemon.loc, role="operator")
    try:
        await op.subscribe(["attention"])

        def report() -> None:
            with daemon.agent() as agent:
                agent.call("agent.attention", {"state": "waiting", "session_id": "async"})

        reported = in_background(report, "the attention report")
        event = await anext(aiter(op.events()))
        reported()
        assert isinstance(event, ev.AttentionChanged)
        assert event.entry.session_id == "async" and event.previous is None
        assert op.refused_events == 0
    finally:
        await op.close()


# ------------------------------------------------------------------ a malformed event


async def test_a_malformed_event_is_refused_with_a_reason_and_the_next_one_arrives(caplog):
    good = DECIDED
    sent = [
        {"topic": "watch", "change": "events", "events": [], "dropped": "many"},
        {"topic": "nonsense"},
        {"topic": "decided", "request_id": "r-1-2"},
        {**good, "extra": 1},
        good,
    ]

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for params in sent:
            writer.write(jsonrpc.encode(jsonrpc.notification("event", params)))
        await writer.drain()
        await reader.read()  # until the client hangs up
        writer.close()

    async with client_of(serve) as client:
        with caplog.at_level(logging.WARNING, logger="agent-console.client"):
            event = await anext(aiter(client.events()))
        assert event == ev.Decided(
            request_id="r-1-2", verdict="deny", source="timeout", reason="approval_timeout", queued=True
        )
        assert client.refused_events == 4
        said = [r.getMessage() for r in caplog.records if r.name == "agent-console.client"]
        assert said == [
            "refused an event from the daemon: malformed watch/events event: "
            "Expected `int`, got `str` - at `$.dropped`",
            "refused an event from the daemon: event with unknown topic 'nonsense' (known: "
            + ", ".join(t.value for t in ev.Topic)
            + ")",
            "refused an event from the daemon: malformed decided event: "
            "Object missing required field `verdict`",
            "refused an event from the daemon: malformed decided event: Object contains unknown field `extra`",
        ]


# ------------------------------------------------------------------ in the console


async def test_screens_hear_the_events_they_listen_for(daemon):
    """The history follows a decision and the grants view a grant that were made
    elsewhere: only the forwarded event messages can tell those screens."""
    from support.tui import Clock, make_app, until

    from console.tui.screens.grants import GrantsScreen
    from console.tui.screens.history import HistoryScreen
    from console.tui.widgets.grants_view import GrantsView

    ws = workspace()
    app = make_app(daemon, Clock())
    async with app.run_test(size=(130, 42)) as pilot:
        await until(pilot, lambda: app.pills.get("daemon") == "")
        app.action_show("history")
        history = await until(pilot, lambda: app.screen if isinstance(app.screen, HistoryScreen) else None)
        await until(pilot, lambda: history.is_mounted)

        def submit() -> dict[str, Any]:
            with daemon.agent() as agent:
                return agent.submit(operation(ws, args=["heard"]))

        answer = await asyncio.to_thread(submit)
        assert answer["source"] == "policy"
        await until(pilot, lambda: answer["request_id"] in [r.request_id for r in history.view.rows])

        app.action_show("grants")
        grants = await until(pilot, lambda: app.screen if isinstance(app.screen, GrantsScreen) else None)
        fingerprint = "ab" * 32

        def add() -> dict[str, Any]:
            with daemon.operator() as op:
                params = {"fingerprint": fingerprint, "scope": "always", "effect": "allow"}
                return op.call("grants.add", params)

        await asyncio.to_thread(add)
        view = grants.query_one(GrantsView)
        await until(pilot, lambda: any(g.fingerprint == fingerprint for g in view.rows))


def test_the_blocking_client_refuses_malformed_events_too(caplog):
    """`agent-console watch` reads events with the blocking client: a malformed one is
    skipped and counted there as well, never indexed into unchecked."""
    import socket

    ours, theirs = socket.socketpair()
    bad = [{"topic": "watch", "change": "events", "events": [], "dropped": "many"}, {"topic": "nonsense"}]
    theirs.sendall(b"".join(jsonrpc.encode(jsonrpc.notification("event", p)) for p in [*bad, DECIDED]))
    client = Client(ours, "operator")
    try:
        with caplog.at_level(logging.WARNING, logger="agent-console.client"):
            assert client.next_event() == DECIDED
        assert client.refused_events == 2
        assert sum(r.getMessage().startswith("refused an event") for r in caplog.records) == 2
    finally:
        ours.close()
        theirs.close()
