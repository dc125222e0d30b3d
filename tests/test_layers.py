"""Dependencies point downward only (ARCHITECTURE.md, "Package layout").

Checked two ways: statically, every import statement in each package against the
layers it may use; and dynamically, importing the pure packages in a fresh interpreter
must not load Textual, an asyncio server or sqlite3. Inside the TUI the same holds for
its folders by role (docs/architecture.md): model/ without Textual or Rich, render/
without Textual, widgets/ only widgets, and a top level that holds only the app.
"""

from __future__ import annotations

import ast
import importlib
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
    "remote": {"contract", "policy", "protocol", "client"},
    # The console's pure model (badges, the typed-word rule) is shared, never Textual.
    "web": {"contract", "policy", "protocol", "client", "remote", "tui"},
    "tui": {"contract", "policy", "protocol", "client", "terminal", "remote"},
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
    "remote": {"textual", "rich", "sqlite3"},
    "web": {"textual", "rich", "sqlite3"},
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


# ------------------------------------------------------------ inside the TUI, by role

TUI = ROOT / "tui"
# The TUI's folders, bottom up (docs/architecture.md): what each is for, and the
# third-party UI libraries and console.tui folders each may import besides itself.
TUI_FOLDERS = {
    "model": "state and logic importing neither Textual nor Rich",
    "render": "data turned into Rich Text, without Textual",
    "settings": "the action table, bindings, config, themes and keymaps",
    "widgets": "Textual Widget subclasses, one or more per module",
    "panes": "the terminal pane and what serves it",
    "screens": "the screens",
}
TUI_FORBIDDEN = {"model": {"textual", "rich"}, "render": {"textual"}}
TUI_MAY_USE = {"model": {"model"}, "render": {"model", "render"}}
# The app and what serves the whole of it; anything else has a folder.
TUI_TOP_LEVEL = {
    "__init__",
    "app",
    "launch",
    "link",
    "commands",
    "registry",
    "watch_monitor",
    "clipboard",
    "desktop",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute_imports(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved (they would otherwise slip
    past a check that reads only absolute ones)."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            if node.module is None:  # from . import x
                names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("folder", sorted(TUI_FORBIDDEN))
def test_tui_pure_folders_import_no_ui_above_them(folder):
    offenders = []
    for path in sorted((TUI / folder).rglob("*.py")):
        for name in _absolute_imports(path):
            parts = name.split(".")
            if parts[0] in TUI_FORBIDDEN[folder] or (
                parts[:2] == ["console", "tui"] and (len(parts) < 3 or parts[2] not in TUI_MAY_USE[folder])
            ):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_tui_pure_folders_load_no_ui():
    """Imported on their own, model/ loads neither Textual nor Rich and render/ no Textual:
    nothing they import (console.contract, console.protocol, ...) pulls them in either."""
    code = (
        "import importlib, pkgutil, sys\n"
        "def load(pkg):\n"
        "    for m in pkgutil.walk_packages(importlib.import_module(pkg).__path__, pkg + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "load('console.tui.model')\n"
        "after_model = sorted(m for m in ('textual', 'rich') if m in sys.modules)\n"
        "load('console.tui.render')\n"
        "after_render = sorted(m for m in ('textual',) if m in sys.modules)\n"
        "print(','.join(after_model) + '|' + ','.join(after_render))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "|"


def test_tui_widgets_are_widgets():
    from textual.widget import Widget

    offenders = []
    for path in sorted((TUI / "widgets").glob("*.py")):
        if path.name == "__init__.py":
            continue
        module = importlib.import_module(_module_name(path))
        defined = [
            obj
            for obj in vars(module).values()
            if isinstance(obj, type) and obj.__module__ == module.__name__ and issubclass(obj, Widget)
        ]
        if not defined:
            offenders.append(
                f"{path.relative_to(ROOT)} defines no Widget subclass: widgets/ holds widgets only "
                "(logic goes to model/, Rich rendering to render/, the pane's parts to panes/)"
            )
    assert offenders == []


def _belongs(path: Path) -> list[str]:
    """Where a loose module should go, judged by what it imports and defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tops = {name.split(".")[0] for name in _absolute_imports(path)}
    bases = {ast.unparse(b) for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for b in n.bases}
    if any("Screen" in b for b in bases):
        return ["screens"]
    if "textual" in tops:
        return ["widgets", "panes"] if bases else ["settings", "panes"]
    return ["render"] if "rich" in tops else ["model"]


def test_tui_top_level_holds_only_the_app():
    loose = []
    for path in sorted(TUI.glob("*.py")):
        if path.stem not in TUI_TOP_LEVEL:
            where = " or ".join(f"console/tui/{f}/ ({TUI_FOLDERS[f]})" for f in _belongs(path))
            loose.append(
                f"console/tui/{path.name} is a loose module: by its imports it belongs in {where}; "
                "only the app and what serves all of it stay at the top (then add it to TUI_TOP_LEVEL)"
            )
    for path in sorted(p for p in TUI.iterdir() if p.is_dir() and p.name != "__pycache__"):
        if path.name not in TUI_FOLDERS:
            loose.append(f"console/tui/{path.name}/ is not one of the TUI's folders {sorted(TUI_FOLDERS)}")
    missing = sorted(name for name in TUI_TOP_LEVEL if not (TUI / f"{name}.py").exists())
    assert loose == []
    assert missing == []


# Where a JSON-RPC error may be made in the daemon: the methods (which map the services'
# refusals, console/daemon/methods/errors.py), the dispatcher (unknown method, not
# authenticated) and the frame quotas (answered before any method runs).
RPC_ERROR_HOMES = ("methods/", "connection.py", "quotas.py")


def test_daemon_services_raise_their_own_errors_not_the_wires():
    daemon = ROOT / "daemon"
    offenders = [
        str(path.relative_to(daemon))
        for path in sorted(daemon.rglob("*.py"))
        if not str(path.relative_to(daemon)).startswith(RPC_ERROR_HOMES) and "RPCError" in path.read_text()
    ]
    assert offenders == [], f"raise a console.daemon.errors kind instead of RPCError in {offenders}"
