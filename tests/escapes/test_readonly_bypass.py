"""Finding 8: the read-only command set (approval = "untrusted") went by base name.

A workspace script named `./cat` or `tools/git` was auto-allowed as read_only_command
and ran anything; `cat key` with `key -> ~/.ssh/id_rsa` passed the lexical check. Now
the resolved executable must be the system's, argument paths are checked resolved, and
no form that writes or executes is in the set.
"""

from __future__ import annotations

import shutil

import pytest
from support.daemon import operation, running_daemon, short_tmp, workspace

from console.contract.host import OSHost
from console.contract.operation import parse
from console.contract.problem import InvalidInput
from console.policy import Verdict, evaluate, policy_from_toml

UNTRUSTED = 'approval = "untrusted"\napproval_timeout_s = 60\n'
HOST = OSHost()


@pytest.fixture
def ws():
    root = workspace()
    yield root
    shutil.rmtree(root.parent, ignore_errors=True)


def verdict(ws, **fields):
    config = policy_from_toml(UNTRUSTED + f'workspaces = ["{ws.parent}"]\n')
    op = parse(operation(ws, **fields), HOST)
    return evaluate(op, config, (), 0.0, resolve_path=lambda p: HOST.resolve(p).path)


def script(path, marker):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho pwned > {marker}\n")
    path.chmod(0o755)


def test_workspace_script_named_cat_is_not_auto_allowed_and_does_not_run(ws):
    marker = ws / "ran"
    script(ws / "cat", marker)
    script(ws / "tools" / "git", marker)
    with running_daemon(UNTRUSTED) as d, d.agent() as agent:
        for exe, args in (("./cat", ["README.md"]), ("tools/git", ["status"])):
            op = operation(ws, executable=exe, args=args)
            reply = agent.call("operation.exec", {"operation": op, "timeout_s": 0.5})
            assert (reply["decision"]["verdict"], reply["decision"]["reason"]) == ("deny", "approval_timeout")
            assert reply["result"] is None
    assert not marker.exists()


def test_symlink_to_a_secret_is_not_a_workspace_read(ws):
    secret_dir = short_tmp("secret-")
    (secret_dir / "id_rsa").write_text("PRIVATE KEY\n")
    (ws / "key").symlink_to(secret_dir / "id_rsa")
    (ws / "src" / "up").symlink_to(secret_dir)
    try:
        assert verdict(ws, executable="cat", args=["key"]).reason == "untrusted_requires_approval"
        assert verdict(ws, executable="head", args=["src/up/id_rsa"]).verdict is Verdict.REVIEW
        assert verdict(ws, executable="ls", args=["src/up"]).verdict is Verdict.REVIEW
        with running_daemon(UNTRUSTED) as d, d.agent() as agent:
            answer = agent.submit(operation(ws, executable="cat", args=["key"]), timeout_s=0.5)
            assert answer["reason"] == "approval_timeout"
    finally:
        shutil.rmtree(secret_dir, ignore_errors=True)


def test_a_copy_of_a_reader_outside_the_system_dirs_is_not_the_reader(ws):
    elsewhere = short_tmp("bin-")
    shutil.copy("/usr/bin/cat", elsewhere / "cat")
    try:
        assert verdict(ws, executable=str(elsewhere / "cat"), args=["README.md"]).verdict is Verdict.REVIEW
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)


@pytest.mark.parametrize(
    ("exe", "args"),
    [
        ("git", ["-c", "core.pager=sh", "log"]),
        ("git", ["-C", "/", "status"]),
        ("git", ["--exec-path=/tmp", "status"]),
        ("git", ["st"]),  # an alias is not a known subcommand
        ("git", ["diff", "--output=x"]),
        ("git", ["diff", "--ext-diff"]),
        ("git", ["log", "--textconv", "-p"]),
        ("git", ["diff", "--no-index", "/dev/null", "/etc/passwd"]),
        ("git", ["blame", "--contents", "/etc/passwd", "README.md"]),
        ("find", [".", "-exec", "sh", "-c", "id", ";"]),
        ("find", [".", "-delete"]),
        ("find", [".", "-fprint", "out"]),
        ("sed", ["-i", "s/a/b/", "README.md"]),
        ("awk", ['BEGIN{system("id")}']),
        ("sort", ["-o", "README.md", "README.md"]),
        ("tee", ["README.md"]),
        ("xargs", ["sh"]),
        ("env", ["sh"]),
        ("less", ["README.md"]),
        ("more", ["README.md"]),
        ("man", ["ls"]),
        ("wc", ["--files0-from=/etc/passwd"]),
        ("tail", ["-f", "README.md"]),
        ("cat", ["/etc/passwd"]),
        ("cat", ["../../etc/passwd"]),
        ("cat", ["-"]),
        ("ls", ["--hide=x", "/"]),
    ],
)
def test_forms_that_write_execute_or_leave_the_workspace_are_not_read_only(ws, exe, args):
    if shutil.which(exe, path="/usr/bin:/bin") is None:
        # Not on this machine (e.g. man): then it cannot be named at all, which is not an allow.
        with pytest.raises(InvalidInput) as info:
            verdict(ws, executable=exe, args=args)
        assert info.value.problem.reason == "executable_not_found"
        return
    assert verdict(ws, executable=exe, args=args, kind="git" if exe == "git" else "process").verdict is (
        Verdict.REVIEW
    )


def test_write_access_or_extra_capabilities_leave_the_read_only_set(ws):
    assert (
        verdict(ws, executable="cat", args=["README.md"], workspace_access="write").verdict is Verdict.REVIEW
    )
    assert verdict(ws, executable="ls", env={"LANG": "C"}).verdict is Verdict.REVIEW


@pytest.mark.parametrize(
    ("exe", "args"),
    [
        ("git", ["status"]),
        ("git", ["log", "--format=%H", "-n", "3"]),
        ("cat", ["README.md"]),
        ("ls", ["-la", "src"]),
        ("wc", ["-l", "README.md"]),
        ("pwd", []),
    ],
)
def test_plain_workspace_reads_stay_allowed(ws, exe, args):
    d = verdict(ws, executable=exe, args=args, kind="git" if exe == "git" else "process")
    assert (d.verdict, d.reason) == (Verdict.ALLOW, "read_only_command")
