"""Where the console's look lives: .tcss files, one role-text base, one screen base.

The snapshot tests prove the look did not change when it moved; these keep it where it
moved to: CSS in ``.tcss`` files loaded by ``CSS_PATH`` (shipped in the package), no
widget's CSS made from another's, role text styled once, every view a ``ConsoleScreen``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from support.paths import REPO
from textual.app import App
from textual.css.stylesheet import Stylesheet
from textual.screen import ModalScreen, Screen

from console.tui.app import ConsoleApp
from console.tui.registry import views
from console.tui.render.present import ROLES
from console.tui.screens.base import ConsoleScreen
from console.tui.settings.roles import BADGE_CLASSES, DETAIL_LOOKS, ROLE_CLASSES

TUI = REPO / "console" / "tui"
# Reusable widgets whose own defaults stay with them (Textual's convention): how the
# Line-API bases scroll, and the list's cursor (a component class).
OWN_DEFAULTS = {"widgets/line_list.py", "widgets/text_view.py"}


def _modules(folder: str) -> list[Path]:
    return sorted(p for p in (TUI / folder).glob("*.py") if p.name != "__init__.py")


def _css_assignments(path: Path) -> list[tuple[str, ast.expr]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name) and target.id in ("DEFAULT_CSS", "CSS"):
                found.append((target.id, value))
    return found


def _screen_classes() -> list[type[Screen[object]]]:
    found = []
    for path in _modules("screens"):
        module = importlib.import_module(f"console.tui.screens.{path.stem}")
        found += [
            obj
            for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, Screen) and obj.__module__ == module.__name__
        ]
    return found


def _css_files() -> list[Path]:
    """Every .tcss file the app and its screens name in CSS_PATH, resolved as Textual does
    (relative to the module that defines the class)."""
    owners: list[type] = [ConsoleApp, *_screen_classes()]
    paths = []
    for cls in owners:
        if cls.CSS_PATH:
            paths.append((Path(inspect.getfile(cls)).parent / str(cls.CSS_PATH)).resolve())
    return sorted(set(paths))


def test_no_module_builds_css_from_another_or_inline():
    """CSS is written, not computed: no DEFAULT_CSS made by str.replace from another
    widget's; the app's and the screens' look is in .tcss files, not strings."""
    offenders = []
    for path in sorted(TUI.rglob("*.py")):
        rel = path.relative_to(TUI).as_posix()
        for name, value in _css_assignments(path):
            if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                offenders.append(f"{rel}: {name} is computed, not a string")
            elif (rel.startswith(("screens/", "widgets/")) and rel not in OWN_DEFAULTS) or rel == "app.py":
                offenders.append(f"{rel}: {name} inline; put it in a .tcss file (CSS_PATH)")
        if ".DEFAULT_CSS" in path.read_text():
            offenders.append(f"{rel}: reads another class's DEFAULT_CSS")
    assert offenders == []


def test_every_view_is_a_console_screen():
    screens = _screen_classes()
    views_ = [cls for cls in screens if not issubclass(cls, ModalScreen)]
    assert {cls.__name__ for cls in views_} >= {"QueueScreen", "HistoryScreen", "GrantsScreen", "EntryScreen"}
    assert [cls.__name__ for cls in views_ if not issubclass(cls, ConsoleScreen)] == []
    for name, view in views().items():
        assert isinstance(view.factory, type) and issubclass(view.factory, ConsoleScreen), name


def test_a_console_screen_composes_the_chrome_once():
    """The views compose only their body: the pills, status line and footer come from
    the base (a view that yields its own would show two)."""
    for cls in _screen_classes():
        if issubclass(cls, ConsoleScreen) and cls is not ConsoleScreen:
            assert "compose" not in vars(cls), f"{cls.__name__} overrides compose; give compose_body"


def test_the_css_files_exist_parse_and_are_all_used():
    files = _css_files()
    assert TUI / "console.tcss" in files
    on_disk = sorted(p.resolve() for p in TUI.rglob("*.tcss"))
    assert on_disk == files, "a .tcss file no CSS_PATH names (or a CSS_PATH naming a missing file)"
    stylesheet = Stylesheet(variables=App().get_css_variables())
    stylesheet.read_all(files)
    stylesheet.parse()  # raises StylesheetParseError with the file and line
    assert len(stylesheet.rules) > 40


def test_role_text_is_styled_once_and_used_by_the_widgets():
    css = "\n".join(p.read_text() for p in _css_files())
    defined = set(re.findall(r"\.((?:role|badge)--[a-z-]+)\s*\{", css))
    assert defined == set(ROLE_CLASSES | BADGE_CLASSES)
    assert len(re.findall(r"\.role--muted\s*\{", css)) == 1
    assert set(DETAIL_LOOKS) == set(ROLES)
    # no widget keeps its own copy of the hostile-text marks or the muted colour
    own = re.compile(r"[a-z]+(?:-[a-z]+)*--(?:escape|lookalike|dim|empty|muted)\b")
    for path in _modules("widgets"):
        copies = [m for m in own.findall(path.read_text()) if not m.startswith("role--")]
        assert copies == [], f"{path.name} styles role text itself: {copies}"


def test_the_look_ships_in_the_package_and_is_found_installed(tmp_path):
    """Lay the package out as pip installs it (setuptools' build_py, with pyproject's
    package-data), then, from there alone, find and parse every CSS_PATH."""
    src, lib = tmp_path / "src", tmp_path / "lib"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "console", src / "console", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import setuptools; setuptools.setup()",
            "-q",
            "build_py",
            "--build-lib",
            str(lib),
        ],
        cwd=src,
        check=True,
        capture_output=True,
    )
    probe = textwrap.dedent(
        """
        import inspect, sys
        from pathlib import Path
        import console
        assert Path(console.__file__).is_relative_to(sys.argv[1]), console.__file__
        from textual.app import App
        from textual.css.stylesheet import Stylesheet
        from console.tui.app import ConsoleApp
        from console.tui.registry import views
        from console.tui.screens.help import HelpScreen
        from console.tui.screens.prompts import ConfirmPrompt, TextPrompt
        owners = [ConsoleApp, HelpScreen, TextPrompt, ConfirmPrompt, *(v.factory for v in views().values())]
        paths = [Path(inspect.getfile(c)).parent / c.CSS_PATH for c in owners]
        missing = [str(p) for p in paths if not p.is_file()]
        assert not missing, missing
        sheet = Stylesheet(variables=App().get_css_variables())
        sheet.read_all(paths)
        sheet.parse()
        print(len(paths), len(sheet.rules))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(lib)}
    out = subprocess.run(
        [sys.executable, "-c", probe, str(lib)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    count, rules = (int(n) for n in out.stdout.split())
    assert count >= 9 and rules > 40
