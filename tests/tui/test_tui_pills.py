"""The header's state is reactive: what the status pills show is one table held
by a reactive on the app, every view's bar watches it, and a daemon event the console
cannot read is told to the operator instead of only logged.

- a pill set while a view is not mounted (or is in the background) shows when it is shown;
- setting what is already shown does not repaint the header; a change of a pill's short
  form alone (what a narrow header shows) does;
- events the client refuses (a daemon of another version) show as a warning pill with
  their count and one notification per burst; a new connection starts a new count.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from rich.text import Text
from support.daemon import short_tmp
from support.events import DECIDED
from support.items import status_wire
from support.tui import Clock, Notices, make_app, screen_text, until

from console.client import AsyncClient
from console.protocol import jsonrpc
from console.tui.app import ConsoleApp
from console.tui.screens.history import HistoryScreen
from console.tui.settings.config import Config, Notifications
from console.tui.settings.prepared import prepare
from console.tui.widgets.status_pills import StatusPills

SIZE = (130, 30)


def header(app: ConsoleApp) -> str:
    return screen_text(app).splitlines()[0]


async def settled(pilot: Any, app: ConsoleApp) -> None:
    """Connected and the watcher's first load done: nothing else is about to change the pills."""
    await until(pilot, lambda: app.connection == "connected" and app.watch_monitor.loaded)
    await pilot.pause()


def count_renders(bar: StatusPills) -> list[int]:
    """Each time ``bar`` is painted, through its public ``render``."""
    renders: list[int] = []
    render = bar.render

    def counted() -> Text:
        renders.append(1)
        return render()

    bar.render = counted  # type: ignore[method-assign]
    return renders


async def test_before_the_daemon_answers_the_header_says_so():
    """The first header comes from the reactives' initial values (pending, then connection)."""
    settings = prepare(Config(notifications=Notifications(toast=False, bell=False, desktop="off")))

    async def never() -> AsyncClient:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    app = ConsoleApp(settings, connect=never)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.connection == "connecting"
        assert dict(app.pills.items) == {"pending": ("queue empty", "ok"), "daemon": ("connecting…", "muted")}
        assert "queue empty" in header(app) and "connecting…" in header(app)


async def test_a_pill_set_while_a_view_is_not_mounted_shows_when_it_is_shown(daemon):
    app = make_app(daemon, Clock())
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, app)
        assert not app.views["history"].is_mounted
        app.pills.set("probe", "probe one", "warning")
        app.action_show("history")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.is_mounted)
        await pilot.pause()
        assert "probe one" in header(app)

        app.action_show("queue")  # the history view stays mounted, in the background
        await until(pilot, lambda: app.current_mode == "queue")
        app.pills.set("probe", "probe two", "error")
        await pilot.pause()
        assert "probe two" in header(app)
        app.action_show("history")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.pause()
        shown = header(app)
        assert "probe two" in shown and "probe one" not in shown

        app.pills.set("probe", "")
        await pilot.pause()
        assert "probe" not in header(app)


async def test_setting_the_same_pill_again_does_not_repaint_the_header(daemon):
    app = make_app(daemon, Clock())
    async with app.run_test(size=SIZE) as pilot:
        await settled(pilot, app)
        changes: list[int] = []
        app.watch(app, "pill_table", lambda: changes.append(1), init=False)
        renders = count_renders(app.screen.query_one(StatusPills))

        app.pills.set("probe", "3 probes", "warning", short="3p")
        await until(pilot, lambda: renders)
        await pilot.pause()
        assert len(changes) == 1
        painted = len(renders)

        for _ in range(3):
            app.pills.set("probe", "3 probes", "warning", short="3p")
            app.pills.set("absent", "")  # hiding what is not shown is no change either
        await pilot.pause()
        await pilot.pause()
        assert len(changes) == 1
        assert len(renders) == painted
        assert app.pills.items["probe"] == ("3 probes", "warning")


async def test_a_change_of_a_pills_short_form_shows_in_a_narrow_header(daemon):
    app = make_app(daemon, Clock())
    async with app.run_test(size=(60, 24)) as pilot:
        await settled(pilot, app)
        long = "a probe whose label is far too long for a narrow header"
        app.pills.set("probe", long, "warning", short="short-one")
        await pilot.pause()
        assert "short-one" in header(app)
        app.pills.set("probe", long, "warning", short="short-two")  # label and look unchanged
        await pilot.pause()
        assert "short-two" in header(app) and "short-one" not in header(app)


# ---------------------------------------------------------------- refused events


BAD_EVENTS = [
    {"topic": "watch", "change": "events", "events": [], "dropped": "many"},
    {"topic": "nonsense"},
    {"topic": "decided", "request_id": "r-1-2", "verdict": "deny", "source": "timeout", "new": 1},
]
GOOD_EVENT = DECIDED
ANSWERS: dict[str, Any] = {
    "hello": {"protocol": 1, "role": "operator", "daemon_pid": 1, "version": "9.9.9", "peer_pid": 2},
    "subscribe": {"topics": [], "status": status_wire()},
    "pending.list": {"pending": [], "count": 0, "next": None},
    "watch.recent": {"events": []},
    "tripwire.list": {"items": []},
}


