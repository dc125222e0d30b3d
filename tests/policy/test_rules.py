"""Rules (an approval broader than one fingerprint) and bulk decisions.

Users of the peers asked for Claude Code's `Bash(npm test:*)` and Codex's prefix rules:
here a rule is the words a command starts with, for one agent in one workspace, within
the sandbox ceiling only, listed, expiring and revocable like a grant; and several
queued requests within the ceiling can be approved or denied together (CLI and console).
"""

from __future__ import annotations

import pytest
from support.daemon import in_background, operation, trusted_dir, wait_for, workspace
from support.fakehost import FakeHost
from support.tui import Clock, make_app, screen_text, until

from console.contract.operation import parse
from console.policy import Grant, GrantScope, policy_from_toml
from console.policy.evaluate import evaluate
from console.policy.rules import Rule, command_words, covers, matching_rule, refusal, suggested

DAEMON_POLICY = 'approval = "untrusted"\napproval_timeout_s = 120\n'


def op_of(argv: list[str], **fields):
    kind = "shell" if argv[0] in ("bash", "sh") else "process"
    return parse(
        {
            "kind": kind,
            "executable": argv[0],
            "args": argv[1:],
            "workspace_root": "/home/dev/project",
            **fields,
        },
        FakeHost(),
    )


def test_rule_words_are_plain_commands_only():
    assert command_words(op_of(["git", "status", "-s"])) == ("git", "status", "-s")
    assert command_words(op_of(["bash", "-c", "npm test -- --watch"])) == ("npm", "test", "--", "--watch")
    for script in (
        "npm test; curl x | sh",
        "npm test $(id)",
        "npm test > out",
        "npm 'test'",
        "npm test\nrm x",
    ):
        assert command_words(op_of(["bash", "-c", script])) is None, script
    assert suggested(["/usr/bin/git", "status", "-s"]) == "git status"
    assert suggested(["/usr/bin/git", "-C", ".", "status"]) == "git"  # an option's value is no subcommand
    assert suggested(["/usr/bin/bash", "-c", "python3 -m pytest"]) == ""  # an interpreter: no rule


def test_what_a_rule_may_not_cover():
    plain = op_of(["git", "status"])
    assert refusal(plain, [], ("git", "status")) is None
    assert "within the sandbox ceiling" in (refusal(plain, ["network"], ("git", "status")) or "")
    assert "starts with" in (refusal(plain, [], ("git", "push")) or "")
    assert "runs whatever follows" in (refusal(op_of(["env", "X=1", "ls"]), [], ("env",)) or "")
    assert "plain commands" in (refusal(op_of(["bash", "-c", "git status && rm -rf x"]), [], ("git",)) or "")
    rule = Rule(("git", "status"), "/home/dev/project")
    assert covers(rule, op_of(["git", "status", "-s"]))
    assert not covers(rule, op_of(["git", "statusx"]))  # words, never a substring
    assert not covers(rule, op_of(["git", "status"], workspace_root="/home/dev/other"))


def test_a_rule_applies_to_its_agent_only_within_the_ceiling_until_it_ends():
    config = policy_from_toml('approval = "untrusted"\nworkspaces = ["/home/dev"]\n')
    rule = Grant(
        id="g-1",
        fingerprint=Rule(("make", "test"), "/home/dev/project").key(),
        scope=GrantScope.RULE,
        session_id="a-1",
        expires_at=2000.0,
    )
    mine = op_of(["make", "test", "-j4"], session_id="a-1")
    assert evaluate(mine, config, [rule], 1000.0).reason == "rule"
    assert evaluate(mine, config, [rule], 2000.0).verdict.value == "review"  # expired
    other = op_of(["make", "test"], session_id="a-2")
    assert evaluate(other, config, [rule], 1000.0).verdict.value == "review"
    networked = op_of(["make", "test"], session_id="a-1", network="any")
    assert evaluate(networked, config, [rule], 1000.0).verdict.value == "review"  # never an escalation
    assert matching_rule([rule], mine, 1000.0) is rule


def pending(d):
    with d.operator() as op:
        return op.call("pending.list")["pending"]


def submit(d, ws, args, **fields):
    def go():
        with d.agent() as agent:
            agent.call("hello", {"agent_pid": __import__("os").getpid()})
            return agent.submit(operation(ws, args=args, **fields))

    return in_background(go, "the agent")


def waiting(d, tag):
    return wait_for(lambda: next((p["request_id"] for p in pending(d) if tag in p["command"]), None), 30)


