"""The console's command line: bad settings are one clear line before the terminal is taken over."""

from __future__ import annotations

import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess[str]:
    # Through the module's own parser, which is what `agent-console` registers.
    return subprocess.run(
        [sys.executable, "-m", "console", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_unknown_theme_is_refused_with_the_choices(tmp_path):
    state = tmp_path
    out = run("console", "--state-dir", str(state / "s"), "--theme", "neon", "--no-start")
    assert out.returncode == 2
    assert out.stderr.startswith(
        "agent-console: no theme 'neon'; available: dark, high-contrast, light, solarized"
    )


def test_missing_config_file_is_an_error():
    out = run("console", "--config", "/nonexistent/console.toml", "--no-start")
    assert out.returncode == 2
    assert "/nonexistent/console.toml: no such config file" in out.stderr


def test_a_bad_config_names_the_key(tmp_path):
    state = tmp_path
    (state / "s").mkdir(mode=0o700)
    (state / "s" / "config.toml").write_text('[notifications]\ndesktop = "growl"\n')
    out = run("console", "--state-dir", str(state / "s"), "--no-start")
    assert out.returncode == 2
    assert "config.toml: notifications.desktop: unknown value 'growl'" in out.stderr


def test_a_keymap_clash_is_refused(tmp_path):
    state = tmp_path
    (state / "s").mkdir(mode=0o700)
    (state / "s" / "config.toml").write_text('[keys]\ndeny = "a"\n')
    out = run("console", "--state-dir", str(state / "s"), "--no-start")
    assert out.returncode == 2
    assert "a is bound to both approve-once and deny" in out.stderr
