"""Each tool's request in its own words, and look-alike letters flagged like escapes.

Claude Code's Write/Edit reach the daemon as `true PATH sha256:D` (the write is Claude
Code's, the digest binds the content): the queue, the detail, the history and the CLI
showed `/usr/bin/true /w/.env sha256:…`. Now they say `Write .env (+2 −1)`; an MCP tool
says `server.tool(args)`. A command word with a Cyrillic letter (`ѕudo`) or made only of
look-alikes showed as plain letters; now they are written as their code points, and the
detail names them.
"""

from __future__ import annotations

import pytest
from support.daemon import in_background, operation, wait_for, workspace
from support.hook import hook_cli, hook_input
from support.tui import Clock, make_app, screen_text, until

from console.contract.inert import Finding, command_findings, flag_lookalikes, lookalike_notes
from console.contract.tool_words import diff_counts, mcp_words, row_words, tool_words

DAEMON_POLICY = "approval_timeout_s = 120\n"


def test_a_write_in_its_own_words():
    diff = "--- a/w/.env\n+++ b/w/.env\n@@ -1,2 +1,3 @@\n A=1\n-B=2\n+B=3\n+C=4\n"
    assert diff_counts(diff) == (2, 1)
    argv = ["/usr/bin/true", "/w/.env", "sha256:" + "0" * 64]
    assert tool_words("claude-code:Write", argv, workspace_root="/w", diff=diff) == "Write .env (+2 \u22121)"
    assert tool_words("claude-code:Edit", argv, workspace_root="/elsewhere") == "Edit /w/.env"
    assert tool_words("claude-code:Write", argv, workspace_root="/w", diff="+++ b\n+x\n", new_file=True) == (
        "Write .env (new, +1)"
    )
    assert tool_words("claude-code:NotebookEdit", argv, workspace_root="/w") == "NotebookEdit .env"
    # Not the hook's shape: no words, the command line stands.
    assert tool_words("claude-code:Write", ["/usr/bin/rm", "/w/.env", "sha256:x"]) is None
    assert tool_words("claude-code:Bash", ["/usr/bin/bash", "-c", "ls"]) is None
    assert (
        row_words({"tool": "claude-code:Write", "command": "/usr/bin/true /w/.env sha256:ab"})
        == "Write /w/.env"
    )


def test_an_mcp_tool_in_its_own_words():
    assert (
        mcp_words("claude-code:mcp__github__create_issue", stdin=b'{"repo": "a/b", "title": "x"}')
        == 'github.create_issue(repo="a/b", title="x")'
    )
    assert mcp_words("claude-code:mcp__db__query", justification='run it\n{"sql": "select 1"}') == (
        'db.query(sql="select 1")'
    )
    assert mcp_words("claude-code:mcp__db__query") == "db.query(\u2026)"
    assert mcp_words("claude-code:Bash") is None


def test_look_alike_letters_in_commands_are_flagged():
    assert Finding.MIXED_SCRIPT in command_findings("ѕudo rm -rf /")
    assert Finding.LOOKALIKE in command_findings("rm ѕ")  # a word made only of a look-alike
    assert flag_lookalikes("ѕudo rm -rf /") == "\\u0455udo rm -rf /"
    assert lookalike_notes("ѕudo") == ["ѕ is U+0455 CYRILLIC SMALL LETTER DZE"]
    assert flag_lookalikes("echo привет") == "echo привет"  # a word of another script is not a trick


@pytest.fixture
def env_file():
    ws = workspace()
    (ws / ".env").write_text("A=1\nB=2\n")
    return ws


def write_env(daemon, ws):
    """Claude Code's hook asking to write .env (protected: it waits for the operator)."""
    payload = hook_input(ws, "Write", {"file_path": str(ws / ".env"), "content": "A=1\nB=3\nC=4\n"})
    return in_background(lambda: hook_cli(daemon, payload, timeout="60"), "the hook")


def pending(daemon):
    with daemon.operator() as op:
        return op.call("pending.list")["pending"]


async def test_a_claude_code_write_reads_as_write_in_the_queue_detail_and_history(daemon, env_file):
    answer = write_env(daemon, env_file)
    wait_for(lambda: any(p["operation"]["tool"] == "claude-code:Write" for p in pending(daemon)), 30)
    app = make_app(daemon, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "Write .env (+2 \u22121)" in screen_text(app))
        text = screen_text(app)
        row = next(line for line in text.splitlines() if "Write .env (+2 \u22121)" in line)
        assert "sha256" not in row and "/usr/bin/true" not in row
        # The detail: the words on top, the argv the fingerprint binds below them.
        await until(pilot, lambda: "submitted as" in screen_text(app))
        detail = screen_text(app).split("approve / deny act on this request", 1)[1]
        assert "Write .env (+2 −1)" in detail and "Request" in detail

        r = daemon.cli("pending")
        assert "Write .env (+2 \u22121)" in r.stdout, r.stdout

        rid = next(p["request_id"] for p in pending(daemon) if p["operation"]["tool"] == "claude-code:Write")
        assert daemon.cli("deny", rid).returncode == 0
        assert answer()["permissionDecision"] == "deny"

        await pilot.press("2")
        await until(pilot, lambda: "Write .env" in screen_text(app))
        assert "Write .env" in daemon.cli("history", "--verdict", "deny").stdout


async def test_a_look_alike_command_is_flagged_in_the_row_the_detail_and_the_cli(daemon):
    ws = workspace()
    op = operation(ws, kind="shell", executable="bash", args=["-c", "ѕudo rm -rf build"], network="any")
    answer = in_background(lambda: _submit(daemon, op), "the agent")
    wait_for(lambda: any("build" in p["command"] for p in pending(daemon)), 30)
    app = make_app(daemon, Clock())
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "\\u0455udo" in screen_text(app))
        await until(pilot, lambda: "look-alike letters" in screen_text(app))
        text = screen_text(app)
        assert "look-alike letters, shown as their code points" in text
        assert "U+0455 CYRILLIC SMALL LETTER DZE" in text
        r = daemon.cli("pending")
        assert "\\u0455udo" in r.stdout and "U+0455" in r.stdout, r.stdout
        rid = next(p["request_id"] for p in pending(daemon) if "build" in p["command"])
        daemon.cli("deny", rid)
    assert answer()["verdict"] == "deny"


def _submit(daemon, op):
    with daemon.agent() as agent:
        return agent.submit(op)
