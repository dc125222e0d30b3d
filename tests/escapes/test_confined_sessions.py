"""Finding: a session could leave its own supervision, and the sandbox showed too much.

Measured before this change, from inside an agent's PTY session: `operator.sock` and
`operator.token` were reachable (the session ran as the operator, unconfined), so the
agent resumed its own tripwire pauses; writing 0 to its own `cgroup.freeze` thawed it;
`tmux new-window` on the operator's tmux server left its cgroup; a 0600 socket under
/run was reached from a no-network sandbox; other projects, /srv and /var/lib were
readable; and /proc/1/cmdline inside was bwrap's command line, naming the state
directory and every hidden path.

Now the operator's sessions are confined unless started `--unconfined`, and every
sandbox is an allowlist (console/sandbox/surface.py). Each test here failed before.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.daemon import running_daemon, wait_for

from console.client import RPCError

pytestmark = pytest.mark.needs_bwrap

ROOT_ONLY = os.geteuid() == 0
# The interpreter itself (the venv's is a link into it): what a sandbox can run.
PYTHON = os.path.realpath(sys.executable)


@pytest.fixture(scope="module")
def place():
    """Outside /tmp (private inside every sandbox anyway): a workspace, another project
    beside it, a service's home under /var/lib, and a readable directory the policy names."""
    base = Path("/srv") / f"ac-confined-{secrets.token_hex(4)}"
    lib = Path("/var/lib") / f"ac-confined-{secrets.token_hex(4)}"
    for d in (base / "project", base / "other-project", base / "shared", lib):
        d.mkdir(parents=True)
    (base / "other-project" / "secret.txt").write_text("OTHER-PROJECT-SECRET\n")
    (base / "shared" / "notes.txt").write_text("SHARED-NOTES\n")
    (lib / "data").write_text("SERVICE-SECRET\n")
    try:
        yield base, lib
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(lib, ignore_errors=True)


@pytest.fixture(scope="module")
def daemon(place):
    base, _ = place
    # The interpreter's home is readable as the default `readable` has it (~/.pyenv here).
    runtime = os.path.realpath(sys.base_prefix)
    policy = f'approval_timeout_s = 30\nworkspaces = ["{base}"]\nreadable = ["{base}/shared", "{runtime}"]\n'
    with running_daemon(policy) as d:
        yield d


def confined(daemon, ws: Path, script: str) -> str:
    """Run ``script`` in a session the operator starts (confined by default); its screen."""
    with daemon.operator() as op:
        sid = op.call("sessions.new", {"argv": ["/bin/sh", "-c", script], "cwd": str(ws), "cols": 200})[
            "session"
        ]["id"]
        wait_for(lambda: op.call("sessions.get", {"session": sid})["session"]["status"] == "exited", 30)
        return str(op.call("sessions.screen", {"session": sid, "scrollback": True})["text"])


def agents_session(daemon, ws: Path, script: str) -> str:
    """Run ``script`` in an agent's approved interactive session; its screen."""
    with daemon.agent() as agent, daemon.operator() as op:
        wire = {
            "kind": "process",
            "executable": "/bin/sh",
            "args": ["-c", script],
            "workspace_root": str(ws),
            "mode": "interactive",
            "workspace_access": "write",
        }
        answer = agent.call("operation.submit", {"operation": wire, "cols": 200})
        assert answer["verdict"] == "allow", answer
        sid = answer["session"]["id"]
        wait_for(lambda: op.call("sessions.get", {"session": sid})["session"]["status"] == "exited", 30)
        return str(op.call("sessions.screen", {"session": sid, "scrollback": True})["text"])


def joined(text: str) -> str:
    """The screen without its line breaks (long lines wrap)."""
    return text.replace("\n", "")


def test_a_session_cannot_reach_the_operator_socket_or_read_the_token(daemon, place):
    base, _ = place
    sock, token = daemon.loc.operator_socket, daemon.loc.token
    script = (
        f"{PYTHON} -I -S -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{sock}'); "
        "print('OPERATOR', 'REACHED')\" 2>/dev/null || echo operator-unreachable; "
        f"cat {token} 2>/dev/null && echo TOKEN-READ || echo token-unreadable"
    )
    screen = joined(confined(daemon, base / "project", script))
    assert "operator-unreachable" in screen and "OPERATOR REACHED" not in screen, screen
    assert "token-unreadable" in screen and "TOKEN-READ" not in screen, screen
    assert token.read_text().strip() not in screen


