"""`agent-console fingerprint` and `evaluate`, run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.paths import REPO

EXAMPLES = REPO / "examples"


def run(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "console", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def ws(tmp_path):
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    return tmp_path


def test_fingerprint_prints_64_hex(ws):
    r = run("fingerprint", "--workspace", str(ws), str(EXAMPLES / "git-status.json"))
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip()) == 64
    assert set(r.stdout.strip()) <= set("0123456789abcdef")


def test_fingerprint_canonical_and_stdin(ws):
    op = json.dumps({"kind": "git", "executable": "git", "args": ["log"], "workspace_root": str(ws)})
    canonical = run("fingerprint", "--canonical", "-", stdin=op)
    assert canonical.returncode == 0
    form = json.loads(canonical.stdout)
    assert form["args"] == ["log"] and form["version"] == 1
    import hashlib

    assert (
        run("fingerprint", "-", stdin=op).stdout.strip()
        == hashlib.sha256(canonical.stdout.strip().encode()).hexdigest()
    )


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.json")))
def test_every_example_evaluates(example, ws):
    r = run("evaluate", "--workspace", str(ws), str(EXAMPLES / example))
    assert r.returncode == 0, r.stderr
    decision = json.loads(r.stdout)
    assert decision["verdict"] in ("allow", "deny", "review")
    for key in ("reason", "fingerprint", "requested", "ceiling", "escalations"):
        assert key in decision


def test_evaluate_with_a_policy_file(ws, tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text('approval = "never"\n')
    r = run(
        "evaluate",
        "--policy",
        str(policy),
        "--workspace",
        str(ws),
        str(EXAMPLES / "pip-install-network.json"),
    )
    assert json.loads(r.stdout)["verdict"] == "deny"


def test_invalid_policy_is_one_line_exit_2(ws, tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text('approval = "sometimes"\n')
    r = run("evaluate", "--policy", str(policy), "--workspace", str(ws), str(EXAMPLES / "git-status.json"))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1
    assert "approval" in r.stderr and "on-request" in r.stderr


def test_invalid_operation_is_one_line_exit_2_and_json_problem(ws):
    bad = '{"kind":"git","executable":"ls","executable":"rm","workspace_root":"' + str(ws) + '"}'
    r = run("evaluate", "-", stdin=bad)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "duplicate_key" in r.stderr
    r = run("fingerprint", "--json", "-", stdin=bad)
    assert r.returncode == 2
    assert json.loads(r.stdout) == {
        "field": "",
        "reason": "duplicate_key",
        "retryable": False,
        "hint": "an object has the same key twice",
    }


def test_missing_file(ws):
    r = run("fingerprint", str(ws / "nope.json"))
    assert r.returncode == 2 and "cannot read" in r.stderr


@pytest.mark.parametrize("command", [[], ["fingerprint"], ["evaluate"]])
def test_help_is_complete(command):
    r = run(*command, "--help")
    assert r.returncode == 0
    assert "usage: agent-console" in r.stdout
    if command:
        assert "FILE|-" in r.stdout and "--workspace" in r.stdout
