"""Write the table of docs/agents.md from what the agents' end-to-end tests proved.

    python scripts/agents_table.py          rewrite the table in docs/agents.md
    python scripts/agents_table.py --check  exit 1 when the doc differs from the results

tests/agents/results.json is written by the agents tests (``./dev test -m agents``,
tests/agents/conftest.py): one row per (agent, interception point, fail mode) a passing
test proved. The table is a grid: a row per fail mode, a column
per agent, each cell the interception point the passing test went through (or "—": not
proved for that agent), and under it the tests that prove each row. The
versions are the pinned ones (scripts/install-agents.sh). tests/project/test_agents_doc.py runs
``--check``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "tests" / "agents" / "results.json"
DOC = ROOT / "docs" / "agents.md"
BEGIN = "<!-- agents-table: written by scripts/agents_table.py from tests/agents/results.json -->"
END = "<!-- /agents-table -->"
AGENTS = ("codex", "copilot", "gemini", "opencode", "acp:claude-code-acp")
TITLES = {
    "codex": "Codex",
    "copilot": "Copilot CLI",
    "gemini": "Gemini CLI",
    "opencode": "OpenCode",
    "acp:claude-code-acp": "ACP (claude-code-acp)",
}


def versions() -> dict[str, str]:
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install-agents.sh"), "--versions"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = {
        line.split()[0]: f"{line.split()[1]} {line.split()[2]}" for line in out.splitlines() if line.strip()
    }
    return {a: found.get(a.split(":")[-1], "") for a in AGENTS}


def table(rows: dict[str, dict[str, str]], pinned: dict[str, str]) -> str:
    modes = sorted({row["mode"] for row in rows.values()})
    cells = {(r["agent"], r["mode"]): r for r in rows.values()}
    head = "| fail mode closed | " + " | ".join(TITLES[a] for a in AGENTS) + " |"
    rule = "|---|" + "---|" * len(AGENTS)
    version = (
        "| *pinned version* | " + " | ".join(f"`{pinned[a]}`" if pinned[a] else "" for a in AGENTS) + " |"
    )
    lines = [head, rule, version]
    for mode in modes:
        marks = []
        for agent in AGENTS:
            row = cells.get((agent, mode))
            marks.append(f"✓ {row['point']}" if row else "—")
        lines.append(f"| {mode} | " + " | ".join(marks) + " |")
    lines.append("")
    lines.append("Proved by (tests/agents/):")
    lines.append("")
    for mode in modes:
        tests = sorted({r["test"] for r in rows.values() if r["mode"] == mode})
        lines.append(f"- {mode}: " + ", ".join(f"`{t}`" for t in tests))
    return "\n".join(lines)


def render(doc: str) -> str:
    rows = json.loads(RESULTS.read_text())
    start, end = doc.index(BEGIN), doc.index(END)
    return doc[: start + len(BEGIN)] + "\n" + table(rows, versions()) + "\n" + doc[end:]


def main() -> int:
    doc = DOC.read_text()
    new = render(doc)
    if "--check" in sys.argv[1:]:
        if new != doc:
            print(
                "docs/agents.md's table differs from tests/agents/results.json: run scripts/agents_table.py"
            )
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
