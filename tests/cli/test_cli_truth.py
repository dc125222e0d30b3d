"""The CLI tells what the console tells: the same badges, the same
words for a deny's note, the same exit code for a missing session."""

from __future__ import annotations

import pytest
from support.daemon import in_background, operation, wait_for, workspace
from support.items import pending_item

from console.tui.model.badges import badges

DAEMON_POLICY = "approval_timeout_s = 60\n"


def test_pending_shows_the_consoles_badges_for_the_same_request(daemon):
    ws = workspace()
    hook = str(ws / ".git" / "hooks" / "pre-commit")
    op = operation(ws, capabilities=[{"kind": "workspace_write", "scope": hook}], args=["x"])

    def submit():
        with daemon.agent() as agent:
            return agent.submit(op, timeout_s=30)

    answer = in_background(submit)
    with daemon.operator() as operator:
        [item] = wait_for(
            lambda: [
                p
                for p in operator.call("pending.list")["pending"]
                if p["operation"]["workspace_root"] == str(ws)
            ]
        )
    shown = ",".join(b.label for b in badges(pending_item(item)))
    assert shown == "PROTECTED"  # the console's one badge, not WRITE-OUT beside it
    listing = daemon.cli("pending")
    assert listing.returncode == 0, listing.stderr
    [row] = [line for line in listing.stdout.splitlines() if line.startswith(item["request_id"])]
    assert f" {shown} " in row and "WRITE-OUT" not in row, row
    assert daemon.cli("deny", item["request_id"], "--note", "use a branch").returncode == 0
    assert answer()["note"] == "use a branch"  # recorded, and sent to the agent


def test_deny_help_says_the_note_reaches_the_agent(daemon):
    assert "sent to the agent" in daemon.cli("deny", "--help").stdout


@pytest.mark.parametrize("verb", ["attach", "kill"])
def test_a_missing_session_is_the_same_error_for_every_verb(daemon, verb):
    r = daemon.cli("sessions", verb, "0000beef")
    assert r.returncode == 1, (verb, r.returncode, r.stderr)
    assert "0000beef" in r.stderr or "session" in r.stderr
