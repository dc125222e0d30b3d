"""`agent-console run`: an agent CLI confined, attached to the operator's terminal.

Driven in a real PTY, as an operator's terminal would be: what the program prints comes
back, keys go to it, its exit status is the command's; Ctrl-] detaches and leaves it
running. Inside: the workspace writable, the rest of the home and the console's state
absent, the agent socket there (its hook keeps asking, as the agent of its session).
Also the sandbox's PATH: the operator's toolchains, never a directory the agent writes.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest
from ptyprocess import PtyProcess
from support.daemon import running_daemon

from console.client import RPCError

pytestmark = pytest.mark.needs_bwrap

PYTHON = os.path.realpath(sys.executable)


@pytest.fixture(scope="module")
def place():
    """A home with secrets, a project in /srv, and a toolchain outside the system's PATH."""
    base = Path("/srv") / f"ac-run-{secrets.token_hex(4)}"
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN PRIVATE KEY-----\n")
    (home / ".bashrc").write_text("# the operator's\n")
    project = base / "project"
    project.mkdir()
    tools = base / "toolchain" / "bin"
    tools.mkdir(parents=True)
    tool = tools / "ac-only-here"
    tool.write_text("#!/bin/sh\necho toolchain-ran\n")
    tool.chmod(0o755)
    loose = base / "loose-bin"
    loose.mkdir()
    (loose / "ac-loose").write_text("#!/bin/sh\necho loose-ran\n")
    (loose / "ac-loose").chmod(0o755)
    loose.chmod(0o777)  # anyone could drop a `git` here: not a toolchain
    try:
        yield base, home, project, tools, loose
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def daemon(place):
    _, home, _, tools, loose = place
    env = {
        "HOME": str(home),
        "PATH": f"{tools}:{loose}:{os.environ.get('PATH', '/usr/bin:/bin')}",
    }
    runtime = os.path.realpath(sys.base_prefix)
    with running_daemon(f'approval_timeout_s = 30\nreadable = ["{runtime}"]\n', env=env) as d:
        yield d


def run_in_pty(daemon, *argv: str, keys: bytes = b"", timeout_s: float = 30) -> tuple[int, str]:
    """`agent-console run …` on a real terminal; (its exit status, what the terminal showed)."""
    home = daemon.env["HOME"] if daemon.env else os.environ["HOME"]
    env = {**os.environ, "HOME": home, "TERM": "xterm-256color", "MARKER_FROM_TERMINAL": "passed-on"}
    proc = PtyProcess.spawn(
        [sys.executable, "-m", "console", "run", "--state-dir", str(daemon.state_dir), *argv],
        env=env,
        dimensions=(30, 100),
    )
    out = b""
    deadline = time.monotonic() + timeout_s
    sent = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        try:
            out += proc.read(65536)
        except EOFError:
            break
        if keys and not sent and b"READY" in out:
            proc.write(keys)
            sent = True
    if proc.isalive() and time.monotonic() >= deadline:
        proc.kill(9)
        proc.wait()
        raise AssertionError(
            f"agent-console run did not end in {timeout_s} s:\n{out.decode(errors='replace')}"
        )
    proc.wait()
    return proc.exitstatus if proc.exitstatus is not None else -1, out.decode("utf-8", "replace")


def test_run_attaches_the_terminal_and_exits_with_the_programs_status(daemon, place):
    _, home, project, _, _ = place
    script = (
        "echo hello-$((40+2)) $MARKER_FROM_TERMINAL; "
        "cat ~/.ssh/id_rsa 2>/dev/null || echo no-ssh-key; "
        "echo mine > ~/.bashrc; echo written > here.txt; "
        f"ls {daemon.loc.state_dir}/run; cat {daemon.loc.token} 2>/dev/null || echo no-token; "
        "echo READY; read line; echo got-$line; exit 3"
    )
    status, shown = run_in_pty(
        daemon, "--workspace", str(project), "--", "/bin/sh", "-c", script, keys=b"abc\r"
    )
    assert "hello-42 passed-on" in shown, shown
    assert "no-ssh-key" in shown and "PRIVATE KEY" not in shown, shown
    assert "got-abc" in shown, shown
    assert status == 3, shown
    # The workspace was writable, the home was scratch, the state dir held only the socket.
    assert (project / "here.txt").read_text() == "written\n"
    assert (home / ".bashrc").read_text() == "# the operator's\n"
    assert "agent.sock" in shown and "no-token" in shown, shown


