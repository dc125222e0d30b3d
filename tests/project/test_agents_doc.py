"""docs/agents.md's table is the one scripts/agents_table.py writes from what the agents'
end-to-end tests proved (tests/agents/results.json)."""

from __future__ import annotations

import json
import subprocess
import sys

from support.paths import REPO

ROOT = REPO


def test_the_doc_table_matches_the_agents_test_results():
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "agents_table.py"), "--check"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_result_row_names_a_test_that_exists():
    rows = json.loads((ROOT / "tests" / "agents" / "results.json").read_text())
    source = "".join(p.read_text() for p in (ROOT / "tests" / "agents").glob("test_*.py"))
    assert rows
    for row in rows.values():
        assert f"def {row['test']}(" in source, row
