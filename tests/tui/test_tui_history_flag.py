"""The console tells the operator about history rows written while the daemon was down.

Start-up flags rows found past the history's head anchor (docs/security.md); their
grants are not honoured until the operator accepts them. Before, only `agent-console
daemon status` and `history verify` said so: the console, where the operator lives,
showed nothing, and its status events did not even carry the flag. Now the header
shows a pill and a notification says what it means and what to run; accepting the rows
(from the CLI) takes the pill away at once, through the daemon's status event.
"""

from __future__ import annotations

import re

from support.store import behind_the_head
from support.tui import Clock, Notices, make_app, screen_text, until

from console.protocol.results import DaemonStatusResult
from console.protocol.status import PolicyConfigView
from console.store import daemon_event

SIZE = (130, 30)


def header(app) -> str:
    return screen_text(app).splitlines()[0]


async def test_rows_written_while_the_daemon_was_down_show_until_the_operator_accepts_them(fresh_daemon):
    d = fresh_daemon
    d.stop()
    behind_the_head(d.loc.database, lambda s: s.append(daemon_event(at=1.0, note="written behind")).result())
    d.start()
    with d.operator() as o:
        flagged = o.call("daemon.status")["history"]["unaccepted"]
    assert len(flagged) == 1
    low, high = flagged[0]

    seen = Notices()
    app = make_app(d, Clock())
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        shown = f"history: {high - low + 1} unaccepted row"
        await until(pilot, lambda: shown in header(app))
        said = [n for n in seen.raised if n.title == "history"]
        assert len(said) == 1 and said[0].severity == "error"
        assert f"rows {low}-{high}" in said[0].message
        assert f"agent-console history accept --through {high}" in said[0].message

        # A status event for something else (the policy reloaded) still carries the flag:
        # the pill stays, and it is not said again.
        policy = re.sub(r"(?m)^approval_timeout_s = .*$", "", d.loc.policy.read_text())
        d.loc.policy.write_text(policy + "approval_timeout_s = 123\n")
        await until(pilot, lambda: timeout_of(app.daemon_status) == 123)
        await pilot.pause()
        assert shown in header(app)
        assert len([n for n in seen.raised if n.title == "history"]) == 1

        accepted = d.cli("history", "accept", "--through", str(high), "--note", "reviewed")
        assert accepted.returncode == 0, accepted.stderr
        await until(pilot, lambda: "unaccepted" not in header(app))


def test_every_operator_view_of_the_status_is_the_whole_status(daemon):
    """daemon.status, subscribe's status and the status event are one shape: the protocol
    version and the history's flags were in the first only."""
    with daemon.operator() as o:
        hello = o.hello
        whole = o.call("daemon.status")
        subscribed = o.call("subscribe", {"topics": ["status"]})["status"]
    assert whole["protocol"] == subscribed["protocol"] == hello["protocol"]
    assert whole["history"] == subscribed["history"] == {"unaccepted": []}
    assert set(whole) == set(subscribed)


def timeout_of(status: DaemonStatusResult | None) -> float | None:
    """The approval timeout of the policy the status shows (None: no status yet)."""
    config = status.policy.config if status is not None else None
    return config.approval_timeout_s if isinstance(config, PolicyConfigView) else None