def test_ctrl_close_bracket_detaches_and_the_session_keeps_running(daemon, place):
    _, _, project, _, _ = place
    status, shown = run_in_pty(
        daemon, "--workspace", str(project), "--", "/bin/sh", "-c", "echo READY; sleep 30", keys=b"\x1d"
    )
    assert status == 0 and "detached" in shown, shown
    sid = shown.split("detached; ")[1].split()[0]
    with daemon.operator() as op:
        info = op.call("sessions.get", {"session": sid})["session"]
        assert info["alive"] if "alive" in info else info["status"] in ("running", "idle")
        assert info["sandboxed"] is True
        op.call("sessions.kill", {"session": sid, "grace_s": 0.5})


def test_a_confined_session_says_so_from_its_first_event_to_its_end(daemon, place):
    """The list must never call a confined session UNCONFINED: not in the event that
    announces it (sent while it starts), not once it has ended."""
    _, _, project, _, _ = place
    with daemon.operator(timeout_s=30) as listener, daemon.operator() as op:
        listener.call("subscribe", {"topics": ["sessions"]})
        params = {"argv": ["/bin/sh", "-c", "exit 0"], "cwd": str(project)}
        sid = op.call("sessions.new", params)["session"]["id"]
        changes: dict[str, bool] = {}
        while "exited" not in changes:
            event = listener.next_event()
            if event["session"]["id"] == sid:
                changes[event["change"]] = event["session"]["sandboxed"]
        assert changes["created"] is True and changes["exited"] is True, changes
        assert op.call("sessions.get", {"session": sid})["session"]["sandboxed"] is True
        op.call("sessions.remove", {"session": sid})


def test_a_client_inside_is_the_agent_of_its_session_whatever_pid_it_names(daemon, place):
    _, _, project, _, _ = place
    code = (
        "from console.client import Client; "
        f"c = Client.connect({str(daemon.state_dir)!r}, role='agent', agent_pid=1); "
        "import json; print('HELLO', json.dumps(c.hello['agent']))"
    )
    status, shown = run_in_pty(daemon, "--workspace", str(project), "--", sys.executable, "-I", "-c", code)
    assert status == 0, shown
    agent = json.loads(shown.split("HELLO ", 1)[1].splitlines()[0])
    assert agent["bound_by"] == "sandbox", agent
    status, again = run_in_pty(daemon, "--workspace", str(project), "--", sys.executable, "-I", "-c", code)
    other = json.loads(again.split("HELLO ", 1)[1].splitlines()[0])
    assert other["id"] != agent["id"]  # each confined session is an agent of its own


def test_a_confined_agent_redeems_its_own_tickets_and_nobody_else_can(daemon, place):
    """Inside, the runtime directory (and so a ticket's secret file) is not there: the
    ticket's id redeems, for the session's own identity only."""
    _, _, project, _, _ = place
    state = str(daemon.state_dir)
    code = (
        "import json, shlex, subprocess\n"
        "from console.client import Client\n"
        f"c = Client.connect({state!r}, role='agent')\n"
        "def hold(word):\n"
        "    op = {'kind': 'process', 'executable': '/bin/echo', 'args': [word],"
        f" 'workspace_root': {str(project)!r}}}\n"
        "    return c.call('operation.hold', {'operation': op})\n"
        "used, kept = hold('ran-by-its-ticket'), hold('kept-ticket-output')\n"
        "r = subprocess.run(shlex.split(used['command']), capture_output=True, text=True)\n"
        "print('RAN', r.returncode, r.stdout.strip(), r.stderr.strip()[:300])\n"
        "print('KEPT', kept['ticket'], c.hello['agent']['id'], c.hello['agent']['secret'], 'END')\n"
    )
    status, shown = run_in_pty(daemon, "--workspace", str(project), "--", sys.executable, "-I", "-c", code)
    assert status == 0, shown
    assert "RAN 0 ran-by-its-ticket" in shown, shown
    kept, agent_id, agent_secret = shown.split("KEPT ", 1)[1].split(" END", 1)[0].split()
    assert not (daemon.state_dir / "run" / "tickets" / kept).exists()  # no secret to leave behind

    # Its identity, taken outside by its secret: the id alone is not enough out here.
    with daemon.agent() as outside:
        outside.call("hello", {"agent_id": agent_id, "agent_secret": agent_secret})
        with pytest.raises(RPCError) as refused:
            outside.call("operation.run", {"ticket": kept, "stream": False})
        assert "REQUEST_ID:SECRET" in refused.value.message, refused.value

    # The operator's own shell (another identity) names the same id: nothing runs.
    r = daemon.cli("exec", "--ticket", kept)
    assert r.returncode != 0 and "nothing ran" in r.stderr, r.stderr
    assert "kept-ticket-output" not in r.stdout
    # Nor from another confined session, which is another agent.
    redeem = [sys.executable, "-I", "-m", "console", "exec", "--ticket", kept, "--state-dir", state]
    status, other = run_in_pty(daemon, "--workspace", str(project), "--", *redeem)
    assert status != 0 and "nothing ran" in other and "kept-ticket-output" not in other, other


