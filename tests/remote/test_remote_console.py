"""One console, several hosts over SSH (docs/remote.md): real sshd instances on 127.0.0.x,
each with its own daemon and state; the real console driven by Pilot."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from support.daemon import workspace
from support.sshd import SSHLab, have_sshd, ssh_lab
from support.tui import Agent, Clock, screen_text, tagged, until
from support.tui_sessions import BASH, new_session, open_pane, show_sessions, type_line, wait_shown

from console.remote.contexts import Target
from console.remote.hostset import HostSet
from console.remote.url import parse_host_url
from console.tui.app import ConsoleApp
from console.tui.model.pending import queue_key
from console.tui.screens.grants import GrantsScreen
from console.tui.settings.config import Config, Notifications
from console.tui.settings.prepared import prepare
from console.tui.widgets.grants_view import GrantsView
from console.tui.widgets.status_line import StatusLine

pytestmark = pytest.mark.sshd

POLICY = "approval_timeout_s = 120\n"
SIZE = (140, 42)


@pytest.fixture(scope="module")
def lab() -> Iterator[SSHLab]:
    if not have_sshd():
        pytest.skip("needs /usr/sbin/sshd and ssh-keygen (Debian openssh-server; ./dev installs it)")
    with ssh_lab("a", "b", "c", policy=POLICY, no_streamlocal=("c",)) as lab:
        yield lab


def console(lab: SSHLab, *names: str, clock: Clock, **kw: Any) -> ConsoleApp:
    targets = [Target(h.name, parse_host_url(h.url())) for h in lab.hosts if h.name in names]
    settings = prepare(
        Config(notifications=Notifications(toast=True, bell=False, desktop="off"), restore_layout=False)
    )
    return ConsoleApp(settings, hosts=HostSet(targets, None), monotonic=clock, **kw)


async def find(pilot: Any, app: ConsoleApp, tag: str) -> tuple[str, str]:
    """(host, request id) of the request carrying ``tag``, once it is in the merged queue."""

    def look() -> tuple[str, str] | None:
        for entry in app.pending:
            if tag in entry.item.command:
                return entry.host, entry.request_id
        return None

    found: tuple[str, str] = await until(pilot, look, timeout=30)
    return found


async def show(pilot: Any, app: ConsoleApp, host: str, rid: str, clock: Clock) -> None:
    queue = app.views["queue"]
    assert queue.select_request(queue_key(host, rid))  # type: ignore[attr-defined]
    await until(pilot, lambda: queue.detail.key == queue_key(host, rid))  # type: ignore[attr-defined]
    await pilot.pause()
    clock.advance(5)


async def test_one_console_approves_on_host_b(lab: SSHLab) -> None:
    a, b, _ = lab.hosts
    ws = workspace()
    clock = Clock()
    app = console(lab, "a", "b", "c", clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        op_a, tag_a = tagged(ws)
        op_b, tag_b = tagged(ws)
        on_a, on_b = Agent(a.daemon, op_a), Agent(b.daemon, op_b)
        host_a, rid_a = await find(pilot, app, tag_a)
        host, rid = await find(pilot, app, tag_b)
        assert (host_a, host) == ("a", "b")
        text = screen_text(app)
        assert " b " in text and " a " in text  # the host column
        await show(pilot, app, "b", rid, clock)
        assert "on host b" in screen_text(app)
        await pilot.press("a")
        answer = await on_b.answer()
        assert (answer["verdict"], answer["source"], answer["request_id"]) == ("allow", "operator", rid)
        await until(pilot, lambda: app.pending.get(queue_key("b", rid)) is None)
        # A's request is A's: still waiting there, still in the console.
        assert on_a.waiting and app.pending.get(queue_key("a", rid_a)) is not None
        with b.daemon.operator() as op:
            assert op.call("history.query", {"request_id": rid})["rows"][0]["verdict"] == "allow"
        with a.daemon.operator() as op:
            assert op.call("history.query", {"request_id": rid})["rows"] == []
            op.call("decide", {"target": rid_a, "action": "deny"})
        await on_a.answer()
        # c serves through dial-stdio (no streamlocal); its link may still be on its way.
        await until(pilot, lambda: app.links["c"].client is not None, timeout=60)


async def test_an_unreachable_host_shows_and_its_requests_fail_closed_there(lab: SSHLab) -> None:
    b = lab.hosts[1]
    ws = workspace()
    clock = Clock()
    app = console(lab, "a", "b", clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        op, tag = tagged(ws)
        agent = Agent(b.daemon, op, timeout_s=15)
        host, rid = await find(pilot, app, tag)
        assert host == "b"
        b.stop_sshd()
        try:
            await until(pilot, lambda: "b unreachable" in screen_text(app), timeout=30)
            await show(pilot, app, "b", rid, clock)
            await pilot.press("a")
            status = app.screen.query_one("#status", StatusLine)
            await until(pilot, lambda: "not sent" in status.message)
            answer = await agent.answer(timeout=40)
            assert (answer["verdict"], answer["reason"]) == ("deny", "approval_timeout")
        finally:
            b.start_sshd()
        # Back with backoff; the listing is B's own again: the timed-out request is gone.
        await until(pilot, lambda: "b unreachable" not in screen_text(app), timeout=60)
        await until(pilot, lambda: app.pending.get(queue_key("b", rid)) is None)


async def test_a_pane_attaches_a_remote_session(lab: SSHLab) -> None:
    a = lab.hosts[0]
    sid = new_session(a.daemon, BASH)
    clock = Clock()
    app = console(lab, "a", clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pane(pilot, app, sid)
        await type_line(pilot, "echo over-$((6*7))-ssh")
        await wait_shown(pilot, pane, "over-42-ssh")
    with a.daemon.operator() as op:
        assert "over-42-ssh" in op.call("sessions.screen", {"session": sid})["text"]
        op.call("sessions.kill", {"session": sid, "grace_s": 0})


async def test_a_session_started_from_the_console_runs_in_a_workspace_of_the_host(lab: SSHLab) -> None:
    """The console's own directory means nothing on host a: a new session there starts in
    the workspace a trusts most recently, and its pane attaches through the link."""
    a = lab.hosts[0]
    ws = workspace()
    with a.daemon.operator() as op:
        op.call("workspaces.add", {"workspace_root": str(ws)})
        before = {s["id"] for s in op.call("sessions.list")["sessions"]}
    clock = Clock()
    app = console(lab, "a", clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = await show_sessions(pilot, app)
        screen._new_session(["/bin/cat"])

        def started() -> dict[str, Any] | None:
            with a.daemon.operator() as op:
                new = [s for s in op.call("sessions.list")["sessions"] if s["id"] not in before]
            return new[0] if new else None

        session = await until(pilot, started, timeout=30)
        assert session["cwd"] == str(ws) and session["sandboxed"] is True
        pane = await until(pilot, screen.focused_pane, timeout=30)
        await until(pilot, lambda: pane.link.state == "live" and pane.link.screen is not None, timeout=30)
        await type_line(pilot, "typed-over-ssh")
        await wait_shown(pilot, pane, "typed-over-ssh")
    with a.daemon.operator() as op:
        op.call("sessions.kill", {"session": session["id"], "grace_s": 0})


async def test_the_grants_of_every_host_in_one_view_with_their_host(lab: SSHLab) -> None:
    a, b, _ = lab.hosts

    def grant(host: Any, summary: str) -> dict[str, Any]:
        with host.daemon.operator() as op:
            added: dict[str, Any] = op.call(
                "grants.add", {"fingerprint": secrets.token_hex(32), "summary": summary, "tool": "Bash"}
            )["grant"]
        return added

    on_a, on_b = grant(a, "echo granted-on-a"), grant(b, "echo granted-on-b")
    clock = Clock()
    app = console(lab, "a", "b", clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await until(pilot, lambda: isinstance(app.screen, GrantsScreen))
        view = app.screen.query_one(GrantsView)

        def host_of(gid: str) -> str | None:
            return next((h for h, g in zip(view.hosts, view.rows, strict=True) if g.id == gid), None)

        await until(pilot, lambda: host_of(on_a["id"]) and host_of(on_b["id"]), timeout=30)
        assert (host_of(on_a["id"]), host_of(on_b["id"])) == ("a", "b")
        await pilot.pause()
        text = screen_text(app)
        assert "HOST" in text and "granted-on-a" in text and "granted-on-b" in text
        # A grant made on b while the view is open shows, with its host.
        later = grant(b, "echo later-on-b")
        await until(pilot, lambda: host_of(later["id"]) == "b", timeout=30)

        # Revoke b's: it goes to b's daemon; a's grant stays.
        view.cursor = next(i for i, g in enumerate(view.rows) if g.id == on_b["id"])
        await pilot.press("r")
        await until(pilot, lambda: app.screen.CONTEXT == "confirm")
        assert "on host b" in screen_text(app)
        await pilot.press("y")
        await until(pilot, lambda: host_of(on_b["id"]) is None)
        with b.daemon.operator() as op:
            rows = op.call("grants.list", {"include_inactive": True})["grants"]
        assert next(g for g in rows if g["id"] == on_b["id"])["revoked_at"] is not None
        with a.daemon.operator() as op:
            assert any(g["id"] == on_a["id"] for g in op.call("grants.list")["grants"])
        assert host_of(on_a["id"]) == "a"

        # An unreachable host is named; the others' grants stay shown.
        b.stop_sshd()
        try:
            await until(pilot, lambda: "b unreachable" in screen_text(app), timeout=30)
            await pilot.press("i")
            status = app.screen.query_one("#status", StatusLine)
            await until(pilot, lambda: "not shown, unreachable — b:" in status.message, timeout=30)
            assert host_of(on_a["id"]) == "a" and host_of(later["id"]) is None
        finally:
            b.start_sshd()
