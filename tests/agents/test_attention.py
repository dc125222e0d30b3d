"""Who waits for you, for Codex as for Claude Code: its UserPromptSubmit and Stop hooks
(installed by `agent-console hook install codex`) mark the agent working, then done, and
`agent-console agents --agent codex` lists it with its kind."""

from __future__ import annotations

import json
import warnings

import pytest
from support.agents import AgentUnavailable, Codex, find_agent, shell_call
from support.daemon import running_daemon, workspace
from support.fake_models import call, fake_model, say

pytestmark = [pytest.mark.agents, pytest.mark.needs_bwrap]


@pytest.fixture(scope="module")
def codex():
    try:
        binary = find_agent("codex")
    except AgentUnavailable as e:
        warnings.warn(f"REAL CODEX TESTS NOT RUN: {e}", stacklevel=1)
        pytest.skip(str(e))
    driver = Codex(binary)
    yield driver
    driver.close()


@pytest.mark.proves(agent="codex", point="UserPromptSubmit, Stop hooks", mode="attention: working, then done")
def test_a_codex_turn_is_marked_working_then_done(codex):
    ws = workspace()
    tool, args = shell_call("codex", "echo hello")
    with running_daemon("approval_timeout_s = 60\n") as d:
        codex.install(d.state_dir, timeout_s=20)
        with d.operator(timeout_s=10) as op:
            op.subscribe(["attention"])
            with fake_model([[call(tool, args)], [say("Finished.")]]) as model:
                run = codex.run(model, ws)
            op.call("daemon.status")  # every event published so far is queued ahead of this answer
            states = [e["entry"]["state"] for e in op._events]
        listed = json.loads(d.cli("agents", "--agent", "codex", "--json").stdout)
    assert states == ["working", "done"], (states, run.describe())
    [entry] = listed
    assert entry["agent_kind"] == "codex" and entry["state"] == "done", listed
    assert entry["session_id"] and entry["root_comm"] == "node", listed
