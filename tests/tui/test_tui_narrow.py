"""At 80x24 every list keeps the column that says what a row is about.

The history and the grants used to give their qualifying columns (time with date,
source, reason, tool; id, created, expiry, uses, last use) every cell of an 80-column
terminal and cut the command — what was decided — to nothing. Now the qualifiers give way
first, each list in its own order (console/tui/model/columns.py).
"""

from __future__ import annotations

from support.daemon import in_background, operation, wait_for, workspace
from support.tui import Clock, make_app, screen_text, until

from console.tui.model.columns import Column, fit, header

DAEMON_POLICY = "approval_timeout_s = 120\n"
TAG = "dc80"


def test_the_deciding_column_keeps_its_share_and_the_others_give_way_in_order():
    columns = (
        Column("A", 20, minimum=9, gives_way=3, whole=True),
        Column("B", 10, gives_way=1),
        Column("C", 10, minimum=6, gives_way=2),
        Column("WHAT", flex=True, minimum=20, share=0.5),
    )
    assert fit(columns, 200) == (20, 10, 10, 160)  # room for all
    assert fit(columns, 70) == (20, 0, 10, 40)  # B goes first, whole
    assert fit(columns, 60) == (20, 0, 10, 30)
    assert fit(columns, 50) == (9, 0, 6, 35)  # then C shrinks, A drops to its short form
    assert header(columns, (9, 0, 6, 35)) == "A        C     WHAT"


async def test_history_and_grants_show_what_was_decided_at_80x24(daemon):
    ws = workspace()
    op = operation(ws, args=[TAG, "--with-a-long-tail"], network="any")
    answer = in_background(lambda: _submit(daemon, op), "the agent")

    def pending_id():
        with daemon.operator() as o:
            found = [p["request_id"] for p in o.call("pending.list")["pending"] if TAG in p["command"]]
        return found[0] if found else None

    rid = wait_for(pending_id, 30)
    assert daemon.cli("approve", rid, "--scope", "always").returncode == 0
    assert answer()["verdict"] == "allow"

    app = make_app(daemon, Clock())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        row = await until(
            pilot, lambda: next((line for line in screen_text(app).splitlines() if TAG in line), None)
        )
        assert "allow" in row  # the verdict beside what was decided
        await pilot.press("3")
        row = await until(
            pilot, lambda: next((line for line in screen_text(app).splitlines() if TAG in line), None)
        )
        assert "allow" in row and "always" in row
        assert "WHAT" in screen_text(app).splitlines()[1]  # the header moved with the columns


def _submit(daemon, op):
    with daemon.agent() as agent:
        return agent.submit(op)
