"""A command line loads the module of the command it names, not the whole console.

Every allowed tool call of every agent runs `agent-console exec --ticket`, and a command
named first builds only its own module's parser. These tests keep that table in step with
the whole parser, check a command parses the same either way, and check that the hot path
stays off the store, the console's model and asyncio.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
from support.daemon import short_tmp

from console import cli

# Options the bare `agent-console` (the console) takes before any command; a command's own
# parser has no use for them.
CONSOLE_ONLY = {"config", "theme", "keymap"}


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no commands")


def test_the_command_table_names_each_command_by_the_module_that_registers_it():
    assert set(cli.COMMANDS) == set(_commands(cli.build_parser()))
    for module in cli.command_modules():
        alone = argparse.ArgumentParser()
        module.register(alone.add_subparsers())
        for name in _commands(alone):
            assert cli.COMMANDS[name] == module.__name__.rsplit(".", 1)[1], name


@pytest.mark.parametrize(
    "argv",
    [
        ["exec", "--ticket", "r-abc-1", "--state-dir", "/x/s"],
        ["exec", "--", "git", "status"],
        ["pending", "--json", "--state-dir", "/x/s"],
        ["approve", "r-abc-1", "--scope", "session"],
        ["history", "--kind", "decision", "--verdict", "deny"],
        ["sessions", "send", "s-1", "ls"],
        ["hook", "claude-code", "--state-dir", "/x/s"],
        ["run", "--", "claude", "--version"],
        ["workspaces", "add", "/srv/app/project"],
        ["daemon", "status"],
        ["console", "--theme", "light"],
    ],
)
def test_a_command_parses_the_same_alone_as_in_the_whole_parser(argv):
    whole = vars(cli.build_parser().parse_args(argv))
    alone = vars(cli._parser_for(argv).parse_args(argv))
    assert alone == {k: v for k, v in whole.items() if k in alone}
    assert set(whole) - set(alone) <= CONSOLE_ONLY


def test_version_and_help_answer_as_the_whole_parser_does():
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "console", *args], capture_output=True, text=True, timeout=60
        )

    assert run("--version").stdout.strip() == f"agent-console {cli.__version__}"
    exec_help = run("exec", "--help")
    assert exec_help.returncode == 0 and exec_help.stdout.startswith("usage: agent-console exec")
    unknown = run("no-such-command")
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr and "'exec'" in unknown.stderr


def _imported(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    r = subprocess.run(
        [sys.executable, "-I", "-X", "importtime", *argv], capture_output=True, text=True, timeout=60
    )
    names = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    return r, names


def test_exec_with_a_ticket_loads_neither_the_store_nor_the_console_nor_asyncio():
    state = short_tmp() / "s"
    r, names = _imported(["-m", "console", "exec", "--ticket", "not-a-ticket", "--state-dir", str(state)])
    assert "not a ticket id" in r.stderr, r.stderr
    heavy = {
        "asyncio",
        "sqlite3",
        "textual",
        "console.store",
        "console.tui",
        "console.daemon",
        "console.policy.config",
        "console.policy.evaluate",
        "console.contract.operation",
    }
    assert not heavy & names, heavy & names


def test_importing_the_cli_loads_no_command():
    _, names = _imported(["-c", "import console.cli"])
    assert {n for n in names if n.startswith("console.")} == {"console.cli"}


def test_run_starts_without_the_full_client_or_the_protocols_types():
    """`agent-console run` runs before the agent does: its start-up is the agent's."""
    state = short_tmp() / "s"
    r, names = _imported(["-m", "console", "run", "--state-dir", str(state), "--", "true"])
    assert r.returncode == 3 and "no daemon is running" in r.stderr, r.stderr
    heavy = {"asyncio", "msgspec", "console.client", "console.protocol.jsonrpc", "console.remote"}
    assert not heavy & names, heavy & names