def _cgroup_dir(pid: int) -> Path | None:
    """The session's cgroup v2 directory, as the host sees it."""
    mounts = [
        line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if " cgroup2 " in line
    ]
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            for mount in mounts:
                candidate = Path(mount + line[3:])
                if (candidate / "cgroup.freeze").exists():
                    return candidate
    return None


def test_a_session_cannot_thaw_itself_through_its_cgroup(daemon, place):
    base, _ = place
    with daemon.operator() as op:
        if op.call("daemon.status")["sessions"]["pause_mode"] != "cgroup freeze":
            pytest.skip("sessions are not in cgroups here (pause by process walk)")
        script = 'read p; (echo 0 > "$p") 2>/dev/null && echo THAWED-MYSELF || echo cgroup-refused; ls /sys/fs/cgroup 2>&1; sleep 0.3'
        sid = op.call("sessions.new", {"argv": ["/bin/sh", "-c", script], "cwd": str(base / "project")})[
            "session"
        ]["id"]
        pid = op.call("sessions.get", {"session": sid})["session"]["pid"]
        where = _cgroup_dir(pid)
        assert where is not None, "the session is in no cgroup v2 directory"
        op.call("sessions.input", {"session": sid, "text": f"{where / 'cgroup.freeze'}\n"})
        wait_for(lambda: op.call("sessions.get", {"session": sid})["session"]["status"] == "exited", 30)
        screen = op.call("sessions.screen", {"session": sid, "scrollback": True})["text"]
    assert "cgroup-refused" in screen and "THAWED-MYSELF" not in screen, screen
    assert "No such file or directory" in screen  # /sys is not there at all


@pytest.fixture
def operators_tmux():
    """A tmux server of the operator's, on a socket where tmux puts it (/tmp/tmux-UID/…)."""
    if shutil.which("tmux") is None:
        pytest.skip("no tmux")
    directory = Path(f"/tmp/tmux-{os.geteuid()}")
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / f"ac-test-{secrets.token_hex(4)}"
    subprocess.run(["tmux", "-S", str(path), "new-session", "-d", "sleep 120"], check=True)
    try:
        yield path
    finally:
        subprocess.run(["tmux", "-S", str(path), "kill-server"], capture_output=True)
        path.unlink(missing_ok=True)


def test_a_session_cannot_use_the_operators_tmux_server(daemon, place, operators_tmux):
    base, _ = place
    marker = base / "project" / "escaped-through-tmux"
    script = (
        f"tmux -S {operators_tmux} new-window 'touch {marker}' 2>/dev/null && echo TMUX-REACHED "
        "|| echo tmux-unreachable"
    )
    screen = joined(confined(daemon, base / "project", script))
    assert "tmux-unreachable" in screen and "TMUX-REACHED" not in screen, screen
    windows = subprocess.run(
        ["tmux", "-S", str(operators_tmux), "list-windows"], capture_output=True, text=True
    ).stdout
    assert len(windows.splitlines()) == 1 and not marker.exists()


@pytest.fixture
def run_socket():
    """A private (0600) service socket under /run, as the system bus or postgres have."""
    directory = Path("/run") / f"ac-test-{secrets.token_hex(4)}"
    directory.mkdir(mode=0o755)
    path = directory / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen(8)
    accepted: list[bool] = []

    def serve() -> None:
        server.settimeout(0.2)
        while not stopping.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(True)
            conn.close()

    stopping = threading.Event()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield path, accepted
    finally:
        stopping.set()
        thread.join(2)
        server.close()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("who", ["operator", "agent"])
def test_no_session_reaches_a_host_socket_under_run(daemon, place, run_socket, who):
    base, _ = place
    path, accepted = run_socket
    script = (
        f"{PYTHON} -I -S -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{path}'); "
        "print('SOCKET', 'REACHED')\" 2>/dev/null || echo socket-unreachable; ls /run"
    )
    start = confined if who == "operator" else agents_session
    screen = joined(start(daemon, base / "project", script))
    assert "socket-unreachable" in screen and "SOCKET REACHED" not in screen, screen
    assert accepted == []
    assert path.parent.name not in screen  # /run shows nothing of the host's


