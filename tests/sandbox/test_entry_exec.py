"""A sandboxed script runs from its sealed copy and still sees its own path
(console/sandbox/entry_exec.py): ``$0``, ``sys.argv``, ``__file__``, sibling imports."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from support.paths import TESTS

sys.path.insert(0, str(TESTS / "escapes"))
from sandbox_escape_helpers import HOST, config, real_dir, run

from console.contract import parse

pytestmark = pytest.mark.needs_bwrap


@pytest.fixture
def ws():
    base = real_dir("ac-entry-")
    ws = base / "ws"
    (ws / "scripts").mkdir(parents=True)
    (ws / "scripts" / "helper.py").write_text("WHO = 'helper'\n")
    (ws / "scripts" / "tool.py").write_text(
        "import sys, helper\nprint(sys.argv, __file__, __name__, helper.WHO)\nraise SystemExit(3)\n"
    )
    (ws / "scripts" / "run.sh").write_text(
        '#!/bin/sh\necho "$0|$1|$2|$(basename "$(dirname "$0")")"\nexit 4\n'
    )
    (ws / "scripts" / "run.sh").chmod(0o755)
    try:
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def op(ws: Path, executable: str, *args: str):
    return parse(
        {"kind": "process", "executable": executable, "args": list(args), "workspace_root": str(ws)}, HOST
    )


def test_a_python_script_keeps_its_argv_file_name_and_sibling_imports(ws):
    result = run(op(ws, "/usr/bin/python3", "scripts/tool.py", "a", "b"), config(ws.parent))
    assert result.stdout == "['scripts/tool.py', 'a', 'b'] scripts/tool.py __main__ helper\n", result.stderr
    assert result.returncode == 3
    assert "/dev/fd/" in " ".join(result.args)  # it was run from the sealed copy


@pytest.mark.parametrize(
    ("executable", "args"),
    [("/bin/sh", ("scripts/run.sh", "x", "y")), ("./scripts/run.sh", ("x", "y"))],
    ids=["sh-script", "run-directly"],
)
def test_a_shell_script_keeps_its_dollar_zero_and_arguments(ws, executable, args):
    result = run(op(ws, executable, *args), config(ws.parent))
    zero = "scripts/run.sh" if executable == "/bin/sh" else str(ws / "scripts" / "run.sh")
    assert result.stdout == f"{zero}|x|y|scripts\n", result.stderr
    assert result.returncode == 4
