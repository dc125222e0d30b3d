"""Who waits for you, for Codex and Gemini CLI as for Claude Code: the hooks that
`agent-console hook install` adds for a prompt and the agent's answer (Codex:
UserPromptSubmit, Stop; Gemini CLI: BeforeAgent, AfterAgent; OpenCode: its plugin's
chat.message and session.idle; Copilot CLI: userPromptSubmitted, agentStop) mark the agent working, then
done, and `agent-console agents --agent KIND` lists it with its kind."""

from __future__ import annotations

import json
import warnings

import pytest
from support.agents import AgentUnavailable, Codex, Copilot, Gemini, OpenCode, find_agent, shell_call
from support.daemon import running_daemon, workspace
from support.fake_models import call, fake_model, say

pytestmark = [pytest.mark.agents, pytest.mark.needs_bwrap]


DRIVERS = {"codex": Codex, "copilot": Copilot, "gemini": Gemini, "opencode": OpenCode}


@pytest.fixture(scope="module", params=sorted(DRIVERS))
def agent(request):
    try:
        binary = find_agent(request.param)
    except AgentUnavailable as e:
        warnings.warn(f"REAL {request.param.upper()} TESTS NOT RUN: {e}", stacklevel=1)
        pytest.skip(str(e))
    driver = DRIVERS[request.param](binary)
    yield driver
    driver.close()


@pytest.mark.proves(agent="*", point="attention", mode="attention: working, then done")
def test_a_turn_is_marked_working_then_done(agent):
    ws = workspace()
    tool, args = shell_call(agent.name, "echo hello")
    with running_daemon("approval_timeout_s = 60\n") as d:
        agent.install(d.state_dir, timeout_s=20)
        with d.operator(timeout_s=10) as op:
            op.subscribe(["attention"])
            with fake_model([[call(tool, args)], [say("Finished.")]]) as model:
                run = agent.run(model, ws)
            op.call("daemon.status")  # every event published so far is queued ahead of this answer
            states = [e["entry"]["state"] for e in op._events]
        listed = json.loads(d.cli("agents", "--agent", agent.name, "--json").stdout)
    assert states == ["working", "done"], (states, run.describe())
    [entry] = listed
    assert entry["agent_kind"] == agent.name and entry["state"] == "done", listed
    assert entry["session_id"] and entry["root_comm"], listed