def test_the_sandbox_path_is_the_operators_toolchains_not_a_writable_dir(daemon, place):
    """Before, sandboxed commands got a fixed system PATH: a toolchain's tool was not found."""
    _, _, project, tools, loose = place
    with daemon.operator() as op:
        sandbox = op.call("daemon.status")["sandbox"]
    assert str(tools) in sandbox["path"] and str(loose) not in sandbox["path"], sandbox["path"]
    status = daemon.cli("daemon", "status")
    assert f"PATH        {tools}:" in status.stdout, status.stdout
    with daemon.agent() as agent:
        ran = agent.call(
            "operation.exec",
            {
                "operation": {
                    "kind": "process",
                    "executable": "ac-only-here",
                    "workspace_root": str(project),
                },
                "stream": False,
            },
        )
        assert ran["decision"]["verdict"] == "allow", ran
        assert ran["result"]["stdout"]["head"] == "toolchain-ran\n", ran["result"]
        with pytest.raises(RPCError) as missing:
            agent.call(
                "operation.exec",
                {"operation": {"kind": "process", "executable": "ac-loose", "workspace_root": str(project)}},
            )
        assert "executable_not_found" in str(missing.value.data), missing.value


def test_the_policy_path_replaces_the_operators(place):
    _, home, _, tools, _ = place
    mode = stat.S_IMODE(os.stat(tools).st_mode)
    policy = 'approval_timeout_s = 30\nsandbox = { path = ["/usr/bin", "/bin"] }\n'
    with running_daemon(policy, env={"HOME": str(home), "PATH": f"{tools}:/usr/bin:/bin"}) as d:
        with d.operator() as op:
            sandbox = op.call("daemon.status")["sandbox"]
        assert sandbox["path"] == ["/usr/bin"] or sandbox["path"][0] == "/usr/bin", sandbox
        assert str(tools) not in sandbox["path"] and sandbox["path_source"] == "policy [sandbox] path"
    assert stat.S_IMODE(os.stat(tools).st_mode) == mode


def test_run_refuses_a_home_as_its_workspace_and_names_the_way_out(daemon, place):
    _, home, _, _, _ = place
    r = daemon.cli("run", "--detach", "--workspace", str(home), "--", "/bin/true")
    assert r.returncode == 2, r.stderr
    assert "a home directory (or one containing homes) cannot be a workspace" in r.stderr, r.stderr
    assert "name the project directory inside it" in r.stderr and "(workspace_is_home)" in r.stderr


def test_a_program_that_ends_before_the_terminal_is_attached_still_ends_the_command(daemon, place):
    """The end can come with any answer (the attach's, the first resize's): the command
    must not wait for more."""
    _, _, project, _, _ = place
    for _ in range(5):
        status, shown = run_in_pty(
            daemon, "--workspace", str(project), "--", "/bin/echo", "quick", timeout_s=15
        )
        assert status == 0 and "quick" in shown, shown
