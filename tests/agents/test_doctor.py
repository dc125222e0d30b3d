"""`agent-console hook doctor AGENT` on a fresh install: nothing fails open, and each
fail-open mode no configuration can close is named in one line with the safe way."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
from support.agents import AgentUnavailable, Codex, Copilot, Gemini, OpenCode, find_agent
from support.daemon import running_daemon, short_tmp

pytestmark = [pytest.mark.agents]
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


def doctor(agent, state_dir) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "console", "hook", "doctor", agent.name, "--state-dir", str(state_dir),
         "--config-dir", str(agent.config_dir), "--binary", str(agent.binary)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.proves(agent="*", point="install", mode="fresh install: doctor passes, names what stays open")
def test_doctor_passes_on_a_fresh_install(agent):
    with running_daemon("approval_timeout_s = 60\n") as d:
        agent.install(d.state_dir, timeout_s=30)
        r = doctor(agent, d.state_dir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no fail-open risk found" in r.stdout, r.stdout
    assert "  OK      ran the hook" in r.stdout, r.stdout
    [open_line] = [line for line in r.stdout.splitlines() if line.startswith("  OPEN")]
    assert f"agent-console run -- {agent.name}" in open_line, r.stdout


def test_doctor_finds_a_missing_install(agent):
    fresh = DRIVERS[agent.name](agent.binary)  # nothing installed in its home
    try:
        with running_daemon("approval_timeout_s = 60\n") as d:
            r = doctor(fresh, d.state_dir)
    finally:
        fresh.close()
    assert r.returncode == 1, r.stdout
    assert "RISK" in r.stdout and f"agent-console hook install {agent.name}" in r.stdout, r.stdout


def test_doctor_without_a_daemon_is_a_problem_not_a_pass(agent):
    nowhere = short_tmp() / "none"
    agent.install(nowhere, timeout_s=30)
    r = doctor(agent, nowhere)
    assert r.returncode == 1 and "PROBLEM" in r.stdout, r.stdout
