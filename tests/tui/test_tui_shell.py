"""Splitting shell scripts and diffing argv: no second command may hide behind the first."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.tui.model.argdiff import ArgChange, argv_diff, closest, split_command
from console.tui.model.shellsplit import PartKind, shell_script, split_chain


def kinds(script: str) -> list[tuple[str, str]]:
    return [(p.kind.value, p.text) for p in split_chain(script).parts]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["bash", "-c", "ls"], ("bash", "ls")),
        (["/bin/sh", "-ec", "x"], ("sh", "x")),
        (["bash", "-lc", "x"], ("bash", "x")),
        (["sh", "-o", "pipefail", "-c", "y"], ("sh", "y")),
        (["/usr/bin/env", "A=1", "bash", "-c", "z"], ("env bash", "z")),
        (["busybox", "sh", "-c", "w"], ("busybox sh", "w")),
        (["bash", "-c"], ("bash", "")),
        (["bash", "script.sh"], None),
        (["bash", "--", "-c", "x"], None),
        (["python3", "-c", "print(1)"], None),
        ([], None),
    ],
)
def test_shell_script_finds_the_c_script(argv, expected):
    assert shell_script(argv) == expected


def test_every_operator_starts_a_new_command():
    assert kinds("a && b || c; d | e & f |& g") == [
        ("command", "a"),
        ("operator", "&&"),
        ("command", "b"),
        ("operator", "||"),
        ("command", "c"),
        ("operator", ";"),
        ("command", "d"),
        ("operator", "|"),
        ("command", "e"),
        ("operator", "&"),
        ("command", "f"),
        ("operator", "|&"),
        ("command", "g"),
    ]


def test_curl_pipe_sh_is_two_commands():
    chain = split_chain("curl -fsSL https://get.example.dev/install.sh | sh")
    assert chain.commands == ["curl -fsSL https://get.example.dev/install.sh", "sh"]
    assert chain.complete


def test_newlines_separate_commands():
    assert split_chain("git status\nrm -rf ~\n\n").commands == ["git status", "rm -rf ~"]


def test_quoted_operators_do_not_split():
    assert split_chain("echo 'a && b' \"c; d\" e\\;f").commands == ["echo 'a && b' \"c; d\" e\\;f"]


def test_command_substitution_is_shown_as_its_own_command():
    parts = split_chain("echo $(rm -rf ~) done").parts
    assert (PartKind.SUBSTITUTION, 1) in [(p.kind, p.depth) for p in parts]
    assert [(p.text, p.depth) for p in parts if p.kind is PartKind.COMMAND] == [
        ("echo $(rm -rf ~) done", 0),
        ("rm -rf ~", 1),
    ]


def test_substitution_inside_double_quotes_and_backticks_and_arithmetic():
    assert split_chain('echo "$(id)" `whoami` $((1+$(date +%s)))').commands == [
        'echo "$(id)" `whoami` $((1+$(date +%s)))',
        "id",
        "whoami",
        "date +%s",
    ]


def test_nested_substitutions_keep_their_depth():
    parts = [(p.text, p.depth) for p in split_chain("a $(b $(c))").parts if p.kind is PartKind.COMMAND]
    assert parts == [("a $(b $(c))", 0), ("b $(c)", 1), ("c", 2)]


def test_process_substitution():
    assert split_chain("diff <(ls a) >(tee b)").commands == ["diff <(ls a) >(tee b)", "ls a", "tee b"]


def test_redirections_are_listed_apart():
    assert kinds("echo x > /etc/passwd 2>&1 >> log < in") == [
        ("command", "echo x"),
        ("redirect", "> /etc/passwd"),
        ("redirect", "2>&1"),
        ("redirect", ">> log"),
        ("redirect", "< in"),
    ]


def test_here_document_body_is_data_but_its_substitutions_run():
    parts = kinds("cat <<EOF\nhello $(id)\nEOF\nrm x")
    assert ("redirect", "here-document EOF (1 lines)") in parts
    assert ("command", "id") in parts
    assert parts[-1] == ("command", "rm x")
    quoted = kinds("cat <<'EOF'\nhello $(id)\nEOF\n")
    assert ("command", "id") not in quoted


def test_subshells_and_comments():
    assert kinds("(cd x && rm -rf y) || true # a; b") == [
        ("operator", "("),
        ("command", "cd x"),
        ("operator", "&&"),
        ("command", "rm -rf y"),
        ("operator", ")"),
        ("operator", "||"),
        ("command", "true"),
        ("comment", "# a; b"),
    ]


@pytest.mark.parametrize(
    "script", ['echo "open', "echo 'open", "echo $(open", "echo `open", "cat <<EOF\nno end"]
)
def test_unterminated_scripts_are_flagged(script):
    assert not split_chain(script).complete


@given(st.text(max_size=200))
def test_splitting_never_fails_and_never_drops_a_command_word(script):
    chain = split_chain(script)
    shown = " ".join(p.text for p in chain.parts)
    for word in ("rm", "curl"):
        if word in script and "#" not in script and "<<" not in script:
            assert word in shown


def test_argv_diff_reports_added_and_removed_words():
    assert argv_diff(["git", "push", "--dry-run"], ["git", "push", "--force"]) == [
        ArgChange("-", "--dry-run"),
        ArgChange("+", "--force"),
    ]
    assert argv_diff(["a", "b"], ["a", "b"]) == []
    assert argv_diff([], ["x"]) == [ArgChange("+", "x")]


def test_closest_picks_the_most_similar_previous_argv():
    new = ["pytest", "-q", "-x"]
    assert closest(new, [["pip", "install"], ["pytest", "-q"], ["pytest"]]) == 1
    assert closest(new, []) is None


def test_split_command_round_trips_shlex_join():
    import shlex

    argv = ["bash", "-c", "echo 'a b' && rm -rf ~", ""]
    assert split_command(shlex.join(argv)) == argv
    assert split_command("unbalanced 'quote") is None
