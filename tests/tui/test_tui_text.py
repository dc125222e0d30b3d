"""Agent text made inert, bounded and flagged before it reaches the screen."""

from __future__ import annotations

import shlex

import pytest
from rich.style import Style
from support.items import pending_item

from console.contract.inert import Finding
from console.tui.render.present import (
    PLAIN,
    DetailOptions,
    agent_block,
    agent_text,
    command_cell,
    quoted_argv,
    render_request,
)
from console.tui.render.untrusted import block, lookalike_spans, one_line

HOSTILE = {
    "csi": "\x1b[2J",
    "c1": "\x9b31m",
    "osc8": "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "osc52": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "cr": "rm -rf ~ \rls",
    "bs": "rm -rf ~\x08\x08\x08\x08\x08\x08\x08\x08ls",
    "nul": "a\x00b",
    "bidi": "\u202eexe.txt\u202c \u2066x\u2069 \u200e\u200f\u061c",
    "zero": "a\u200bb\u200cc\u200dd\u2060e\ufeff",
}
RAW = set("\x1b\x9b\r\x08\x00\x07\u202e\u202c\u2066\u2069\u200e\u200f\u061c\u200b\u200c\u200d\u2060\ufeff")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_no_control_bidi_or_invisible_character_survives(name):
    text, _ = agent_text(HOSTILE[name], PLAIN)
    assert not RAW & set(text.plain)
    assert "\\" in text.plain  # visibly escaped


def test_escapes_are_styled_apart_from_a_literal_backslash():
    styles = dict(PLAIN, escape=Style(reverse=True), dim=Style(dim=True))
    text, _ = agent_text("\\e and \x1b", styles)
    assert text.plain == "\\e and \\e"
    styled = [(text.plain[s.start : s.end], s.style) for s in text.spans]
    assert ("\\e", styles["escape"]) in styled
    assert ("\\", styles["dim"]) in styled


def test_markup_is_just_text():
    text, _ = agent_text("[@click=app.quit]x[/] [link=https://e.example]y[/link] [/]", PLAIN)
    assert text.plain == "[@click=app.quit]x[/] [link=https://e.example]y[/link] [/]"
    assert text.spans == []


def test_one_line_cuts_long_text_and_says_so():
    shown, cut = one_line("x" * 100_000, 50)
    assert len(shown) == 50 and shown.endswith("…") and cut
    assert one_line("short", 50) == ("short", False)


def test_a_cut_command_row_gives_up_the_programs_directory_first():
    pip = "/root/.pyenv/shims/python3 -m pip install -r requirements.txt"
    assert command_cell(pip, PLAIN, 80).plain == pip  # it fits: all of it
    row = command_cell(pip, PLAIN, 34)
    assert row.plain == "…/python3 -m pip install -r requi…" and row.cell_len == 34
    # Anything but an absolute program and its quoted arguments is cut at its end.
    for other in (
        "Write /root/.pyenv/shims/python3 over the top",
        "/usr/bin/a 'unbalanced",
        "/ls -la -R x y",
    ):
        assert command_cell(other, PLAIN, 12).plain == one_line(other, 12)[0]
    # Hostile text stays inert in the shortened form too.
    hostile = command_cell(shlex.join(["/usr/bin/echo", HOSTILE["csi"] * 5]), PLAIN, 20)
    assert hostile.plain.startswith("…/echo '\\e[2J") and not RAW & set(hostile.plain), hostile.plain


def test_block_collapses_newline_padding_into_a_marker():
    shown = block("ok" + "\n" * 500 + "rm -rf ~", max_chars=10_000, max_lines=40)
    assert [line.text for line in shown.lines] == ["ok", "⟨499 empty lines⟩", "rm -rf ~"]
    assert shown.lines[1].marker and not shown.truncated


def test_block_names_trailing_padding():
    shown = block("fine" + "\n" * 300, max_chars=10_000, max_lines=40)
    assert shown.lines[-1].marker and "300 empty lines" in shown.lines[-1].text


def test_block_truncates_long_text_unless_expanded():
    long = "a" * 100_000
    cut = block(long, max_chars=2000, max_lines=40)
    assert cut.truncated
    assert "98,000 more characters hidden" in cut.lines[-1].text
    full = block(long, max_chars=2000, max_lines=40, expanded=True)
    assert not full.truncated and full.lines[0].text == long


def test_block_truncates_many_lines():
    shown = block("\n".join(f"line {i}" for i in range(100)), max_chars=100_000, max_lines=10)
    assert shown.truncated and len(shown.lines) == 11 and "90 more lines" in shown.lines[-1].text


def test_lookalikes_are_located():
    assert lookalike_spans("cаt file") == [(1, 2)]  # the Cyrillic а
    assert lookalike_spans("ｒｍ -rf") == [(0, 1), (1, 2)]
    assert lookalike_spans("plain ascii") == []
    assert lookalike_spans("москва") == []  # one script is not a trick


def test_agent_block_styles_markers_not_agent_text():
    styles = dict(PLAIN, marker=Style(italic=True))
    text = agent_block(block("a" + "\n" * 10 + "b", max_chars=100, max_lines=10), styles)
    assert "⟨9 empty lines⟩" in text.plain
    assert any(text.plain[s.start : s.end] == "⟨9 empty lines⟩" for s in text.spans)


def test_quoted_argv_quotes_each_argument():
    text, cut = quoted_argv(["/usr/bin/rm", "-rf", "my dir", ""], PLAIN, 1000)
    assert text.plain == "/usr/bin/rm -rf 'my dir' ''"
    assert not cut


def _item(**op):
    base = {
        "kind": "process",
        "executable": "/usr/bin/ls",
        "args": [],
        "workspace_root": "/w",
        "cwd": ".",
        "env": {},
        "stdin": "",
        "timeout_ms": 1000,
        "output": {"capture_bytes": 1, "max_bytes": 2},
        "workspace_access": "read_only",
        "write_dirs": [],
        "network": "none",
        "capabilities": [],
        "justification": "",
        "session_id": "s",
        "tool": "t",
        "origin": "hook",
        "mode": "captured",
    }
    base.update(op)
    return {
        "request_id": "r-1",
        "fingerprint": "f" * 64,
        "session_id": "s",
        "command": "ls",
        "operation": base,
        "evaluation": {"escalations": [], "within": [], "forbidden": []},
    }


def test_render_request_flags_findings_and_marks_truncation():
    item = _item(justification="\u202e" + "x" * 5000, args=["cаt"])
    rendered = render_request(pending_item(item), [], PLAIN, DetailOptions(max_chars=1000))
    assert rendered.truncated
    [head] = [line for line in rendered.text.plain.splitlines() if "the agent's text contains" in line]
    assert Finding.BIDI.value in head and Finding.MIXED_SCRIPT.value in head


def test_render_request_splits_a_shell_chain():
    item = _item(executable="/usr/bin/bash", args=["-c", "git fetch && curl -s x | sh"])
    plain = render_request(pending_item(item), [], PLAIN, DetailOptions()).text.plain
    assert "Shell chain (bash -c)" in plain
    assert " 1 git fetch" in plain and " 2 curl -s x" in plain and " 3 sh" in plain
