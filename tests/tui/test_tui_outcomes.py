"""Outcomes in the console: what an executed operation did, as the history entry shows it.

Operations are run by the real `agent-console exec` in the daemon's real bubblewrap
sandbox; the console reads the outcome back from the history. The sandbox probe's
summary is in the header.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
from support.daemon import running_daemon, workspace
from support.items import status_wire
from support.snapshot_data import ReplayClient
from support.tui import Clock, Notices, foreign_controls, frame, make_app, screen_text, until

from console.tui.app import ConsoleApp
from console.tui.screens.entry import EntryScreen
from console.tui.settings.config import Config, Notifications
from console.tui.settings.prepared import prepare
from console.tui.widgets.entry_view import EntryView

SIZE = (140, 42)


@pytest.fixture(scope="module")
def env():
    ws = workspace()
    policy = f"approval_timeout_s = 60\nwatch = {json.dumps([str(ws)])}\n"
    with running_daemon(policy) as d:
        yield d, ws


@pytest.fixture
def clock():
    return Clock()


def exec_json(daemon, ws, script: str) -> dict:
    command = [sys.executable, "-m", "console", "exec", "--json", "--state-dir", str(daemon.state_dir)]
    r = subprocess.run(
        [*command, "--", "sh", "-c", script],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return json.loads(r.stdout)


async def open_entry(pilot, app, rid: str) -> str:
    await until(pilot, lambda: app.watch_monitor.loaded)
    await pilot.press("2")
    await until(pilot, lambda: app.current_mode == "history")
    await pilot.press("slash")
    await pilot.press(*f"id:{rid}")
    await pilot.press("enter")
    # The query waits for the search index, which takes the run's rows after their commit:
    # on a loaded machine (two suites at once) that has taken more than 15 s.
    await until(pilot, lambda: len(app.screen.view.rows) == 1, timeout=45)
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, EntryScreen) and app.screen.detail is not None)
    await pilot.pause(0.1)
    return app.screen.query_one(EntryView).plain


@pytest.mark.needs_bwrap
async def test_an_outcome_with_a_sandbox_denial_and_changes_shows_in_the_history_entry(env, clock):
    d, ws = env
    t = uuid.uuid4().hex[:8]
    reply = exec_json(d, ws, f"echo started; echo made > built-{t}.txt; echo x > /etc/agent-console-{t}")
    rid = reply["decision"]["request_id"]
    assert reply["result"]["denials"], "the sandbox should have refused the write to /etc"
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        plain = await open_entry(pilot, app, rid)
        outcome = plain[plain.index("Outcome") :]
        assert "EXITED  failed / application_failure" in outcome
        assert f"exit {reply['result']['exit_code']}" in outcome
        assert "enforcement bubblewrap, sandboxed" in " ".join(outcome.split())
        assert "Sandbox denials (1)" in outcome
        assert "✖ workspace_write" in outcome
        assert "platform_sandbox, recoverable; next: request_approval" in outcome
        assert "Read-only file system" in outcome  # stderr, escaped and kept
        assert "started" in outcome  # stdout
        assert f"added    built-{t}.txt" in outcome
        await pilot.press("o")  # jumps to the outcome
        view = app.screen.query_one(EntryView)
        top, anchor = view.scroll_offset.y, view.anchor_line("outcome")
        assert anchor is not None and top > 0 and top <= anchor < top + view.size.height
        # the outcome row in the list says what happened
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, EntryScreen))
        app.screen.search_box.value = f"kind:outcome id:{rid}"
        app.screen.run_query()
        await until(
            pilot, lambda: app.screen.view.rows and app.screen.view.rows[0].kind == "outcome", timeout=45
        )
        await until(pilot, lambda: "1 sandbox denial" in screen_text(app))


@pytest.mark.needs_bwrap
async def test_hostile_output_and_file_names_in_an_outcome_are_inert(env, clock):
    d, ws = env
    t = uuid.uuid4().hex[:8]
    script = (
        "printf 'ok\\033]52;c;aGk=\\007\\033[2J\\r\u202e[@click=app.quit]x\\n'; "
        f"touch \"$(printf 'odd\\033[31m-{t}.txt')\""
    )
    reply = exec_json(d, ws, script)
    rid = reply["decision"]["request_id"]
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        plain = await open_entry(pilot, app, rid)
        assert "ok\\e]52;c;aGk=\\a\\e[2J\\r\\u202e" in plain
        assert "[@click=app.quit]x" in plain
        assert f"added    odd\\e[31m-{t}.txt" in plain
        assert foreign_controls(frame(app)) == ""
        assert app.is_running


@pytest.mark.needs_bwrap
async def test_the_sandbox_probe_is_in_the_header(env, clock):
    d, _ = env
    app = make_app(d, clock)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.pills.get("sandbox"))
        label, variant = app.pills.items["sandbox"]
        assert label.startswith("sandbox: bubblewrap ") and "network isolated" in label
        assert variant == "muted"
        assert label in screen_text(app).splitlines()[0]


class NoSandboxClient(ReplayClient):
    """A daemon whose probe found no working sandbox (a fault a test cannot cause on a
    machine where bubblewrap works: the probe looks for it on a fixed trusted PATH)."""

    def status(self) -> dict:
        reason = "bwrap not found on the trusted PATH"
        probe = {**status_wire()["sandbox"]["probe"], "available": False, "reason": reason}
        return status_wire(sandbox={"summary": f"UNAVAILABLE: {reason}", "probe": probe})


async def test_an_unavailable_sandbox_is_loud():
    settings = prepare(Config(notifications=Notifications(toast=True, bell=False, desktop="off")))

    async def connect() -> NoSandboxClient:
        return NoSandboxClient()

    app = ConsoleApp(settings, connect=connect)  # type: ignore[arg-type]
    seen = Notices()
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        await until(pilot, lambda: app.pills.get("sandbox"))
        assert app.pills.items["sandbox"] == (
            "SANDBOX UNAVAILABLE: bwrap not found on the trusted PATH",
            "error",
        )
        assert "SANDBOX UNAVAILABLE" in screen_text(app).splitlines()[0]
        notes = await until(pilot, lambda: [n for n in seen.raised if n.title == "sandbox"])
        assert notes[0].severity == "error" and "will not run" in notes[0].message
