"""Finding 1 in the console: a request in a new workspace says so in words, and the
operator's "always" approval is what trusts the workspace."""

from __future__ import annotations

import shutil

from support.daemon import operation, running_daemon, workspace
from support.tui import Agent, Clock, make_app, pending_with, screen_text, select, until

SIZE = (150, 42)


async def test_detail_says_new_workspace_and_always_trusts_it():
    ws = workspace()
    clock = Clock()
    with running_daemon('workspaces = ["/srv/not-the-tests"]\napproval_timeout_s = 120\n') as d:
        op = operation(ws, args=["--tag=firstuse"])
        agent = Agent(d, op)
        app = make_app(d, clock)
        async with app.run_test(size=SIZE) as pilot:
            rid = await pending_with(pilot, app, "firstuse")
            await select(pilot, app, rid, clock)
            text = " ".join(screen_text(app).split())
            assert f"new workspace: {ws} is not among your trusted workspaces" in text
            await pilot.press("A")  # a new workspace: type the word first…
            await until(pilot, lambda: app.screen.CONTEXT == "modal")
            await pilot.press(*"workspace", "enter")
            await pilot.pause()
            assert agent.waiting  # …then the expiry of the grant
            await until(pilot, lambda: app.screen.CONTEXT == "modal")
            await pilot.press("enter")
            await until(pilot, lambda: not agent.waiting)
        assert (await agent.answer())["verdict"] == "allow"
        with d.operator() as op_client:
            roots = [r["workspace_root"] for r in op_client.call("workspaces.list")["workspaces"]]
        assert str(ws) in roots
    shutil.rmtree(ws.parent, ignore_errors=True)
