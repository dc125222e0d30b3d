"""bwrap's info pipe is read wherever its descriptor lands: a confined session in a
workspace with many protected files (each bound read-only) puts it past select()'s
FD_SETSIZE (1024), which refused the session with an internal error."""

from __future__ import annotations

import os
import resource
import time

import pytest
from support.daemon import running_daemon, workspace

from console.sandbox.verify import _read_pid


@pytest.fixture
def high_pipe():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1600:
        pytest.skip(f"the hard limit on open files is {hard}: no descriptor past 1024 to test")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1600), hard))
    r, w = os.pipe()
    high = os.dup2(r, 1500)
    os.close(r)
    try:
        yield high, w
    finally:
        os.close(high)
        os.close(w)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_child_pid_is_read_from_a_descriptor_past_fd_setsize(high_pipe):
    fd, w = high_pipe
    os.write(w, b'{\n    "child-pid": 4242\n}\n')
    assert _read_pid(fd, time.monotonic() + 5) == 4242


def test_a_silent_pipe_past_fd_setsize_ends_at_the_deadline(high_pipe):
    fd, _w = high_pipe
    assert _read_pid(fd, time.monotonic() + 0.05) is None


@pytest.mark.needs_bwrap
def test_a_confined_session_starts_in_a_workspace_of_many_protected_files():
    ws = workspace()
    for i in range(1100):
        (ws / f"key{i}.pem").write_text("not a key\n")
    with running_daemon("") as d, d.operator() as op:
        session = op.call("sessions.new", {"argv": ["bash", "--norc", "-c", "sleep 30"], "cwd": str(ws)})
        sid = session["session"]["id"]
        try:
            assert op.call("sessions.get", {"session": sid})["session"]["status"] != "exited"
        finally:
            op.call("sessions.kill", {"session": sid, "grace_s": 0.5})
