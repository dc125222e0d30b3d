"""Asking bash how it reads a script must run nothing of the script.

console/tui/model/bash_parse.py hands the script to bash as an exported function body and
prints it back with ``declare -f``. Each test writes a script that would create a
marker file (with a redirection, so it needs no PATH) if any of it ran, at import, at
definition or at print time.
"""

from __future__ import annotations

import pytest

from console.tui.model.bash_parse import bash_parse

TRIES = {
    "closes-the-body-early": "}}; : > {mark}; g() {{ :",
    "closes-the-body-on-a-new-line": ":\n}}\n: > {mark}\nf() {{\n:",
    "command-substitution": "echo $(: > {mark})",
    "backticks": "echo `: > {mark}`",
    "process-substitution": "cat <(: > {mark})",
    "arithmetic-subscript": "echo $(( a[$(: > {mark})] ))",
    "here-document": "cat <<EOF\n$(: > {mark})\nEOF",
    "parameter-default": "echo ${{x:=$(: > {mark})}}",
    "alias-then-use": "alias e=': > {mark}'\ne",
    "trap": "trap ': > {mark}' EXIT",
    "nested-function": "g() {{ : > {mark}; }}; g",
    "unterminated-quote": "echo '\n}}\n: > {mark}\n",
    "shellshock-trailer": "}}; : > {mark}",
}


@pytest.mark.parametrize("name", sorted(TRIES))
def test_bash_reading_a_script_runs_none_of_it(name, tmp_path):
    mark = tmp_path / "MARK"
    bash_parse.cache_clear()
    bash_parse(TRIES[name].format(mark=mark))
    assert not mark.exists()


def test_the_callers_environment_does_not_reach_bash(tmp_path, monkeypatch):
    mark = tmp_path / "MARK"
    rc = tmp_path / "rc"
    rc.write_text(f": > {mark}\n")
    for name in ("BASH_ENV", "ENV"):
        monkeypatch.setenv(name, str(rc))
    monkeypatch.setenv("SHELLOPTS", "xtrace")
    monkeypatch.setenv("PS4", f"$(: > {mark})")
    bash_parse.cache_clear()
    assert bash_parse("true; false") is not None
    assert not mark.exists()


def test_a_script_closing_the_body_early_is_refused():
    bash_parse.cache_clear()
    result = bash_parse("}; touch x; g() { :")
    assert result is not None and result.body is None


def test_bash_prints_the_commands_it_sees():
    bash_parse.cache_clear()
    result = bash_parse("echo $'\\'' ; touch x #'")
    assert result is not None and result.body is not None
    assert "touch x" in result.body.splitlines()[-1]
    assert "#" not in result.body  # bash dropped the comment
