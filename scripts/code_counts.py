"""The counts the code's typing is held to: how much untyped data crosses the layers.

    .venv/bin/python scripts/code_counts.py [--json] [--against REV]

Counts, under console/: annotations naming ``dict[str, Any]``, ``.get(`` calls (all of
them, then per package), functions returning ``Any``, and ``type: ignore`` comments
without a reason after them.

``.get(`` counts two different things. ``table.get(key)`` with a variable key is an
ordinary lookup in an in-memory map (a cache, an index by id) and stays. ``data.get("name")``
with a field's name reads a record held as a dict: wire data that was never given a
type. That second count ("field reads from dicts") is the one to bring down, outside
``console/adapters/``, which parses the agents' own JSON (their hook payloads are the
JSON boundary). Reads of the environment count in neither.

The same counts are taken on REV (default: the tree the typing work started from) and
printed beside the current ones, with the ratio.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import subprocess
import tarfile
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "61e520b"  # the last tree before the typing work
JSON_BOUNDARY = ("adapters",)  # packages that parse other programs' JSON: field reads belong there
FIELD_READS = "field reads from dicts, outside adapters/"

IGNORE_WITHOUT_REASON = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?\s*$")


def _returns_any(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.returns is not None
        and ast.unparse(node.returns) in ("Any", "typing.Any")
    )


def _is_environment(receiver: str) -> bool:
    return "environ" in receiver or receiver in ("env", "environment")


def _reads_a_field(call: ast.Call) -> bool:
    first = call.args[0] if call.args else None
    return isinstance(first, ast.Constant) and isinstance(first.value, str)


def counts(root: Path) -> dict[str, int]:
    totals: Counter[str] = Counter()
    for path in sorted((root / "console").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(text, filename=rel)
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
        ]
        gets = len(calls)
        package = rel.split("/")[1] if rel.count("/") > 1 else "(top)"
        totals["dict[str, Any]"] += text.count("dict[str, Any]")
        totals[".get("] += gets
        if package not in JSON_BOUNDARY:
            totals[FIELD_READS] += sum(
                1 for c in calls if _reads_a_field(c) and not _is_environment(ast.unparse(c.func))
            )
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


def counts_at(rev: str) -> dict[str, int]:
    """The same counts on ``rev``'s console/ (from git, into a temporary directory)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "console"], capture_output=True, check=True
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        return counts(Path(tmp))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--against", default=BASELINE, metavar="REV", help=f"compare with REV ({BASELINE})")
    args = parser.parse_args()
    now = counts(ROOT)
    try:
        then: dict[str, int] | None = counts_at(args.against)
    except (subprocess.CalledProcessError, FileNotFoundError):
        then = None  # not a git checkout, or REV unknown: the current counts alone
    if args.json:
        print(json.dumps({"now": now, args.against: then}, indent=2))
        return 0
    print(f"{'now':>6}  {args.against:>7}  ratio")
    for name, value in now.items():
        before = then.get(name) if then is not None else None
        if before is None:
            print(f"{value:6d}  {'':>7}  {'':>5}  {name}")
        else:
            ratio = f"{value / before:.2f}" if before else "-"
            print(f"{value:6d}  {before:7d}  {ratio:>5}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
