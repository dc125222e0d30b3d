"""One secret set for the hook's reads and the sandbox; MCP calls and agents' settings asked.

Before: the hook's read guard knew `id_rsa*`, `id_ed25519*`, `*.pem` and `.env` only:
`id_ecdsa`, `~/.aws/credentials`, `~/.claude/.credentials.json`, `~/.git-credentials`,
`~/.netrc`, `~/.kube/config`, `/etc/shadow` and a Glob over `~/**` were read unasked,
while the sandbox hid homes by its own rule (and showed `/etc/shadow` when the daemon runs
as root, and whatever a `readable` directory held). MCP tools (`mcp__*`) got no answer
from the hook at all, even aimed at `.claude/settings.local.json`; a Write of
`~/.claude/settings.json` with `disableAllHooks` was a plain WRITE-OUT, approved with
one key.

Now console/policy/secrets.py is the set both read; MCP calls go to the daemon as
`unrestricted` requests showing their whole input; agents' settings in the home are
protected paths, approved only with the typed word (console and CLI).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from sandbox_escape_helpers import config, op, real_dir, run
from support.daemon import in_background, wait_for, workspace
from support.hook import hook_cli, hook_input

pytestmark = pytest.mark.needs_bwrap

SECRETS = {
    ".ssh/id_ecdsa": "ECDSA KEY",
    ".ssh/id_ed25519_sk": "SK KEY",
    ".aws/credentials": "aws_secret_access_key",
    ".claude/.credentials.json": "claude-oauth-token",
    ".git-credentials": "https://me:token@github.com",
    ".netrc": "machine x login me password hunter2",
    ".kube/config": "client-key-data",
    ".docker/config.json": "registry-auth",
    ".npmrc": "//registry.npmjs.org/:_authToken=npm_x",
    ".config/gh/hosts.yml": "oauth_token: gho_x",
}


@pytest.fixture(scope="module")
def home():
    base = real_dir("ac-secrets-")
    home = base / "home"
    for rel, text in SECRETS.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text + "\n")
    (home / ".config" / "tool.toml").write_text("color = true\n")
    (home / "notes.txt").write_text("plain notes\n")
    (home / "proj").mkdir()
    (home / "proj" / "link-to-aws").symlink_to(home / ".aws" / "credentials")
    try:
        yield home
    finally:
        shutil.rmtree(base, ignore_errors=True)


def read(daemon, home: Path, tool: str, tool_input: dict) -> dict | None:
    env = {**os.environ, "HOME": str(home)}
    return hook_cli(daemon, hook_input(home / "proj", tool, tool_input), env=env)


@pytest.mark.parametrize("rel", sorted(SECRETS))
def test_the_hook_refuses_every_kind_of_secret_in_the_home(daemon, home, rel):
    out = read(daemon, home, "Read", {"file_path": str(home / rel)})
    assert out is not None and out["permissionDecision"] == "deny", (rel, out)
    assert "secret" in out["permissionDecisionReason"]


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Read", {"file_path": "{home}/proj/link-to-aws"}),  # a symlink in the project
        ("Glob", {"pattern": ".*/credentials", "path": "{home}"}),
        ("Read", {"file_path": "/etc/shadow"}),
        ("Read", {"file_path": "/etc/gshadow"}),
        ("Glob", {"pattern": "**/*", "path": "{home}"}),
        ("Glob", {"pattern": "{home}/**"}),
        ("Glob", {"pattern": ".aws/*", "path": "{home}"}),
        ("Grep", {"pattern": "token", "path": "{home}"}),
        ("Grep", {"pattern": "root", "path": "/etc"}),
        ("Grep", {"pattern": "x", "path": "/"}),
    ],
)
def test_the_hook_refuses_system_secrets_and_searches_that_reach_them(daemon, home, tool, tool_input):
    filled = {k: v.replace("{home}", str(home)) for k, v in tool_input.items()}
    out = read(daemon, home, tool, filled)
    assert out is not None and out["permissionDecision"] == "deny", (tool, filled, out)


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Read", {"file_path": "{home}/notes.txt"}),
        ("Read", {"file_path": "{home}/.config/tool.toml"}),
        ("Glob", {"pattern": "proj/*.py", "path": "{home}"}),
        ("Grep", {"pattern": "x", "path": "{home}/proj"}),
        ("Read", {"file_path": "/etc/hostname"}),
    ],
)
def test_the_hook_leaves_other_reads_to_claude_code(daemon, home, tool, tool_input):
    filled = {k: v.replace("{home}", str(home)) for k, v in tool_input.items()}
    assert read(daemon, home, tool, filled) is None


def test_the_sandbox_hides_the_same_set_even_inside_a_readable_directory(home):
    cfg = config(home.parent, home=str(home), readable=("~/.aws", "~/.config"))
    script = (
        "; ".join(f"cat ~/{rel} 2>/dev/null" for rel in SECRETS)
        + "; cat ~/.config/tool.toml; cat /etc/shadow; true"
    )
    result = run(op(home / "proj", script), cfg)
    assert "color = true" in result.stdout  # the readable directory itself is shown
    for text in SECRETS.values():
        assert text not in result.stdout, text
    assert "root:" not in result.stdout  # /etc/shadow is empty inside


def test_an_mcp_call_goes_to_the_operator_with_its_whole_input(daemon):
    ws = workspace()
    call = {"path": str(ws / ".claude" / "settings.local.json"), "content": '{"disableAllHooks": true}'}
    answer = in_background(lambda: hook_cli(daemon, hook_input(ws, "mcp__fs__write_file", call), "30"))
    with daemon.operator() as op:
        [item] = wait_for(
            lambda: [
                p
                for p in op.call("pending.list")["pending"]
                if p["operation"]["tool"] == "claude-code:mcp__fs__write_file"
            ]
        )
        assert {"kind": "unrestricted"} in item["operation"]["capabilities"]
        assert item["operation"]["executable"] == "/usr/bin/true"
        assert item["operation"]["args"][0].startswith("sha256:")
        assert "disableAllHooks" in item["operation"]["justification"]
        assert json.loads(item["operation"]["justification"].split("\n", 1)[1]) == call
        op.call("decide", {"target": item["request_id"], "action": "deny", "reason": "not via MCP"})
    out = answer()
    assert out is not None and out["permissionDecision"] == "deny"
    assert "not via MCP" in out["permissionDecisionReason"]


def test_a_write_of_the_users_agent_settings_is_protected_and_takes_the_typed_word(daemon):
    ws = workspace()
    target = Path.home() / ".claude" / "settings.json"  # decided only: nothing is written
    call = {"file_path": str(target), "content": '{"disableAllHooks": true}'}
    answer = in_background(lambda: hook_cli(daemon, hook_input(ws, "Write", call), "30"))
    with daemon.operator() as op:
        [item] = wait_for(
            lambda: [
                p
                for p in op.call("pending.list")["pending"]
                if p["operation"]["args"][:1] == [str(target.resolve())]
            ]
        )
        kinds = {e["kind"] for e in item["evaluation"]["escalations"]}
        assert "protected_metadata" in kinds, item["evaluation"]["escalations"]
        listed = daemon.cli("pending")
        assert "PROTECTED" in listed.stdout
        refused = daemon.cli("approve", item["request_id"])
        assert refused.returncode != 0 and "--confirm protected" in refused.stderr
        assert daemon.cli("approve", item["request_id"], "--confirm", "protected").returncode == 0
    assert answer()["permissionDecision"] == "allow"
