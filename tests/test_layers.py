"""Dependencies point downward only (ARCHITECTURE.md, "Package layout").

Checked two ways: statically, every import statement in each package against the
layers it may use; and dynamically, importing the pure packages in a fresh interpreter
must not load Textual, an asyncio server or sqlite3.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent / "console"

# package -> the console packages it may import (besides itself).
ALLOWED = {
    "contract": set(),
    "policy": {"contract"},
    "store": {"contract", "policy"},
    "protocol": {"contract", "policy"},
    "client": {"contract", "policy", "protocol"},
    "sandbox": {"contract", "policy"},
    "terminal": {"contract"},
    "sessions": {"contract", "policy", "terminal"},
    "watch": {"contract", "policy"},
    "adapters": {"contract", "policy", "protocol", "client"},
    "daemon": {"contract", "policy", "protocol", "store", "sessions", "watch", "sandbox"},
    "tui": {"contract", "policy", "protocol", "client", "terminal"},
}
# Top-level modules every layer above the pure ones may use: the package itself
# (its version) and where state lives.
SHARED = {"", "locations"}
# Third-party or stdlib modules a package must never import.
FORBIDDEN = {
    "contract": {"textual", "rich", "asyncio", "sqlite3", "socket", "socketserver", "subprocess"},
    "policy": {"textual", "rich", "asyncio", "sqlite3", "socket", "socketserver", "subprocess"},
    "store": {"textual", "rich", "asyncio"},
    "protocol": {"textual", "rich", "sqlite3"},
    "client": {"textual", "rich", "sqlite3"},
    "sandbox": {"textual", "rich", "sqlite3"},
    "terminal": {"textual", "rich", "sqlite3", "asyncio"},
    "sessions": {"textual", "rich", "sqlite3"},
    "watch": {"textual", "rich", "sqlite3"},
    "daemon": {"textual", "rich"},
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_lower_layers(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "console":
                parts = name.split(".")
                target = parts[1] if len(parts) > 1 else ""
                shared = SHARED if package not in ("contract", "policy") else set()
                if target not in ALLOWED[package] | {package} | shared:
                    offenders.append(f"{path.relative_to(ROOT)} imports {name}")
            elif top in FORBIDDEN.get(package, set()):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_pure_packages_load_no_ui_server_or_database():
    code = (
        "import sys, console.contract, console.policy, console.policy.evaluate;"
        "bad = [m for m in ('textual', 'rich', 'asyncio', 'sqlite3', '_sqlite3', 'socketserver')"
        " if m in sys.modules]; print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
