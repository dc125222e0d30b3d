"""The operator and agent commands, headless, as over SSH."""

from __future__ import annotations

import json
import subprocess
import sys

from support.daemon import operation, wait_for, workspace


def request_in_background(daemon, op, *extra):
    proc = subprocess.Popen(
        [sys.executable, "-m", "console", "request", *extra, "-", "--state-dir", str(daemon.state_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdin.write(json.dumps(op))
    proc.stdin.close()
    return proc


def finish(proc):
    proc.wait(20)
    return proc.stdout.read(), proc.stderr.read()


def pending(daemon):
    r = daemon.cli("pending", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_request_allowed_exits_0(daemon):
    r = daemon.cli("request", "-", stdin=json.dumps(operation(workspace())))
    assert r.returncode == 0
    assert json.loads(r.stdout)["verdict"] == "allow"


def test_request_invalid_exits_2(daemon):
    r = daemon.cli("request", "-", stdin='{"kind":"git","kind":"shell"}')
    assert r.returncode == 2 and "duplicate_key" in r.stderr
    r = daemon.cli("request", "-", stdin=json.dumps(operation(workspace(), timeout_ms=-1)))
    assert r.returncode == 2 and "timeout_ms" in r.stderr


def test_request_unreachable_exits_3(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "console", "request", "-", "--state-dir", str(tmp_path / "none")],
        input=json.dumps({"kind": "git", "executable": "git", "workspace_root": "/tmp"}),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 3
    assert "nothing is allowed" in r.stderr


def test_request_timeout_exits_1_with_reason(daemon):
    r = daemon.cli(
        "request", "--timeout", "0.3", "-", stdin=json.dumps(operation(workspace(), network="any"))
    )
    assert r.returncode == 1
    assert "approval_timeout" in r.stderr
    assert json.loads(r.stdout)["reason"] == "approval_timeout"


def test_pending_approve_deny_grants_revoke(daemon):
    ws = workspace()
    proc = request_in_background(
        daemon, operation(ws, args=["one"], network="any", justification="fetch \x1b[31mdeps")
    )
    [item] = wait_for(lambda: pending(daemon))
    table = daemon.cli("pending")
    assert item["request_id"] in table.stdout and "NET" in table.stdout
    assert "\x1b" not in table.stdout
    r = daemon.cli(
        "approve", item["fingerprint"][:10], "--scope", "always", "--expires", "2h", "--note", "fine"
    )
    assert r.returncode == 0 and "allow" in r.stdout and "grant g-" in r.stdout
    out, err = finish(proc)
    assert proc.returncode == 0, err
    assert json.loads(out)["note"] == "fine"

    grants = json.loads(daemon.cli("grants", "--json").stdout)
    g = next(g for g in grants if g["fingerprint"] == item["fingerprint"])
    assert g["scope"] == "always" and g["expires_at"]
    assert daemon.cli("approve", item["request_id"]).returncode == 1  # already decided
    r = daemon.cli("grants", "revoke", g["id"])
    assert r.returncode == 0 and g["id"] in r.stdout

    proc = request_in_background(daemon, operation(ws, args=["two"], network="any"))
    [item] = wait_for(lambda: pending(daemon))
    r = daemon.cli("deny", item["request_id"], "--always", "--reason", "not from this network")
    assert r.returncode == 0
    out, err = finish(proc)
    assert proc.returncode == 1 and "not from this network" in err
    again = daemon.cli("request", "-", stdin=json.dumps(operation(ws, args=["two"], network="any")))
    assert again.returncode == 1 and json.loads(again.stdout)["reason"] == "deny_rule"


def test_history_filters_formats_verify(daemon):
    ws = workspace()
    daemon.cli(
        "request",
        "-",
        stdin=json.dumps(operation(ws, args=["rm", "-rf", "build"], justification='clean "x NEAR( * :')),
    )
    for query in ("rm -rf", '"x', "NEAR(", "*", ":"):
        r = daemon.cli("history", "--search", query, "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout), query
    r = daemon.cli("history", "--verdict", "deny", "--source", "timeout", "--csv")
    assert r.returncode == 0 and r.stdout.startswith("seq,at,request_id")
    r = daemon.cli("history", "--since", "1h")
    assert r.returncode == 0
    r = daemon.cli("history", "verify")
    assert r.returncode == 0 and r.stdout.startswith("OK")


def test_bad_duration_is_a_usage_error(daemon):
    r = daemon.cli("approve", "r-x", "--scope", "always", "--expires", "soon")
    assert r.returncode == 2 and "duration" in r.stderr


def test_help_for_every_command():
    for cmd in (
        ["daemon"],
        ["daemon", "start"],
        ["request"],
        ["pending"],
        ["approve"],
        ["deny"],
        ["grants"],
        ["grants", "revoke"],
        ["history"],
        ["history", "verify"],
        ["hook", "claude-code"],
    ):
        r = subprocess.run([sys.executable, "-m", "console", *cmd, "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "usage:" in r.stdout, cmd
