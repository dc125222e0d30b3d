"""Starting, stopping and refusing to start: sockets, locks, permissions."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest
from support.daemon import DaemonProcess, operation, short_tmp, wait_for, workspace

from console.client.spawn import running_pid


def cli(state, *args, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "console", *args, "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def state():
    base = short_tmp()
    yield base / "s"
    subprocess.run(
        [sys.executable, "-m", "console", "daemon", "stop", "--force", "--state-dir", str(base / "s")],
        capture_output=True,
    )
    shutil.rmtree(base, ignore_errors=True)


def test_start_status_stop(state):
    r = cli(state, "daemon", "status")
    assert r.returncode == 3 and "not running" in r.stdout
    r = cli(state, "daemon", "start")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("started, pid ")
    pid = int(r.stdout.split()[-1])
    r = cli(state, "daemon", "start")
    assert r.stdout.strip() == f"already running, pid {pid}"
    r = cli(state, "daemon", "status")
    assert r.returncode == 0 and f"pid {pid}" in r.stdout
    assert (state / "daemon.log").exists()
    assert oct((state / "run").stat().st_mode & 0o777) == "0o700"
    assert oct((state / "run" / "agent.sock").stat().st_mode & 0o777) == "0o600"
    assert oct((state / "operator.token").stat().st_mode & 0o777) == "0o600"
    r = cli(state, "daemon", "stop")
    assert r.returncode == 0 and "stopped" in r.stdout
    assert not (state / "run" / "agent.sock").exists()


def test_stop_lists_what_it_would_end_and_needs_force(state):
    d = DaemonProcess(state).start()
    try:
        new = d.cli("sessions", "new", "--unconfined", "--title", "dev-server", "--", "sleep", "60")
        assert new.returncode == 0, new.stderr
        r = cli(state, "daemon", "stop")
        assert r.returncode == 1 and "--force" in r.stderr
        assert "1 running session" in r.stderr and "dev-server" in r.stderr
        assert d.proc.poll() is None  # still running, the session too
        r = cli(state, "daemon", "stop", "--force")
        assert r.returncode == 0 and "stopped" in r.stdout
    finally:
        d.stop()


def test_second_daemon_refuses_with_the_pid(state):
    d = DaemonProcess(state).start()
    try:
        r = cli(state, "daemon", "run", timeout=20)
        assert r.returncode == 1
        assert f"already running, pid {d.proc.pid}" in r.stderr
    finally:
        d.stop()


def test_stale_socket_from_a_dead_daemon_is_replaced(state):
    d = DaemonProcess(state).start()
    d.kill9()
    assert (state / "run" / "agent.sock").exists()  # left behind
    d2 = DaemonProcess(state).start()
    try:
        assert running_pid(d2.loc) == d2.proc.pid
    finally:
        d2.stop()


@pytest.mark.parametrize("mode", [0o777, 0o750, 0o701])
def test_loose_runtime_dir_refuses_to_start(state, mode):
    (state / "run").mkdir(parents=True, mode=0o700)
    os.chmod(state.parent, 0o700)
    os.chmod(state, 0o700)
    os.chmod(state / "run", mode)
    r = cli(state, "daemon", "run", timeout=20)
    assert r.returncode == 2
    assert "unsafe permissions" in r.stderr and f"{mode:04o}" in r.stderr and "chmod 700" in r.stderr


@pytest.mark.needs_root
def test_runtime_dir_owned_by_someone_else_refuses(state):
    (state / "run").mkdir(parents=True, mode=0o700)
    os.chmod(state, 0o700)
    os.chown(state / "run", 65534, 65534)
    r = cli(state, "daemon", "run", timeout=20)
    assert r.returncode == 2 and "owned by uid 65534" in r.stderr


def test_runtime_dir_symlink_refuses(state, tmp_path):
    state.mkdir(parents=True, mode=0o700)
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (state / "run").symlink_to(target)
    r = cli(state, "daemon", "run", timeout=20)
    assert r.returncode == 2 and "symlink" in r.stderr


def test_symlink_at_the_socket_path_refuses(state, tmp_path):
    (state / "run").mkdir(parents=True, mode=0o700)
    os.chmod(state, 0o700)
    (state / "run" / "agent.sock").symlink_to(tmp_path / "victim")
    r = cli(state, "daemon", "run", timeout=20)
    assert r.returncode == 2 and "symlink" in r.stderr
    assert not (tmp_path / "victim").exists()


def test_client_refuses_a_loose_socket_dir(state):
    d = DaemonProcess(state).start()
    try:
        os.chmod(state / "run", 0o777)
        r = cli(state, "pending")
        assert r.returncode == 3 and "unsafe permissions" in r.stderr
    finally:
        os.chmod(state / "run", 0o700)
        d.stop()


@pytest.mark.needs_root
def test_peer_of_another_uid_is_refused(state):
    """Even with the socket opened up to everyone, a process of another uid is cut off."""
    d = DaemonProcess(state).start()
    try:
        for p in (state.parent, state, state / "run"):
            os.chmod(p, 0o755)
        os.chmod(state / "run" / "agent.sock", 0o777)
        probe = (
            "import socket,sys\n"
            "s=socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])\n"
            "try:\n"
            '    s.sendall(b\'{"jsonrpc":"2.0","id":1,"method":"hello"}\\n\')\n'
            "    print('answered' if s.recv(4096) else 'refused')\n"
            "except OSError:\n"
            "    print('refused')\n"
        )
        r = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-c",
                probe,
                str(state / "run" / "agent.sock"),
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "refused"  # connected, then cut off without an answer
        assert "refused a connection on agent.sock from uid 65534" in d.log()
    finally:
        for p in (state, state / "run"):
            os.chmod(p, 0o700)
        d.stop()


def test_sigterm_denies_pending_with_daemon_shutdown(state):
    d = DaemonProcess(state).start()
    ws = workspace()
    import json
    import threading

    box = {}

    def agent():
        with d.agent() as a:
            box["answer"] = a.submit(operation(ws, network="any"))

    t = threading.Thread(target=agent)
    t.start()
    with d.operator() as op:
        wait_for(lambda: op.call("pending.list")["count"] == 1)
    assert d.stop(signal.SIGTERM) == 0
    t.join(10)
    assert box["answer"]["reason"] == "daemon_shutdown"
    d2 = DaemonProcess(state).start()
    try:
        r = d2.cli("history", "--json")
        rows = json.loads(r.stdout)
        assert rows[0]["reason"] == "daemon_shutdown" and rows[0]["source"] == "shutdown"
    finally:
        d2.stop()


def test_long_state_dir_is_a_clear_error(tmp_path):
    deep = tmp_path / ("x" * 90) / "state"
    r = cli(deep, "daemon", "run", timeout=20)
    assert r.returncode == 2 and "longer than 107 bytes" in r.stderr