def test_a_rule_from_the_cli_allows_the_commands_it_covers_and_is_revocable(daemon):
    ws = workspace()
    first = submit(daemon, ws, ["hello", "one"])
    rid = waiting(daemon, "hello one")
    r = daemon.cli("approve", rid, "--rule", "true hello", "--expires", "8h")
    assert r.returncode == 0, r.stderr
    assert first()["verdict"] == "allow"
    # The same agent's next command that starts with the words: allowed by the rule.
    answer = submit(daemon, ws, ["hello", "two", "--flag"])()
    assert (answer["verdict"], answer["reason"]) == ("allow", "rule")
    # Words, not characters; another workspace; an escalation: the rule does not cover them.
    other_ws = workspace(trusted_dir("other-"))
    for args, where, extra in (
        (["hellox"], ws, {}),
        (["hello"], other_ws, {}),
        (["hello"], ws, {"network": "any"}),
    ):
        late = submit(daemon, where, args, **extra)
        rid = waiting(daemon, " ".join(["true", *args]))
        daemon.cli("deny", rid)
        assert late()["verdict"] == "deny", args
    listed = daemon.cli("grants")
    assert "rule" in listed.stdout and "true hello" in listed.stdout, listed.stdout
    gid = next(line.split()[0] for line in listed.stdout.splitlines() if "true hello" in line)
    assert daemon.cli("grants", "revoke", gid).returncode == 0
    again = submit(daemon, ws, ["hello", "three"])
    rid = waiting(daemon, "hello three")  # no rule any more: it waits for the operator
    daemon.cli("deny", rid)
    assert again()["verdict"] == "deny"
    history = daemon.cli("history", "--search", "hello two")
    assert " rule " in history.stdout, history.stdout


def test_a_rule_is_refused_beyond_the_ceiling_and_the_request_stays(daemon):
    ws = workspace()
    asked = submit(daemon, ws, ["net-rule"], network="any")
    rid = waiting(daemon, "net-rule")
    r = daemon.cli("approve", rid, "--rule", "true net-rule")
    assert r.returncode == 2 and "within the sandbox ceiling" in r.stderr, r.stderr
    assert any(p["request_id"] == rid for p in pending(daemon))
    daemon.cli("deny", rid)
    assert asked()["verdict"] == "deny"


def test_bulk_approve_from_the_cli_keeps_to_the_ceiling(daemon):
    ws = workspace()
    calls = [submit(daemon, ws, [f"bulk-{i}"]) for i in range(2)]
    net = submit(daemon, ws, ["bulk-net"], network="any")
    ids = [waiting(daemon, f"bulk-{i}") for i in range(2)] + [waiting(daemon, "bulk-net")]
    r = daemon.cli("approve", *ids)
    assert r.returncode == 1 and "approve it on its own" in r.stderr, r.stderr
    assert [c()["verdict"] for c in calls] == ["allow", "allow"]
    assert any(p["request_id"] == ids[2] for p in pending(daemon))
    assert daemon.cli("deny", ids[2]).returncode == 0
    assert net()["verdict"] == "deny"


async def test_marked_rows_are_approved_together_and_a_rule_from_the_console(daemon):
    ws = workspace()
    calls = [submit(daemon, ws, [f"mark-{i}"]) for i in range(2)]
    for i in range(2):
        waiting(daemon, f"mark-{i}")
    clock = Clock()
    app = make_app(daemon, clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.pending.total >= 2)
        await pilot.press("space", "space")
        await until(pilot, lambda: "2 marked" in screen_text(app))
        assert screen_text(app).count("●") >= 2
        await pilot.press("a")
        await until(pilot, lambda: "Approve 2 requests once?" in screen_text(app))
        await pilot.press("y")
        assert [c()["verdict"] for c in calls] == ["allow", "allow"]

        ruled = submit(daemon, ws, ["ruled", "x"])
        await until(pilot, lambda: any("ruled" in e.item.command for e in app.pending))
        rid = next(e.request_id for e in app.pending if "ruled" in e.item.command)
        app.views["queue"].select_request(rid)
        await until(pilot, lambda: app.views["queue"].detail.request_id == rid)
        await pilot.pause()
        clock.advance(5)
        await pilot.press("R")
        await until(pilot, lambda: "Approve as a rule" in screen_text(app))
        await pilot.press("enter")  # the words offered: "true ruled"
        assert ruled()["verdict"] == "allow"
        answer = submit(daemon, ws, ["ruled", "y"])()
        assert answer["reason"] == "rule"
        # The history's entry says which rule allowed it.
        await pilot.press("2")
        await until(pilot, lambda: "ruled y" in screen_text(app))
        await pilot.press("home", "enter")
        await until(pilot, lambda: "allowed by rule g-" in screen_text(app))


@pytest.fixture(autouse=True)
def _no_leftovers(daemon):
    yield
    for p in pending(daemon):
        daemon.cli("deny", p["request_id"])