class FakeDaemon:
    """A peer that answers the console's start-up calls and, on its first connection only,
    sends events of a protocol the console does not know, then one it does."""

    def __init__(self, answers: dict[str, Any] | None = None, events: list[Any] | None = None) -> None:
        self.path = short_tmp() / "fake.sock"
        self.connections = 0
        self.hang_up = asyncio.Event()
        self.answers = ANSWERS if answers is None else answers
        self.events = [*BAD_EVENTS, GOOD_EVENT] if events is None else events

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        first = self.connections == 1
        closing = asyncio.create_task(self._close_on_hang_up(writer)) if first else None
        try:
            while True:
                line = await reader.readuntil(b"\n")
                messages, _ = jsonrpc.decode_message(line)
                for msg in messages:
                    assert isinstance(msg, jsonrpc.Request)
                    if msg.method in self.answers:
                        writer.write(jsonrpc.encode(jsonrpc.response(msg.id, self.answers[msg.method])))
                    else:
                        error = jsonrpc.RPCError(-32601, f"no method {msg.method}")
                        writer.write(jsonrpc.encode(jsonrpc.error_response(msg.id, error)))
                    if first and msg.method == "pending.list":
                        # One write: the console reads the whole burst at once.
                        writer.write(
                            b"".join(
                                jsonrpc.encode(jsonrpc.notification("event", params))
                                for params in self.events
                            )
                        )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return  # the console hung up: nothing more to answer
        finally:
            if closing is not None:
                closing.cancel()
            writer.close()

    async def _close_on_hang_up(self, writer: asyncio.StreamWriter) -> None:
        await self.hang_up.wait()
        writer.close()

    async def connect(self) -> AsyncClient:
        reader, writer = await asyncio.open_unix_connection(str(self.path))
        client = AsyncClient(reader, writer, "operator")
        client.hello = await client.call("hello", {"client": "test"})
        return client


@asynccontextmanager
async def console_on(fake: FakeDaemon) -> AsyncIterator[tuple[ConsoleApp, Any, Notices]]:
    """The console, with toasts, on ``fake``: the app, its pilot, and the notices raised."""
    server = await asyncio.start_unix_server(fake.serve, path=str(fake.path))
    settings = prepare(Config(notifications=Notifications(toast=True, bell=False, desktop="off")))
    app = ConsoleApp(settings, connect=fake.connect)
    seen = Notices()
    try:
        async with app.run_test(size=SIZE, message_hook=seen) as pilot:
            yield app, pilot, seen
    finally:
        server.close()
        await server.wait_closed()


async def test_refused_daemon_events_show_as_a_pill_and_one_notification():
    fake = FakeDaemon()
    async with console_on(fake) as (app, pilot, seen):
        said = "3 daemon events refused (daemon of another version?)"
        await until(pilot, lambda: app.pills.get("refused") == said)
        assert app.pills.items["refused"][1] == "warning"
        await pilot.pause()
        assert said in header(app)
        notes = [n for n in seen.raised if n.title == "daemon events refused"]
        assert len(notes) == 1
        assert notes[0].severity == "warning" and "another version" in notes[0].message

        fake.hang_up.set()  # the console reconnects; the new connection refuses nothing
        await until(pilot, lambda: app.pills.get("refused") == "")  # cleared by Connected only
        assert fake.connections == 2 and app.connection == "connected"
        assert len([n for n in seen.raised if n.title == "daemon events refused"]) == 1


async def test_a_daemon_whose_answers_the_console_cannot_read_is_said_once_with_what_to_do():
    """After an upgrade the running daemon may be the older one: every reconnect meets the
    same answer it cannot read. The operator is told once, with both versions and the
    remedy, not once a second."""
    fake = FakeDaemon({**ANSWERS, "pending.list": {"pending": []}})  # no count, no next
    async with console_on(fake) as (app, pilot, seen):
        await until(pilot, lambda: fake.connections >= 3, timeout=15)
        lost = [n.message for n in seen.raised if n.message.startswith("lost the daemon")]
        assert len(lost) == 1, lost
        assert "version 9.9.9" in lost[0] and "restart the daemon" in lost[0]
        assert app.connection == "lost"


def _escalated_item(**evaluation: Any) -> dict[str, Any]:
    """A request that asks for the network, as a daemon lists it; ``evaluation`` replaces
    parts of its evaluation."""
    from support.items import pending_item

    item = pending_item(
        {
            "request_id": "r-1-1",
            "command": "/usr/bin/curl https://example.com",
            "operation": {"executable": "/usr/bin/curl", "workspace_root": "/w", "network": "any"},
            "evaluation": {"escalations": [{"kind": "external_network", "reason": "network"}]},
        }
    )
    wire = msgspec.to_builtins(item)
    wire["evaluation"] = {**wire["evaluation"], **evaluation}
    return wire


async def test_a_pending_request_the_console_cannot_read_is_refused_not_shown_as_sandboxed():
    """A daemon of another version that words the evaluation otherwise (here, without
    ``escalations``): the console used to show that request as "within the sandbox", with
    no badge, below the escalated ones. Now the pending item is typed and checked at the
    socket: the event is refused and counted, and the request that does validate shows
    with its NET badge."""
    odd = _escalated_item()
    del odd["evaluation"]["escalations"]
    odd["request_id"] = "r-1-2"
    events = [{"topic": "pending", "request": odd}, {"topic": "pending", "request": _escalated_item()}]
    fake = FakeDaemon(events=events)
    async with console_on(fake) as (app, pilot, _):
        await until(
            pilot, lambda: app.pills.get("refused") == "1 daemon event refused (daemon of another version?)"
        )
        await until(pilot, lambda: app.pending.total == 1)
        [entry] = list(app.pending)
        assert entry.request_id == "r-1-1" and [b.label for b in entry.badges] == ["NET"]
        assert app.pending.get("r-1-2") is None
