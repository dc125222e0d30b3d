"""Finding 2: a write dir swapped for a symlink between the check and the mount.

Every bind source is opened once without following symlinks and handed to bwrap as a
descriptor, so a writable bind can only ever be the directory that was checked.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest
from sandbox_escape_helpers import config, git_workspace, listing, op, real_dir, run, sandbox_probe, spawn
from support.daemon import running_daemon

from console.sandbox import SandboxSetupError, prepare

pytestmark = pytest.mark.needs_bwrap


@pytest.fixture
def layout():
    base = real_dir("ac-flip-")
    ws = git_workspace(base)
    deep = ws / "a" / "b" / "c"
    (deep / "d" / "hooks").mkdir(parents=True)
    (base / "outside" / "hooks").mkdir(parents=True)
    try:
        yield base, ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _flip_to(ws, target: str) -> None:
    """a/b/c/d becomes a relative symlink (the real directory kept aside as d.real)."""
    deep = ws / "a" / "b" / "c"
    os.rename(deep / "d", deep / "d.real")
    os.symlink(target, deep / "d")


TO_GIT = "../../../.git"  # a/b/c/d/hooks -> .git/hooks
TO_OUTSIDE = "../../../../outside"  # a/b/c/d/hooks -> ../outside/hooks


@pytest.mark.parametrize("target", [TO_GIT, TO_OUTSIDE])
def test_write_dir_flipped_after_the_check_cannot_reach_its_target(layout, target):
    base, ws = layout
    hooks_before = listing(ws / ".git" / "hooks")
    cfg = config(base)
    operation = op(
        ws,
        "echo pwned > a/b/c/d/hooks/post-checkout; echo x > .git/hooks/pre-commit; true",
        write_dirs=[str(ws / "a/b/c/d/hooks")],
        workspace_access="read_only",
    )
    ready = prepare(operation, cfg, sandbox_probe())
    refused: SandboxSetupError | None = None
    done = None
    try:
        _flip_to(ws, target)  # after the check, before bwrap mounts: the old race, made certain
        try:
            done = spawn(ready)
        except SandboxSetupError as exc:
            refused = exc
    finally:
        ready.close()
    assert listing(ws / ".git" / "hooks") == hooks_before
    assert listing(base / "outside" / "hooks") == []
    # Either the sandbox was stopped before the command, naming the field; or bwrap could
    # not make the mount point (the link leads where the sandbox has nothing) and ran
    # nothing; or the write landed in the directory that was checked (now set aside as
    # d.real), nowhere else.
    if refused is not None:
        assert refused.field == "write_dirs"
    elif done is not None and done.stderr.startswith("bwrap:"):
        assert listing(ws / "a" / "b" / "c" / "d.real" / "hooks") == []
    else:
        assert listing(ws / "a" / "b" / "c" / "d.real" / "hooks") == ["post-checkout"]


def test_symlink_flip_of_deep_write_dir_200_runs_writes_nothing_outside(layout):
    base, ws = layout
    hooks_before = listing(ws / ".git" / "hooks")
    cfg = config(base)
    deep = ws / "a" / "b" / "c"
    stop = threading.Event()

    def flipper() -> None:
        targets = [TO_GIT, TO_OUTSIDE]
        i = 0
        while not stop.is_set():
            # The flip races the sandbox on purpose: a step the other side beat is skipped.
            with contextlib.suppress(OSError):
                os.rename(deep / "d", deep / "d.real")
                os.symlink(targets[i % 2], deep / "d")
                time.sleep(0.0005)
                os.unlink(deep / "d")
                os.rename(deep / "d.real", deep / "d")
            i += 1
            time.sleep(0.0005)

    # Checked once, as the daemon does when the request arrives; mounted on every run.
    operation = op(
        ws,
        "echo pwned > a/b/c/d/hooks/post-checkout-$$; echo x > .git/hooks/evil-$$; true",
        write_dirs=[str(ws / "a/b/c/d/hooks")],
        workspace_access="read_only",
    )
    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    ran = refused = 0
    fields = set()
    try:
        for _ in range(200):
            try:
                if run(operation, cfg).returncode == 0:
                    ran += 1  # the command ran (bwrap may also give up when a source vanished)
            except SandboxSetupError as exc:
                fields.add(exc.field)
                refused += 1
    finally:
        stop.set()
        thread.join()
        if (deep / "d").is_symlink():
            os.unlink(deep / "d")
            os.rename(deep / "d.real", deep / "d")
    # How many of the 200 ran or were refused depends on the machine's load; that each one
    # either ran inside its boundary or was refused naming the field is what is asserted.
    assert fields <= {"write_dirs"}
    # With the flipping over, the same checked operation runs and writes where it may.
    assert run(operation, cfg).returncode == 0
    assert any(name.startswith("post-checkout-") for name in listing(deep / "d" / "hooks"))
    assert listing(ws / ".git" / "hooks") == hooks_before
    assert listing(base / "outside" / "hooks") == []
    # What was written went into the write dir itself.
    assert all(name.startswith("post-checkout-") for name in listing(deep / "d" / "hooks"))


def test_symlink_flip_through_the_daemon_writes_nothing_outside(layout):
    base, ws = layout
    hooks_before = listing(ws / ".git" / "hooks")
    deep = ws / "a" / "b" / "c"
    stop = threading.Event()

    def flipper() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):  # racing the sandbox, as above
                os.rename(deep / "d", deep / "d.real")
                os.symlink(TO_GIT, deep / "d")
                time.sleep(0.002)
                os.unlink(deep / "d")
                os.rename(deep / "d.real", deep / "d")
            time.sleep(0.002)

    policy = f'approval = "never"\nworkspaces = ["{base}"]\n'
    with running_daemon(policy) as daemon:
        thread = threading.Thread(target=flipper, daemon=True)
        thread.start()
        codes = []
        try:
            for i in range(8):
                r = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "console",
                        "exec",
                        "--state-dir",
                        str(daemon.state_dir),
                        "--workspace",
                        str(ws),
                        "--read-only",
                        "--write",
                        str(ws / "a/b/c/d/hooks"),
                        "--",
                        "sh",
                        "-c",
                        f"echo pwned > a/b/c/d/hooks/post-merge-{i}; echo x > .git/hooks/evil-{i}",
                    ],
                    cwd=ws,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                codes.append(r.returncode)
        finally:
            stop.set()
            thread.join()
            if (deep / "d").is_symlink():
                os.unlink(deep / "d")
                os.rename(deep / "d.real", deep / "d")
    assert listing(ws / ".git" / "hooks") == hooks_before
    assert listing(base / "outside" / "hooks") == []
    # Each run ran (its own `.git/hooks` write fails: exit 1 or 2 from sh), was stopped as a
    # sandbox setup failure (123), or was denied (126: checked while the write dir was the
    # symlink, it resolved into `.git`); never a traceback or an unknown state.
    assert set(codes) <= {1, 2, 123, 126}, codes
    # What any run wrote went into the write dir itself.
    assert all(name.startswith("post-merge-") for name in listing(deep / "d" / "hooks"))


def test_vanished_write_dir_is_a_problem_naming_the_field(layout):
    base, ws = layout
    operation = op(ws, "true", write_dirs=[str(ws / "a/b/c/d/hooks")], workspace_access="read_only")
    shutil.rmtree(ws / "a" / "b" / "c" / "d")
    with pytest.raises(SandboxSetupError) as info:
        prepare(operation, config(base), sandbox_probe())
    assert info.value.field == "write_dirs"
    assert "write_dirs:" in str(info.value) and "does not exist" in str(info.value)


def test_write_dir_that_became_a_symlink_is_refused(layout):
    base, ws = layout
    operation = op(ws, "true", write_dirs=[str(ws / "a/b/c/d/hooks")], workspace_access="read_only")
    _flip_to(ws, TO_GIT)
    with pytest.raises(SandboxSetupError) as info:
        prepare(operation, config(base), sandbox_probe())
    assert info.value.field == "write_dirs" and "symlink" in str(info.value)


def test_workspace_that_became_a_symlink_is_refused(layout):
    base, ws = layout
    operation = op(ws, "touch made")
    os.rename(ws, base / "ws.real")
    (base / "elsewhere").mkdir()
    os.symlink(base / "elsewhere", ws)
    with pytest.raises(SandboxSetupError) as info:
        prepare(operation, config(base), sandbox_probe())
    assert info.value.field == "workspace_root" and "symlink" in str(info.value)
    assert not (base / "elsewhere" / "made").exists()


async def test_vanished_write_dir_does_not_run_through_the_executor(layout):
    from console.policy import authorize
    from console.sandbox import Status, execute

    base, ws = layout
    operation = op(ws, "touch ran", write_dirs=[str(ws / "a/b/c/d/hooks")], workspace_access="read_only")
    shutil.rmtree(ws / "a" / "b" / "c" / "d")
    result = await execute(operation, authorize(operation, "test"), config(base), sandbox_probe())
    assert result.status is Status.NOT_STARTED
    assert result.reason.startswith("write_dirs:")
    assert not (ws / "ran").exists()


def test_misdirected_mount_is_caught_before_the_command_runs(layout):
    """What bwrap does when a name on the way is swapped while it mounts — the write dir
    lands on .git/hooks — made certain by editing its command line: the check refuses
    and the command never runs."""
    base, ws = layout
    operation = op(
        ws,
        "touch ran; echo x > .git/hooks/pre-commit",
        write_dirs=[str(ws / "a/b/c/d/hooks")],
        workspace_access="read_only",
    )
    ready = prepare(operation, config(base), sandbox_probe())
    try:
        # bwrap reads its options from the memfd that --args names: write them anew.
        args_fd = int(ready.argv[2])
        options = os.pread(args_fd, 1 << 20, 0).split(b"\0")
        at = options.index(os.fsencode(ws / "a/b/c/d/hooks"))
        options[at] = os.fsencode(ws / ".git" / "hooks")
        edited = os.memfd_create("edited-args")
        os.write(edited, b"\0".join(options))
        os.lseek(edited, 0, os.SEEK_SET)
        os.dup2(edited, args_fd)
        os.close(edited)
        with pytest.raises(SandboxSetupError) as info:
            spawn(ready)
    finally:
        ready.close()
    assert info.value.field == "write_dirs" and "mounts are not the ones asked for" in str(info.value)
    assert not (ws / "ran").exists()
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