@pytest.mark.parametrize("who", ["operator", "agent"])
def test_a_session_reads_only_its_workspace_the_system_and_what_the_policy_names(daemon, place, who):
    base, lib = place
    script = (
        f"cat {base}/other-project/secret.txt {lib}/data; cat {base}/shared/notes.txt; "
        f"echo LS; ls {base}; echo SL; head -c 200 /etc/shadow; echo done"
    )
    start = confined if who == "operator" else agents_session
    screen = joined(start(daemon, base / "project", script))
    assert "done" in screen, screen
    assert "OTHER-PROJECT-SECRET" not in screen and "SERVICE-SECRET" not in screen, screen
    assert "SHARED-NOTES" in screen, screen  # the policy's `readable`
    assert "other-project" not in screen.split("LS")[1].split("SL")[0], screen
    if ROOT_ONLY:
        assert "root:" not in screen, screen  # /etc/shadow is covered even for a root operator


@pytest.mark.parametrize("who", ["operator", "agent"])
def test_proc_1_cmdline_names_nothing_of_the_console(daemon, place, who):
    base, _ = place
    script = "tr '\\0' ' ' < /proc/1/cmdline; echo; echo END"
    start = confined if who == "operator" else agents_session
    screen = joined(start(daemon, base / "project", script))
    cmdline = screen.split("END")[0]
    assert "bwrap" in cmdline, screen  # pid 1 is bwrap, as before
    for name in (
        str(daemon.loc.state_dir),
        str(daemon.loc.runtime_dir),
        "agent-console",
        "--ro-bind",
        "--tmpfs",
    ):
        assert name not in cmdline, (name, cmdline)


@pytest.mark.parametrize("who", ["operator", "agent"])
def test_tracing_and_mounting_are_refused_by_the_seccomp_filter(daemon, place, who):
    base, _ = place
    # The mount point is the test's own: were the filter (or the sandbox) gone, a root
    # operator's unconfined session would really mount there, and nowhere that matters.
    target = base / "project" / f"mnt-{who}"
    target.mkdir()
    code = (
        "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
        "r = libc.ptrace(0, 0, 0, 0); print('ptrace', r, os.strerror(ctypes.get_errno())); "
        f"r = libc.mount(b'none', b'{target}', b'tmpfs', 0, None); print('mount', r, os.strerror(ctypes.get_errno()))"
    )
    start = confined if who == "operator" else agents_session
    try:
        screen = joined(start(daemon, base / "project", f'{PYTHON} -I -S -c "{code}"'))
    finally:
        if os.path.ismount(target):
            subprocess.run(["umount", "-l", str(target)], check=False)
    assert "ptrace -1 Operation not permitted" in screen, screen
    assert "mount -1 Operation not permitted" in screen, screen


def test_only_the_operator_can_start_an_unconfined_session_and_the_list_says_which(daemon, place):
    base, _ = place
    with daemon.agent() as agent, pytest.raises(RPCError, match="operator"):
        agent.call("sessions.new", {"argv": ["true"], "cwd": str(base / "project"), "unconfined": True})
    with daemon.operator() as op:
        boxed = op.call("sessions.new", {"argv": ["sleep", "5"], "cwd": str(base / "project")})["session"]
        loose = op.call(
            "sessions.new", {"argv": ["sleep", "5"], "cwd": str(base / "project"), "unconfined": True}
        )["session"]
        assert boxed["sandboxed"] is True and loose["sandboxed"] is False
        listing = daemon.cli("sessions")
        assert listing.returncode == 0, listing.stderr
        rows = {line.split()[0]: line for line in listing.stdout.splitlines()[1:]}
        assert "sandbox" in rows[boxed["id"]] and "UNCONFINED" in rows[loose["id"]]
        for sid in (boxed["id"], loose["id"]):
            op.call("sessions.kill", {"session": sid, "grace_s": 0.5})
        history = op.call("history.query", {"kinds": ["daemon"], "limit": 20})["rows"]
    assert any(f"session {loose['id']} started UNCONFINED" in r["note"] for r in history)
