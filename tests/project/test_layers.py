"""Dependencies point downward only (ARCHITECTURE.md, "Package layout").

Checked two ways: statically, every import statement in each package against the
layers it may use; and dynamically, importing the pure packages in a fresh interpreter
must not load Textual, an asyncio server or sqlite3. Inside the TUI the same holds for
its folders by role (docs/architecture.md): model/ without Textual or Rich, render/
without Textual, widgets/ only widgets, and a top level that holds only the app.
Neither the packages nor the modules inside one import each other in a cycle.
"""

from __future__ import annotations

import ast
import functools
import importlib
import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

ROOT = REPO / "console"

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


def test_the_daemon_loads_the_terminal_emulator_with_its_first_session_not_at_start():
    """The emulator's library costs a fifth of a second to load (its C declarations are
    parsed at import): a daemon that runs no session, as most of an agent's do not, never
    pays it."""
    code = (
        "import sys, console.daemon.app, console.sessions;"
        "print(','.join(m for m in ('pyghostty', 'console.terminal') if m in sys.modules))"
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


# ------------------------------------------------------------ no import cycles
#
# The packages under console/ import one another without a cycle, and so do the modules
# inside each package, counting every import that runs: at module level and inside
# functions (a deferred import still ties the two modules together). Imports under
# ``if TYPE_CHECKING:`` never run and are left out.

PACKAGES = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and any(p.rglob("*.py")))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _dotted(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path, root: Path) -> dict[str, int]:
    """The modules ``path`` imports when it runs, each with the line of its first import.
    ``from m import x`` counts as ``m`` and ``m.x`` (x may be a submodule)."""
    package = list(path.relative_to(root.parent).parts[:-1])
    found: dict[str, int] = {}

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.setdefault(module, node.lineno)
            for alias in node.names:
                found.setdefault(f"{module}.{alias.name}", node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


Graph = dict[str, dict[str, str]]  # node -> {node it imports: where, for the message}


@functools.cache
def _import_graphs(root: Path) -> tuple[Graph, dict[str, Graph]]:
    """The graph of the top-level packages under ``root`` and, per package, of its modules.
    A module importing its own parent package is no edge: the parent is loaded first anyway."""
    modules = {_dotted(path, root): path for path in sorted(root.rglob("*.py"))}

    def home(module: str) -> str | None:  # the top-level package holding it
        parts = modules[module].relative_to(root).parts
        return parts[0] if len(parts) > 1 else None

    packages: Graph = {}
    per_package: dict[str, Graph] = {}
    for name, path in modules.items():
        package = home(name)
        if package is None:
            continue
        packages.setdefault(package, {})
        edges = per_package.setdefault(package, {}).setdefault(name, {})
        for imported, line in _runtime_imports(path, root).items():
            target = imported
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if not target or target == name or name.startswith(target + ".") or home(target) is None:
                continue
            where = f"{path.relative_to(root.parent)}:{line} imports {target}"
            if home(target) == package:
                edges.setdefault(target, where)
            else:
                packages[package].setdefault(str(home(target)), where)
    return packages, per_package


def _cycles(graph: Graph) -> list[list[str]]:
    """One shortest cycle through each strongly connected part of ``graph`` (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part: set[str] = set()
            while node not in part:
                part.add(stack.pop())
            on_stack.difference_update(part)
            if len(part) > 1:
                parts.append(part)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    cycles: list[list[str]] = []
    for part in parts:
        start = min(part)
        paths = {start: [start]}
        queue = [start]
        for node in queue:  # breadth first, so the cycle found is a shortest one
            if start in graph[node]:
                cycles.append([*paths[node], start])
                break
            for nxt in sorted(graph[node]):
                if nxt in part and nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    queue.append(nxt)
    return sorted(cycles)


def _explain(cycles: list[list[str]], graph: Graph) -> str:
    lines = []
    for cycle in cycles:
        lines.append(" -> ".join(cycle))
        lines.extend(f"    {graph[a][b]}" for a, b in itertools.pairwise(cycle))
    return "import cycle(s); move the shared code down a level to break each:\n" + "\n".join(lines)


def test_packages_import_each_other_without_a_cycle():
    packages, _ = _import_graphs(ROOT)
    cycles = _cycles(packages)
    assert cycles == [], _explain(cycles, packages)


@pytest.mark.parametrize("package", PACKAGES)
def test_modules_of_a_package_import_each_other_without_a_cycle(package):
    _, modules = _import_graphs(ROOT)
    cycles = _cycles(modules[package])
    assert cycles == [], _explain(cycles, modules[package])


def test_the_cycle_check_counts_function_imports_and_skips_type_checking(tmp_path):
    pkg = tmp_path / "console" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from console.pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "c.py").write_text("import console.pkg.a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .e import x\n")
    (pkg / "e.py").write_text("from .d import y\n")
    (tmp_path / "console" / "other").mkdir()
    (tmp_path / "console" / "other" / "m.py").write_text("from console.pkg import a\n")
    (tmp_path / "console" / "pkg" / "f.py").write_text("def g():\n    import console.other.m\n")
    packages, modules = _import_graphs(tmp_path / "console")
    assert _cycles(modules["pkg"]) == [["console.pkg.a", "console.pkg.b", "console.pkg.c", "console.pkg.a"]]
    assert _cycles(packages) == [["other", "pkg", "other"]]
    assert "console/pkg/b.py:2 imports console.pkg.c" in _explain(_cycles(modules["pkg"]), modules["pkg"])
