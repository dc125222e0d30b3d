"""SVG snapshots of the console's screens at a fixed size with fixed data and a frozen clock.

Regenerate after an intended change with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``
and look at the SVGs in tests/tui/__snapshots__/ before committing them.
"""

from __future__ import annotations

import os
import time

import pytest
from support.items import pending_item
from support.snapshot_data import NOW, ReplayClient

from console.tui.app import ConsoleApp
from console.tui.settings.config import Config, Notifications
from console.tui.settings.prepared import prepare

SIZE = (120, 40)


@pytest.fixture(autouse=True)
def utc():
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def make(theme: str = "dark", keymap: str = "default") -> ConsoleApp:
    settings = prepare(
        Config(notifications=Notifications(toast=False, bell=False, desktop="off")),
        theme=theme,
        keymap=keymap,
    )

    async def connect() -> ReplayClient:
        return ReplayClient()

    return ConsoleApp(settings, connect=connect, clock=lambda: NOW, monotonic=lambda: 0.0)  # type: ignore[arg-type]


async def loaded(pilot) -> None:
    app = pilot.app
    for _ in range(200):
        if app.pending.total and app.views["queue"].detail.previous is not None:
            break
        await pilot.pause(0.01)
    await pilot.pause()


def test_queue(snap_compare):
    assert snap_compare(make(), terminal_size=SIZE, run_before=loaded)


def test_detail_of_a_shell_chain_with_escalations(snap_compare):
    async def run(pilot) -> None:
        await loaded(pilot)
        pilot.app.views["queue"].select_request("r-0000000004")
        await pilot.pause(0.1)

    assert snap_compare(make(), terminal_size=SIZE, run_before=run)


def test_detail_of_hostile_text(snap_compare):
    async def run(pilot) -> None:
        await loaded(pilot)
        pilot.app.views["queue"].select_request("r-0000000006")
        await pilot.pause(0.1)

    assert snap_compare(make(), terminal_size=SIZE, run_before=run)


def test_detail_with_previous_decisions_diff(snap_compare):
    async def run(pilot) -> None:
        await loaded(pilot)
        pilot.app.views["queue"].select_request("r-0000000009")
        for _ in range(100):
            if pilot.app.views["queue"].detail.previous:
                break
            await pilot.pause(0.01)
        pilot.app.views["queue"].detail.scroll_to(y=14, animate=False)
        await pilot.pause(0.1)

    assert snap_compare(make(), terminal_size=SIZE, run_before=run)


async def on_history(pilot) -> None:
    await loaded(pilot)
    await pilot.press("2")
    for _ in range(200):
        if pilot.app.screen.id == "history" and pilot.app.screen.view.rows:
            break
        await pilot.pause(0.01)
    await pilot.pause(0.1)


async def on_grants(pilot) -> None:
    await loaded(pilot)
    await pilot.press("3")
    for _ in range(200):
        if pilot.app.screen.id == "grants" and pilot.app.screen.query_one("GrantsView").rows:
            break
        await pilot.pause(0.01)
    await pilot.pause(0.1)


def test_history(snap_compare):
    assert snap_compare(make(), terminal_size=SIZE, run_before=on_history)


def test_grants(snap_compare):
    assert snap_compare(make(), terminal_size=SIZE, run_before=on_grants)


# At 80x24 the columns that qualify a row give way and the deciding one keeps its room:
# the verdict and the command in the history, the effect, scope and what in the grants.


def test_history_at_80x24(snap_compare):
    assert snap_compare(make(), terminal_size=(80, 24), run_before=on_history)


def test_grants_at_80x24(snap_compare):
    assert snap_compare(make(), terminal_size=(80, 24), run_before=on_grants)


def test_help_with_the_vim_keymap(snap_compare):
    async def run(pilot) -> None:
        await loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.1)

    assert snap_compare(make(keymap="vim"), terminal_size=SIZE, run_before=run)


def test_queue_in_the_light_theme(snap_compare):
    assert snap_compare(make(theme="light"), terminal_size=SIZE, run_before=loaded)


def test_queue_in_the_high_contrast_theme(snap_compare):
    assert snap_compare(make(theme="high-contrast"), terminal_size=SIZE, run_before=loaded)


# The risky details, a history entry, and the narrow and wide layouts.


def evaluated_item(request_id: str, **fields) -> dict:
    """A pending item as the daemon lists it, evaluated by the real policy (fixed host)."""
    from support.fakehost import FakeHost

    from console.contract.operation import parse
    from console.policy.config import policy_from_toml
    from console.policy.evaluate import evaluate

    wire = {"kind": "shell", "executable": "bash", "workspace_root": "/home/dev/project", **fields}
    op = parse(wire, FakeHost())
    decision = evaluate(op, policy_from_toml('workspaces = ["/home/dev/project"]\n'))
    return {
        "request_id": request_id,
        "fingerprint": op.fingerprint,
        "submitted_at": NOW - 30,
        "deadline": NOW + 600,
        "peer_pid": 4242,
        "agent_id": "a-1",
        "session_id": "agent-1",
        "command": "bash " + " ".join(fields.get("args", [])),
        "operation": op.to_wire(),
        "content": [],
        "unbound": list(op.unbound),
        "supersedes": "",
        "proposed": None,
        "evaluation": decision.to_dict(),
    }


def shows(item: dict):
    async def run(pilot) -> None:
        await loaded(pilot)
        pilot.app.add_pending(pending_item(item))
        pilot.app.views["queue"].select_request(item["request_id"])
        await pilot.pause(0.1)

    return run


def test_detail_of_an_unrestricted_request(snap_compare):
    item = evaluated_item(
        "r-00000000u1",
        args=["-c", "npm run dev"],
        capabilities=[{"kind": "unrestricted"}],
        justification="start the dev server",
    )
    assert snap_compare(make(), terminal_size=SIZE, run_before=shows(item))


def test_detail_of_a_protected_write(snap_compare):
    async def run(pilot) -> None:
        await loaded(pilot)
        pilot.app.views["queue"].select_request("r-0000000005")
        await pilot.pause(0.1)

    assert snap_compare(make(), terminal_size=SIZE, run_before=run)


def test_detail_of_an_uncertain_chain(snap_compare):
    item = evaluated_item(
        "r-00000000c1", args=["-c", 'cat <<E"O"F\nharmless\nEOF\ntouch MARK\nE"O"F\n'], network="any"
    )
    assert snap_compare(make(), terminal_size=SIZE, run_before=shows(item))


def test_history_entry(snap_compare):
    async def run(pilot) -> None:
        await loaded(pilot)
        await pilot.press("2")
        for _ in range(200):
            if pilot.app.screen.id == "history" and pilot.app.screen.view.rows:
                break
            await pilot.pause(0.01)
        await pilot.press("enter")
        for _ in range(200):
            if pilot.app.screen.CONTEXT == "entry" and pilot.app.screen.detail is not None:
                break
            await pilot.pause(0.01)
        await pilot.pause(0.1)

    assert snap_compare(make(), terminal_size=SIZE, run_before=run)


def test_queue_at_80_by_24(snap_compare):
    assert snap_compare(make(), terminal_size=(80, 24), run_before=loaded)


def test_queue_at_200_by_60(snap_compare):
    assert snap_compare(make(), terminal_size=(200, 60), run_before=loaded)
