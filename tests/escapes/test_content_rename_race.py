"""No race: the approved bytes are what runs, while another process renames files over them.

Before: only an in-place edit was covered. The verified bytes were mounted over each bound
path, but Linux detaches a mount in every other namespace when a new file is *renamed
over* its mount point, so a second writer of the workspace (a durable writable session
needs no approval) renaming its own file onto the script while the sandbox started got
its file run: 14 of 60 runs (23 %) ran the swapped script, 10 more failed to start (exit
123), none was refused as `content_changed`.

Now the entry point runs from its sealed copy inside the sandbox (a descriptor, not the
path), and the daemon checks after setup that every pin is still in place, refusing the
run (`content_changed`) before anything executes when one is not. Counted over 1,000
tries against a tight rename loop: the entry point never ran other bytes than the
approved ones. A file the script *sources* is read by name when the script reaches that
line, after the check: a rename in that window is still seen (counted and printed, a
few in a thousand here; docs/security.md "Run what was hashed" says what remains).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from sandbox_escape_helpers import HOST, config, real_dir, sandbox_probe, spawn

from console.contract import parse
from console.sandbox import SandboxSetupError, prepare

pytestmark = pytest.mark.needs_bwrap

TRIES = int(__import__("os").environ.get("RACE_TRIES", "1000"))
APPROVED = "#!/bin/sh\n. ./lib.sh\necho APPROVED-$LIB\n"
EVIL = "#!/bin/sh\necho EVIL\n"
LIB = "LIB=lib-approved\n"
EVIL_LIB = "echo EVIL-LIB; LIB=evil\n"

# The second writer: renames a new file with other bytes over a bound path and, at once,
# one with the approved bytes back, then waits up to 50 ms — about a sandbox's start — so the check at run
# time usually passes and the swap can land anywhere in the sandbox's start.
SWAPPER = textwrap.dedent(
    """
    import os, random, sys, time
    ws = sys.argv[1]
    pairs = [("run.sh", sys.argv[2], sys.argv[3]), ("lib.sh", sys.argv[4], sys.argv[5])]
    n = 0
    while not os.path.exists(os.path.join(ws, "stop")):
        name, good, bad = random.choice(pairs)
        for i, text in enumerate((bad, good)):
            tmp = os.path.join(ws, f".{name}.{i}")
            with open(tmp, "w") as f:
                f.write(text)
            os.chmod(tmp, 0o755)
            os.rename(tmp, os.path.join(ws, name))
            n += 1
            time.sleep(0 if i == 0 else random.random() * 0.05)
    print(n)
    """
)


def test_a_rename_loop_never_gets_its_bytes_run():
    base = real_dir("ac-race-")
    ws = base / "ws"
    ws.mkdir()
    (ws / "run.sh").write_text(APPROVED)
    (ws / "run.sh").chmod(0o755)
    (ws / "lib.sh").write_text(LIB)
    cfg = config(base)
    approved = parse(
        {
            "kind": "process",
            "executable": "/bin/sh",
            "args": ["run.sh"],
            "workspace_root": str(ws),
            "workspace_access": "write",
        },
        HOST,
    )
    assert len(approved.content) == 2 and not approved.unbound
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(ws), APPROVED, EVIL, LIB, EVIL_LIB],
        stdout=subprocess.PIPE,
        text=True,
    )
    ran = swapped = sourced = failed = 0
    refusals: list[str] = []
    try:
        for _ in range(TRIES):
            try:
                with prepare(approved, cfg, sandbox_probe()) as ready:
                    result = spawn(ready, timeout=30)
            except SandboxSetupError as exc:
                refusals.append(str(exc))
                continue
            lines = result.stdout.splitlines()
            if "EVIL" in lines:
                swapped += 1  # the entry point's swapped bytes ran
            elif "EVIL-LIB" in lines:
                sourced += 1  # the file it sources, read by name later, was swapped
            elif result.returncode == 0 and result.stdout == "APPROVED-lib-approved\n":
                ran += 1
            else:
                failed += 1
    finally:
        (ws / "stop").write_text("")
        renames = int(swapper.communicate(timeout=60)[0] or 0)
    refused = len(refusals)
    assert all("content changed" in why for why in refusals), refusals[:3]
    print(
        f"\n{TRIES} tries against {renames} renames: {ran} ran the approved bytes, "
        f"{refused} refused content_changed, {swapped} ran a swapped entry point, {sourced} read a swapped "
        f"sourced file, {failed} failed to start otherwise"
    )
    assert swapped == 0
    assert renames > TRIES // 10  # the second writer was at work all along
    assert ran + refused + sourced + failed == TRIES
    assert ran > 0 and failed <= TRIES // 100


def test_a_pin_renamed_over_after_the_sandbox_mounted_it_is_refused_before_anything_runs(monkeypatch):
    """The rename lands exactly between bwrap's mounts and the daemon's check (the
    sandbox waits for the check): the detached pin is found, nothing starts."""
    from console.sandbox import verify

    base = real_dir("ac-race-")
    ws = base / "ws"
    ws.mkdir()
    (ws / "run.sh").write_text(APPROVED)
    (ws / "lib.sh").write_text(LIB)
    (ws / "ran").mkdir()
    approved = parse(
        {
            "kind": "process",
            "executable": "/bin/sh",
            "args": ["run.sh"],
            "workspace_root": str(ws),
            "workspace_access": "write",
        },
        HOST,
    )
    real_check = verify.check

    def rename_then_check(pid, *args, **kw):
        (ws / ".new").write_text(EVIL_LIB + "touch ran/it\n")
        (ws / ".new").rename(ws / "lib.sh")
        return real_check(pid, *args, **kw)

    monkeypatch.setattr(verify, "check", rename_then_check)
    with (
        prepare(approved, config(base), sandbox_probe()) as ready,
        pytest.raises(SandboxSetupError) as refused,
    ):
        spawn(ready, timeout=30)
    assert "content changed" in str(refused.value) and "lib.sh" in str(refused.value)
    assert not (ws / "ran" / "it").exists()


def test_bwrap_failing_to_mount_a_pin_is_a_content_change_and_nothing_else_is():
    """The rename can land while bwrap mounts the pin itself: bwrap then fails its setup
    on that path. That is the same content change the check after setup refuses (the
    executor answers content_changed, which the daemon submits again), not a setup fault."""
    base = real_dir("ac-pin-")
    ws = base / "ws"
    ws.mkdir()
    (ws / "run.sh").write_text(APPROVED)
    (ws / "lib.sh").write_text(LIB)
    op = parse(
        {"kind": "process", "executable": "/bin/sh", "args": ["run.sh"], "workspace_root": str(ws)}, HOST
    )
    with prepare(op, config(base), sandbox_probe()) as ready:
        pinned = ws / "lib.sh"
        said = f'bwrap: Can\'t bind mount /bindfileAbC123 on /newroot{pinned}: Unable to find "x" in mount table\n'
        refused = ready.pin_refused(said.encode())
        assert refused is not None and "content changed" in str(refused) and str(pinned) in str(refused)
        for other in (
            "bwrap: Can't bind mount /oldroot/etc on /newroot/etc: Permission denied\n",  # not a pin
            "bwrap: execvp run.sh: No such file or directory\n",
            f"fine\nbwrap: Can't bind mount /x on /newroot{pinned}: y\n",  # not bwrap's one line
        ):
            assert ready.pin_refused(other.encode()) is None, other
