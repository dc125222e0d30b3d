"""agent-console installs for real: a wheel in a fresh virtualenv, as pipx or uv tool would.

The only install was the dev checkout: the Claude Code hook pointed at the clone's
``.venv``, so deleting the clone blocked every tool call. Here the project is built into
a wheel (from a copy of its files, offline), installed into a new virtualenv, and used as
a user would: ``--version``, the themes and keymaps it ships, a daemon, ``hook install``
(which names that virtualenv's interpreter) and ``hook doctor`` (clean for the installed
copy; it warns for a hook that runs from a checkout).

Offline: the wheel's dependencies are not fetched; the new virtualenv sees this test
run's installed packages through a ``.pth`` file written after the wheel is installed,
so ``console`` itself comes from the wheel.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from support.daemon import short_tmp
from support.paths import REPO

ROOT = REPO
SHIPPED = ("console", "themes", "keymaps", "pyproject.toml", "README.md")

pytestmark = pytest.mark.wheel


def run(*argv: str | Path, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"{argv}: {done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed():
    """A virtualenv with agent-console installed from a freshly built wheel."""
    base = short_tmp("wheel-")
    source = base / "src"
    source.mkdir()
    for name in SHIPPED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = base / "dist"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", dist, source)
    (wheel,) = dist.glob("agent_console-*.whl")
    venv = base / "x"
    run(sys.executable, "-m", "venv", venv)
    run(venv / "bin" / "pip", "install", "--no-deps", "--no-index", wheel)
    purelib = run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    deps = Path(purelib.stdout.strip()) / "agent_console_test_deps.pth"
    deps.write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield venv
    run(venv / "bin" / "agent-console", "daemon", "stop", "--force", "--state-dir", base / "s", check=False)
    shutil.rmtree(base, ignore_errors=True)


def test_the_wheel_runs_from_its_own_virtualenv_with_its_data(installed):
    venv = installed
    version = run(venv / "bin" / "agent-console", "--version")
    assert version.stdout.startswith("agent-console ")
    where = run(venv / "bin" / "python", "-I", "-c", "import console; print(console.__file__)").stdout
    assert where.startswith(str(venv)), where  # the wheel's copy, not this checkout
    # The themes and keymaps it ships are where the console looks for them.
    refused = run(
        venv / "bin" / "agent-console", "--theme", "nope", "--state-dir", venv.parent / "s", check=False
    )
    assert refused.returncode == 2
    assert "available: dark, high-contrast, light, solarized" in refused.stderr, refused.stderr
    refused = run(
        venv / "bin" / "agent-console", "--keymap", "nope", "--state-dir", venv.parent / "s", check=False
    )
    assert "available: default, emacs, vim" in refused.stderr, refused.stderr
    tcss = run(
        venv / "bin" / "python",
        "-I",
        "-c",
        "import console.tui, pathlib; print(pathlib.Path(console.tui.__file__).parent)",
    ).stdout.strip()
    assert (Path(tcss) / "console.tcss").is_file()


def test_hook_install_names_the_installed_interpreter_and_doctor_is_clean(installed):
    venv = installed
    state = venv.parent / "s"
    run(venv / "bin" / "agent-console", "daemon", "start", "--state-dir", state)
    settings = venv.parent / "settings.json"
    run(
        venv / "bin" / "agent-console",
        "hook",
        "install",
        "claude-code",
        "--settings",
        settings,
        "--state-dir",
        state,
    )
    hooks = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    command = hooks[0]["hooks"][0]["command"]
    assert command.startswith(f"{venv}/bin/python"), command  # the installed copy's interpreter
    assert " -I -m console hook claude-code " in command
    doctor = run(
        venv / "bin" / "agent-console",
        "hook",
        "doctor",
        "--settings",
        settings,
        "--state-dir",
        state,
        check=False,
    )
    assert doctor.returncode == 0, doctor.stdout
    assert "source checkout" not in doctor.stdout
    assert "no fail-open risk found" in doctor.stdout


def test_doctor_warns_when_the_hook_runs_from_a_checkout(tmp_path):
    """This test run's own agent-console is the checkout (an editable install)."""
    settings = tmp_path / "settings.json"
    state = short_tmp() / "s"
    run(
        sys.executable,
        "-m",
        "console",
        "hook",
        "install",
        "claude-code",
        "--settings",
        settings,
        "--state-dir",
        state,
    )
    doctor = run(
        sys.executable,
        "-m",
        "console",
        "hook",
        "doctor",
        "--settings",
        settings,
        "--state-dir",
        state,
        check=False,
    )
    assert "WARN" in doctor.stdout and f"source checkout ({ROOT})" in doctor.stdout, doctor.stdout
    assert "pipx install" in doctor.stdout
