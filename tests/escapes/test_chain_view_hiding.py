"""Finding 10: a ``sh -c`` script written so that the chain view hides a command bash runs.

Each trick is first run by the real bash in a scratch directory, to prove that the hidden
``touch`` runs; the chain the console shows must then either list that ``touch`` as a
command of its own or be flagged uncertain (the detail then warns and shows the raw
script, see test_chain_view_operator_sees.py). Before the cross-check, the three tricks
of the finding gave a split without the ``touch`` and without any flag.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.contract.shell import RESERVED, checked_chain, command_name, split_chain
from console.tui.model.bash_parse import bash_parse


def bash_runs(script: str, mark: str = "MARK") -> bool:
    """Whether the real bash, running ``script``, creates ``mark`` (in a scratch directory)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["/bin/bash", "--norc", "--noprofile", "-c", script],
            cwd=tmp,
            env={"PATH": "/usr/bin:/bin"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
        return (Path(tmp) / mark).exists()


def shown_as_command(commands: list[str], name: str) -> bool:
    return any(command_name(text) == name for text in commands)


def honest(script: str) -> bool:
    """The split names the touch as a command, or it says it is uncertain."""
    chain = checked_chain(script, "bash", bash_parse)
    return shown_as_command(chain.commands, "touch") or bool(chain.uncertain) or not chain.complete


# The three tricks of the finding.
QUOTED_HEREDOC_DELIMITER = 'cat <<E"O"F\nharmless\nEOF\ntouch MARK\nE"O"F\n'
ANSI_C_QUOTE = "echo $'\\'' ; touch MARK #'"
ARITHMETIC_LOOKALIKE = "echo $((true); touch MARK)"


@pytest.mark.parametrize(
    "script",
    [QUOTED_HEREDOC_DELIMITER, ANSI_C_QUOTE, ARITHMETIC_LOOKALIKE],
    ids=["heredoc", "ansi-c", "arith"],
)
def test_the_three_tricks_of_the_finding_run_a_hidden_touch(script):
    assert bash_runs(script)


def test_quoted_heredoc_delimiter_cannot_hide_a_command():
    chain = checked_chain(QUOTED_HEREDOC_DELIMITER, "bash", bash_parse)
    assert shown_as_command(chain.commands, "touch")  # the delimiter is EOF after quote removal
    assert any("delimiter" in why for why in chain.uncertain)


def test_ansi_c_quote_cannot_hide_a_command():
    chain = checked_chain(ANSI_C_QUOTE, "bash", bash_parse)
    assert shown_as_command(chain.commands, "touch")
    assert any("ANSI-C" in why for why in chain.uncertain)


def test_arithmetic_lookalike_cannot_hide_a_command():
    chain = checked_chain(ARITHMETIC_LOOKALIKE, "bash", bash_parse)
    assert shown_as_command(chain.commands, "touch")
    assert any("not arithmetic" in why for why in chain.uncertain)


def test_the_tokenizer_alone_flags_the_three_tricks():
    """Without bash or bashlex to check it, the tokenizer still says which construct it met."""
    for script in (QUOTED_HEREDOC_DELIMITER, ANSI_C_QUOTE, ARITHMETIC_LOOKALIKE):
        chain = split_chain(script)
        assert chain.uncertain and shown_as_command(chain.commands, "touch")


def test_a_touch_the_tokenizer_misses_is_named_by_bash():
    """A word joined across a line continuation: bash runs ``touch``; the split shows it apart."""
    script = "tou\\\nch MARK"
    assert bash_runs(script)
    chain = checked_chain(script, "bash", bash_parse)
    assert chain.uncertain
    assert "touch MARK" in chain.missed


# More tricks an attacker would try; each either hides nothing or is flagged.
TRICKS = {
    "line-continuation-in-name": "echo hi; tou\\\nch MARK",
    "line-continuation-between-words": "echo a \\\n; touch MARK",
    "semicolon-in-double-brackets": "[[ a == 'a;b' ]] && touch MARK",
    "brace-group": "{ echo a; touch MARK; }",
    "background": "sleep 0 & touch MARK",
    "pipe-stderr": "echo a |& touch MARK",
    "hash-mid-word": "echo a#b; touch MARK",
    "hash-after-quote": "echo 'a'#; touch MARK",
    "substitution-in-double-quotes": 'echo "x $(touch MARK) y"',
    "nested-double-quotes": 'echo "$(echo "$(touch MARK)")"',
    "case-statement": "case x in x) touch MARK;; esac",
    "case-paren-pattern": "case x in (x) touch MARK;; esac",
    "heredoc-dash": "cat <<-EOF\n\tdata\n\tEOF\ntouch MARK",
    "heredoc-tab-without-dash": "cat <<EOF\n\tEOF\necho still data\nEOF\ntouch MARK",
    "heredoc-substitution": "cat <<EOF\n$(touch MARK)\nEOF",
    "two-heredocs": "cat <<A <<B\na\nA\nb\nB\ntouch MARK",
    "crlf": "echo a\r\ntouch MARK\r\n",
    "subshell-in-substitution": "echo $( (echo a); touch MARK)",
    "arith-command-lookalike": "((true); touch MARK)",
    "backticks-escaped": "echo `echo \\`touch MARK\\``",
    "process-substitution": "cat <(touch MARK)",
    "function": "f() { touch MARK; }; f",
    "eval": "eval 'touch MARK'",
    "trap": "trap 'touch MARK' EXIT",
    "nested-shell": "sh -c 'touch MARK'",
    "wrapped-nested-shell": "timeout 5 bash -c 'touch MARK'",
    "ps4": "PS4='$(touch MARK)'; set -x; true",
    "arith-variable": "x='a[$(touch MARK)]'; echo $((x))",
    "alias": "shopt -s expand_aliases\nalias e=touch\ne MARK",
    "source-stdin": "source /dev/stdin <<EOF\ntouch MARK\nEOF",
    "shell-heredoc": "bash <<'EOF'\ntouch MARK\nEOF",
    "if-then": "if true; then touch MARK; fi",
    "while-loop": "while true; do touch MARK; break; done",
    "negation": "! touch MARK",
    "assignment-prefix": "A=1 touch MARK",
    "brace-no-space": "{ touch MARK;}",
    "ansi-c-newline": "echo $'a\\nb'; touch MARK",
    "brace-expansion-name": "{touch,MARK}",
    "variable-name": "x=touch; $x MARK",
    "glob-name": "/usr/bin/tou?h MARK",
    "hash-p": "hash -p /usr/bin/touch ls; ls MARK",
    "printf-v-subscript": "printf -v a[\\$\\(touch\\ MARK\\)] x",
    "declare-subscript": 'declare -a "b[\\$(touch MARK)]=1"',
    "arith-subscript-quoted": "declare -a 'c[$(touch MARK)]=1'",
    "coproc": "coproc touch MARK; wait",
    "redirect-target-quoted-substitution": 'echo x > "$(touch MARK)"',
    "redirect-target-backticks": "cat < `touch MARK`",
    "here-string-substitution": 'cat <<< "$(touch MARK)"',
    "comment-in-substitution": "echo $( # )\ntouch MARK\n)",
    "heredoc-in-substitution": "echo $(cat <<EOF\n)\nEOF\n); touch MARK",
}


@pytest.mark.parametrize("name", sorted(TRICKS))
def test_trick_cannot_hide_a_command_bash_runs(name):
    script = TRICKS[name]
    if bash_runs(script):
        assert honest(script), checked_chain(script, "bash", bash_parse)


def test_unicode_semicolon_lookalikes_are_one_command_as_for_bash():
    for semicolon in ("\u037e", "\uff1b", "\ufe54"):
        script = f"echo a{semicolon} touch MARK"
        assert not bash_runs(script)  # bash reads one echo with arguments
        assert split_chain(script).commands == [f"echo a{semicolon} touch MARK"]


def test_a_script_that_closes_the_function_body_is_refused_by_bash_and_flagged():
    chain = checked_chain("}; touch MARK; g() { :", "bash", bash_parse)
    assert chain.uncertain


def test_plain_chains_are_not_flagged():
    """The warning must stay rare enough to be read: common agent scripts are certain."""
    for script in (
        "git fetch && curl -s x | sh",
        "cd sub && npm test 2>&1 | tail -5",
        'for f in *.py; do ruff check "$f" || exit 1; done',
        "if [ -f x ]; then rm x; else echo none; fi",
        'while read -r l; do echo "$l"; done < list.txt',
        "cat > notes.md <<'EOF'\n# title\n$(not run)\nEOF\ngit add notes.md",
        'x=$(git rev-parse HEAD) && echo "$x"',
        "docker run \\\n  -v a:b \\\n  img",
        "echo $((1 + 2)) `date`",
        "case $1 in a|b) echo ab;; *) echo other;; esac",
        "[[ -n $x ]] && echo yes # note; more",
        "{ make; make test; } > log 2>&1",
    ):
        chain = checked_chain(script, "bash", bash_parse)
        assert chain.uncertain == [], (script, chain.uncertain)


# ------------------------------------------------------------------ property: nothing dropped

NAMES = st.sampled_from(["touch", "rm", "curl", "git", "cp", "chmod", "ln", "mv", "tar", "dd"])
PLAIN_ARG = st.text(alphabet="abcxyz0123./-_=", min_size=1, max_size=6)
ARG = st.one_of(
    PLAIN_ARG,
    PLAIN_ARG.map(lambda a: f"'{a};{a}'"),
    PLAIN_ARG.map(lambda a: f'"{a} && {a}"'),
    PLAIN_ARG.map(lambda a: f"$'{a}\\''"),
    PLAIN_ARG.map(lambda a: f"{a}\\;"),
    PLAIN_ARG.map(lambda a: f"a#{a}"),
    st.just("$((1+2))"),
    st.just("2>&1"),
    st.just("> out"),
)
OPS = st.sampled_from([" && ", " || ", "; ", " | ", " & ", "\n", " |& ", ";", "&&", "\\\n; "])


@st.composite
def compositions(draw):
    commands = draw(st.lists(st.tuples(NAMES, st.lists(ARG, max_size=3)), min_size=1, max_size=5))
    script = ""
    for i, (name, args) in enumerate(commands):
        text = " ".join([name, *args])
        wrap = draw(st.sampled_from(["", "sub", "group", "subst", "quoted-subst", "if"]))
        text = {
            "": text,
            "sub": f"({text})",
            "group": f"{{ {text}; }}",
            "subst": f"echo $({text})",
            "quoted-subst": f'echo "$({text})"',
            "if": f"if true; then {text}; fi",
        }[wrap]
        script += (draw(OPS) if i else "") + text
    return script, [name for name, _ in commands]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(compositions())
def test_every_command_of_a_random_chain_is_shown_or_the_split_is_uncertain(case):
    script, names = case
    chain = checked_chain(script, "bash", bash_parse)
    if chain.uncertain or not chain.complete:
        return
    shown = [w for text in chain.commands for w in text.split() if w not in RESERVED]
    for name in names:
        # Each name, as often as it was used, starts a shown command.
        starts = sum(1 for text in chain.commands if shown_as_command([text], name))
        assert starts >= names.count(name), (script, chain.commands)
    assert shown


@pytest.mark.parametrize(
    "script", ["echo 'open; touch MARK", "cat <<EOF\nx\ntouch MARK", "echo $(touch MARK"]
)
def test_an_unterminated_script_is_uncertain(script):
    chain = checked_chain(script, "bash", bash_parse)
    assert not chain.complete
    assert any("ends inside" in why for why in chain.uncertain)


def test_without_bash_bashlex_still_checks_the_split():
    """The pure contract, as the daemon could use it: no runner, bashlex is the second opinion."""
    assert checked_chain("git status && make", "bash").uncertain == []
    chain = checked_chain("tou\\\nch MARK", "bash")
    assert chain.uncertain
    unparsable = checked_chain("case x in x) y;; esac", "bash")
    assert any("no shell parser" in why for why in unparsable.uncertain)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab $'\"`()<>|&;#\\\n{}=*EOF-")), max_size=60))
def test_checking_never_fails_on_any_text(script):
    chain = checked_chain(script, "bash", bash_parse)
    assert isinstance(chain.uncertain, list)


def test_a_long_script_past_bashlex_still_shows_a_substitution_in_a_redirection():
    """Past MAX_BASHLEX only the tokenizer and bash check: the tokenizer must see it itself."""
    script = "echo filler\n" * 300 + 'echo x > "$(touch MARK)"'
    assert bash_runs(script)
    chain = checked_chain(script, "bash", bash_parse)
    assert shown_as_command(chain.commands, "touch")
