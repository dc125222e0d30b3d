"""The agents' end-to-end tests: each proves one (agent, interception point, fail mode).

A test names what it proves with ``@pytest.mark.proves(agent=, point=, mode=)``: ``agent="*"``
is the driver the test ran with (its ``agent`` fixture), and a ``point`` that names one of
the driver's ``points`` (shell, edit, install) is that agent's interception point. When
the test passes, its row goes to tests/agents/results.json (rows of tests that did not run
this time are kept; a row whose test failed is dropped), from which scripts/agents_table.py
writes the table of docs/agents.md (tests/project/test_agents_doc.py checks that the two agree).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RESULTS = Path(__file__).parent / "results.json"
_passed: dict[str, dict[str, str]] = {}
_failed: set[str] = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    mark = item.get_closest_marker("proves")
    if mark is None or report.when != "call":
        return
    agent, point = mark.kwargs["agent"], mark.kwargs["point"]
    if agent == "*":  # the agent the test ran with, and that agent's interception point
        driver = item.funcargs.get("agent")
        agent = getattr(driver, "name", agent)
        point = getattr(driver, "points", {}).get(point, point)
    row = {**mark.kwargs, "agent": str(agent), "point": str(point)}
    key = f"{row['agent']} | {row['point']} | {row['mode']}"
    if report.passed and key not in _failed:
        _passed[key] = {**row, "test": item.originalname}
    elif report.failed:
        _failed.add(key)
        _passed.pop(key, None)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _passed and not _failed:
        return
    import fcntl

    with open(RESULTS.with_suffix(".lock"), "w") as lock:  # xdist workers finish at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            rows = json.loads(RESULTS.read_text())
        except (OSError, ValueError):
            rows = {}
        for key in _failed:
            rows.pop(key, None)
        rows.update(_passed)
        RESULTS.write_text(json.dumps(dict(sorted(rows.items())), indent=2) + "\n")
