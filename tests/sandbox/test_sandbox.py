"""The executor against the real bubblewrap: every boundary is tried from inside."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest
from support.paths import REPO

from console.contract import OSHost, parse
from console.contract.host import DEFAULT_TRUSTED_PATH
from console.contract.outcome import OutcomeKind, State
from console.policy import authorize
from console.policy.patterns import ProtectedPaths
from console.sandbox import (
    OutputChunk,
    SandboxConfig,
    Status,
    Stream,
    Unauthorized,
    execute,
    prepare,
    probe,
)

pytestmark = pytest.mark.needs_bwrap

PY = os.path.realpath(sys.executable)
HOST = OSHost()


@pytest.fixture(scope="module")
def sandbox_probe():
    found = probe()
    assert found.available, found.reason
    return found


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    return d


def _real_dir(prefix):
    """A real directory outside /tmp (which is private inside the sandbox anyway)."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else str(Path.home())
    return tempfile.TemporaryDirectory(dir=base, prefix=prefix)


@pytest.fixture
def state_dir():
    with _real_dir("agent-console-state-") as name:
        d = Path(name)
        d.chmod(0o700)
        (d / "operator.token").write_text("operator-token-123")
        (d / "history.sqlite3").write_bytes(b"SQLite format 3\x00")
        (d / "run").mkdir()
        yield d


@pytest.fixture
def cfg(tmp_path, state_dir):
    base = tmp_path / "tmpbase"
    base.mkdir(mode=0o700)
    env = {
        "PATH": DEFAULT_TRUSTED_PATH,
        "LANG": "C.UTF-8",
        "HOME": str(tmp_path),
        "SECRET_TOKEN": "hunter2-daemon-secret",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-value",
    }
    return SandboxConfig(
        hidden_paths=(str(state_dir), str(state_dir / "run")),
        temp_base=str(base),
        inherit_env=env,
        term_grace_s=0.5,
        drain_grace_s=1.0,
    )


def make_op(ws, argv, **fields):
    wire = {"kind": "process", "executable": argv[0], "args": list(argv[1:]), "workspace_root": str(ws)}
    wire.update(fields)
    return parse(wire, HOST)


def py(ws, code, *args, **fields):
    return make_op(ws, [PY, "-I", "-S", "-c", code, *args], **fields)


async def run(op, cfg, sandbox_probe, **kw):
    return await execute(op, authorize(op, "test"), cfg, sandbox_probe, **kw)


def text(result):
    return result.stdout.head.decode() + result.stdout.tail.decode()


# -- network ------------------------------------------------------------------------------


@pytest.fixture
def host_server():
    """A TCP server on the host's loopback that answers every connection with `pong`."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.sendall(b"pong")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


CONNECT = """
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
print(s.recv(4).decode())
"""


async def test_host_loopback_is_unreachable_without_network(ws, cfg, sandbox_probe, host_server):
    result = await run(py(ws, CONNECT, str(host_server)), cfg, sandbox_probe)
    assert result.status is Status.EXITED
    assert result.exit_code != 0
    assert b"pong" not in result.stdout.head
    assert b"ConnectionRefusedError" in result.stderr.head


async def test_network_any_without_the_egress_broker_runs_nothing(ws, cfg, sandbox_probe, host_server):
    # Network is brokered per domain (console/daemon/egress/); the host's own network
    # namespace is never shared with a sandboxed run, so without a broker nothing runs.
    result = await run(py(ws, CONNECT, str(host_server), network="any"), cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.SANDBOX_SETUP_FAILURE
    assert "egress broker" in result.reason


async def test_unreachable_network_yields_a_network_denial(ws, cfg, sandbox_probe):
    code = "import socket; socket.create_connection(('192.0.2.1', 80), timeout=3)"
    result = await run(py(ws, code), cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.APPLICATION_FAILURE
    assert b"Network is unreachable" in result.stderr.head
    denial = result.outcome.denial
    assert denial is not None
    assert denial.capability.kind.value == "external_network"
    assert denial.source.value == "platform_sandbox"
    assert denial.next_action.value == "request_approval"
    assert denial.recoverable


# -- filesystem ---------------------------------------------------------------------------


@pytest.fixture
def outside():
    """A real directory outside the workspace and outside /tmp."""
    with _real_dir("agent-console-outside-") as d:
        yield Path(d)


async def test_write_outside_the_workspace_fails_with_a_denial(ws, cfg, sandbox_probe, outside):
    target = outside / "escaped"
    op = make_op(ws, ["/bin/sh", "-c", f"echo x > {target}"], workspace_access="write")
    result = await run(op, cfg, sandbox_probe)
    assert result.outcome.state is State.FAILED
    assert result.outcome.kind is OutcomeKind.APPLICATION_FAILURE
    assert not target.exists()
    # Outside the workspace the host is not there at all (an allowlist: surface.py).
    assert b"Directory nonexistent" in result.stderr.head
    (denial,) = result.denials
    assert denial.capability.kind.value == "workspace_write"
    assert denial.capability.scope == str(target)
    assert result.outcome.denial == denial


async def test_approved_write_dir_is_writable(ws, cfg, sandbox_probe, outside):
    target = outside / "allowed"
    op = make_op(ws, ["/bin/sh", "-c", f"echo x > {target}"], write_dirs=[str(outside)])
    result = await run(op, cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.SUCCESS
    assert target.read_text() == "x\n"


async def test_private_tmp_writes_do_not_reach_the_host(ws, cfg, sandbox_probe, tmp_path):
    target = tmp_path / "from-inside"
    result = await run(
        make_op(ws, ["/bin/sh", "-c", f"mkdir -p {tmp_path} && echo x > {target}"]), cfg, sandbox_probe
    )
    assert result.outcome.kind is OutcomeKind.SUCCESS
    assert not target.exists()


async def test_workspace_write_needs_write_access(ws, cfg, sandbox_probe):
    argv = ["/bin/sh", "-c", "echo data > made-here"]
    denied = await run(make_op(ws, argv), cfg, sandbox_probe)
    assert denied.outcome.kind is OutcomeKind.APPLICATION_FAILURE
    assert not (ws / "made-here").exists()
    assert denied.outcome.denial is not None
    assert denied.outcome.denial.capability.kind.value == "workspace_write"
    assert denied.outcome.denial.capability.scope == str(ws)

    allowed = await run(make_op(ws, argv, workspace_access="write"), cfg, sandbox_probe)
    assert allowed.outcome.kind is OutcomeKind.SUCCESS
    assert (ws / "made-here").read_text() == "data\n"


@pytest.fixture
def repo(ws):
    hooks = ws / ".git" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit.sample").write_text("#!/bin/sh\n")
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "pkg").mkdir()
    (ws / "pkg" / ".env").write_text("TOKEN=1\n")
    return ws


async def test_git_hooks_are_read_only_without_protected_metadata(repo, cfg, sandbox_probe):
    op = make_op(repo, ["/bin/sh", "-c", "echo evil > .git/hooks/pre-commit"], workspace_access="write")
    result = await run(op, cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.APPLICATION_FAILURE
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    denial = result.outcome.denial
    assert denial is not None
    assert denial.capability.kind.value == "protected_metadata"
    assert denial.capability.scope == str(repo / ".git" / "hooks")


async def test_other_protected_paths_stay_read_only_but_the_rest_is_writable(repo, cfg, sandbox_probe):
    script = (
        "echo '[evil]' >> .git/config; echo A=2 >> pkg/.env; "
        "mv .git .git-moved; rm -rf .git/hooks; "
        "echo ok > pkg/code.py; echo ref > .git/HEAD; true"
    )
    result = await run(make_op(repo, ["/bin/sh", "-c", script], workspace_access="write"), cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.SUCCESS
    assert (repo / ".git" / "config").read_text() == "[core]\n"
    assert (repo / "pkg" / ".env").read_text() == "TOKEN=1\n"
    assert (repo / ".git" / "hooks" / "pre-commit.sample").exists()
    assert not (repo / ".git-moved").exists()
    assert (repo / "pkg" / "code.py").read_text() == "ok\n"
    assert (repo / ".git" / "HEAD").read_text() == "ref\n"


async def test_git_hooks_are_writable_with_protected_metadata(repo, cfg, sandbox_probe):
    op = make_op(
        repo,
        ["/bin/sh", "-c", "echo hook > .git/hooks/pre-commit"],
        workspace_access="write",
        capabilities=[{"kind": "protected_metadata", "scope": str(repo / ".git" / "hooks")}],
    )
    result = await run(op, cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.SUCCESS
    assert (repo / ".git" / "hooks" / "pre-commit").read_text() == "hook\n"
    # The scope was the hooks directory: the config stays protected.
    prepared = prepare(op, cfg, sandbox_probe)
    try:
        assert str(repo / ".git" / "config") in prepared.protected
        assert str(repo / ".git" / "hooks") not in prepared.protected
    finally:
        prepared.close()


async def test_console_state_is_invisible_inside(ws, cfg, sandbox_probe, state_dir):
    script = f"ls -A {state_dir}; cat {state_dir}/operator.token; cat {state_dir}/history.sqlite3; echo > {state_dir}/x"
    result = await run(make_op(ws, ["/bin/sh", "-c", script]), cfg, sandbox_probe)
    assert result.exit_code != 0
    assert b"operator-token-123" not in result.stdout.head
    assert b"SQLite" not in result.stdout.head
    assert result.stdout.head.strip() == b""  # the directory is empty inside
    assert b"No such file or directory" in result.stderr.head
    assert not (state_dir / "x").exists()


async def test_hidden_dir_inside_a_writable_workspace_stays_hidden(ws, tmp_path, sandbox_probe):
    state = ws / ".agent-console"
    state.mkdir()
    (state / "operator.token").write_text("operator-token-456")
    cfg = SandboxConfig(hidden_paths=(str(state),), temp_base=str(tmp_path))
    script = "cat .agent-console/operator.token; echo planted > .agent-console/operator.token"
    result = await run(make_op(ws, ["/bin/sh", "-c", script], workspace_access="write"), cfg, sandbox_probe)
    assert b"operator-token-456" not in result.stdout.head
    assert (state / "operator.token").read_text() == "operator-token-456"


# -- environment -------------------------------------------------------------------------


async def test_daemon_secrets_are_absent_inside(ws, cfg, sandbox_probe):
    op = make_op(ws, ["/usr/bin/env"], env={"PROJECT_MODE": "test"})
    result = await run(op, cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.SUCCESS
    env = dict(line.split("=", 1) for line in text(result).splitlines())
    assert "hunter2-daemon-secret" not in text(result)
    assert "aws-secret-value" not in text(result)
    assert "SECRET_TOKEN" not in env
    assert env["PROJECT_MODE"] == "test"
    assert env["LANG"] == "C.UTF-8"
    assert env["PATH"] == DEFAULT_TRUSTED_PATH
    assert env["TMPDIR"].startswith(cfg.temp_base)
    assert env["XDG_CACHE_HOME"].startswith(cfg.temp_base)


async def test_private_temp_root_is_writable_and_removed_afterwards(ws, cfg, sandbox_probe):
    script = 'mkdir -p "$XDG_CACHE_HOME/app" && echo cache > "$XDG_CACHE_HOME/app/c" && touch "$XDG_RUNTIME_DIR/sock" && mktemp && ln -s / "$TMPDIR/root-link" && echo "$TMPDIR"'
    result = await run(make_op(ws, ["/bin/sh", "-c", script]), cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.SUCCESS
    tmpdir = text(result).splitlines()[-1]
    assert tmpdir.startswith(cfg.temp_base)
    assert result.temp_root_removed
    assert os.listdir(cfg.temp_base) == []


# -- lifecycle ----------------------------------------------------------------------------


def _marked(marker):
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if marker in (proc.info["cmdline"] or []):
            found.append(proc)
    return found


def _gone(marker, within_s: float = 5.0) -> list:
    """The marked processes still there after ``within_s``: SIGKILL takes effect as the
    kernel gets to each process, so on a loaded machine one can still be exiting (no
    longer running anything of its own) when the run returns; it must be gone soon."""
    deadline = time.monotonic() + within_s
    while (left := _marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


# Starts three sleeps carrying the marker — a child, a child in its own session and an
# orphaned grandchild in its own session — and says "started" once all have exec'd
# (Popen returns only after exec). It ignores SIGTERM, so only SIGKILL ends it.
TREE = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
marker = sys.argv[1][1:]
subprocess.Popen(["/bin/sleep", marker])
subprocess.Popen(["/bin/sleep", marker], start_new_session=True)
spawn = "import subprocess, sys; subprocess.Popen(['/bin/sleep', sys.argv[1]], start_new_session=True)"
subprocess.run([sys.executable, "-I", "-S", "-c", spawn, marker], check=True)
print("started", flush=True)
time.sleep(3600)
"""


async def test_timeout_kills_the_whole_tree(ws, cfg, sandbox_probe):
    # Its own: another copy of the suite may run this test at the same time.
    marker = f"987.{secrets.randbelow(10**6):06d}"
    seen: list[int] = []

    def on_output(chunk: OutputChunk) -> None:
        if b"started" in chunk.data:
            seen.extend(p.pid for p in _marked(marker))

    op = py(ws, TREE, "M" + marker, timeout_ms=3000)
    result = await run(op, cfg, sandbox_probe, on_output=on_output)
    assert result.stdout.head == b"started\n"
    assert result.status is Status.TIMED_OUT
    assert result.outcome.kind is OutcomeKind.TIMED_OUT
    assert result.outcome.state is State.FAILED
    assert len(seen) == 3
    assert [p for p in seen if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"] == []
    assert _gone(marker) == []


async def test_output_limit_stops_the_command(ws, cfg, sandbox_probe):
    chunks: list[OutputChunk] = []
    code = "import sys\nwhile True: sys.stdout.write('y' * 65536)"
    op = py(ws, code, output={"capture_bytes": 1000, "max_bytes": 100_000})
    result = await run(op, cfg, sandbox_probe, on_output=chunks.append)
    assert result.status is Status.OUTPUT_LIMIT
    assert result.outcome.kind is OutcomeKind.OUTPUT_LIMIT
    assert sum(len(c.data) for c in chunks) == 100_000
    assert result.stdout.total_bytes >= 100_000
    assert result.stdout.truncated
    assert len(result.stdout.head) + len(result.stdout.tail) == 1000


async def test_missing_executable_inside_the_sandbox(ws, cfg, sandbox_probe, tmp_path):
    # It exists on the host, but in /tmp, which is private inside the sandbox (and not in
    # $HOME = tmp_path, whose approved executables are bound back).
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    script = elsewhere / "tool.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o755)
    result = await run(make_op(ws, [str(script)]), cfg, sandbox_probe)
    assert result.status is Status.NOT_STARTED
    assert result.outcome.kind is OutcomeKind.EXECUTABLE_NOT_FOUND
    assert result.exit_code == 127

    gone = dataclasses.replace(make_op(ws, ["/bin/true"]), executable="/nonexistent/tool")
    result = await run(gone, cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.EXECUTABLE_NOT_FOUND


async def test_command_printing_a_bwrap_line_keeps_its_output(ws, cfg, sandbox_probe):
    op = make_op(
        ws, ["/bin/sh", "-c", "echo out; echo 'bwrap: execvp x: No such file or directory' >&2; exit 1"]
    )
    result = await run(op, cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.APPLICATION_FAILURE
    assert result.exit_code == 1


async def test_stdin_round_trip(ws, cfg, sandbox_probe):
    data = bytes(range(256)) * 4096  # 1 MiB, every byte value
    op = make_op(ws, ["/bin/cat"], stdin=base64.b64encode(data).decode(), output={"capture_bytes": 2 << 20})
    result = await run(op, cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.SUCCESS
    assert result.stdout.head == data
    assert not result.stdout.truncated


async def test_head_tail_and_offsets(ws, cfg, sandbox_probe):
    code = "import sys\nfor i in range(20000): sys.stdout.write('%05d\\n' % i)\nsys.stderr.write('e' * 10)"
    chunks: list[OutputChunk] = []
    op = py(ws, code, output={"capture_bytes": 1000, "max_bytes": 1 << 20})
    result = await run(op, cfg, sandbox_probe, on_output=chunks.append)
    expected = "".join(f"{i:05d}\n" for i in range(20000)).encode()
    assert result.stdout.total_bytes == len(expected)
    assert result.stdout.truncated
    assert result.stdout.head == expected[:500]
    assert result.stdout.tail == expected[-500:]
    assert result.stdout.tail_offset == len(expected) - 500
    assert result.stderr.head == b"e" * 10 and not result.stderr.truncated
    rebuilt = {Stream.STDOUT: b"", Stream.STDERR: b""}
    for chunk in chunks:
        assert chunk.offset == len(rebuilt[chunk.stream])
        rebuilt[chunk.stream] += chunk.data
    assert rebuilt[Stream.STDOUT] == expected
    json.dumps(result.to_dict())


async def test_cancel(ws, cfg, sandbox_probe):
    cancel = asyncio.Event()

    def on_output(chunk: OutputChunk) -> None:
        cancel.set()

    op = make_op(ws, ["/bin/sh", "-c", "echo go; exec sleep 30"], timeout_ms=20_000)
    result = await run(op, cfg, sandbox_probe, on_output=on_output, cancel=cancel)
    assert result.status is Status.CANCELLED
    assert result.outcome.state is State.CANCELLED
    assert result.outcome.kind is OutcomeKind.CANCELLED


async def test_cancelling_the_task_kills_the_command(ws, cfg, sandbox_probe):
    marker = "876.54321"
    started = asyncio.Event()
    op = py(ws, TREE, "M" + marker, timeout_ms=20_000)
    task = asyncio.create_task(run(op, cfg, sandbox_probe, on_output=lambda c: started.set()))
    await started.wait()
    assert len(_marked(marker)) == 3
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _gone(marker) == []
    assert os.listdir(cfg.temp_base) == []


async def test_exit_code_and_signal(ws, cfg, sandbox_probe):
    result = await run(make_op(ws, ["/bin/sh", "-c", "exit 3"]), cfg, sandbox_probe)
    assert (result.status, result.exit_code, result.signal) == (Status.EXITED, 3, "")
    assert result.outcome.exit is not None and result.outcome.exit.code == 3
    result = await run(make_op(ws, ["/bin/sh", "-c", "kill -KILL $$"]), cfg, sandbox_probe)
    assert (result.status, result.exit_code, result.signal) == (Status.SIGNALED, 137, "SIGKILL")
    assert result.outcome.kind is OutcomeKind.APPLICATION_FAILURE


async def test_authorization_must_match(ws, cfg, sandbox_probe):
    op = make_op(ws, ["/bin/true"])
    other = make_op(ws, ["/bin/false"])
    with pytest.raises(Unauthorized):
        await execute(op, authorize(other, "test"), cfg, sandbox_probe)


async def test_workspace_inside_a_hidden_dir_is_a_setup_failure(ws, tmp_path, sandbox_probe):
    cfg = SandboxConfig(hidden_paths=(str(tmp_path),), temp_base="/tmp")
    result = await run(make_op(ws, ["/bin/true"]), cfg, sandbox_probe)
    assert result.status is Status.NOT_STARTED
    assert result.outcome.kind is OutcomeKind.SANDBOX_SETUP_FAILURE
    assert "hides" in result.reason


async def test_unrestricted_runs_unconfined_with_the_minimal_environment(ws, cfg, sandbox_probe, outside):
    target = outside / "unrestricted"
    op = make_op(
        ws,
        ["/bin/sh", "-c", f'echo x > {target}; echo "$SECRET_TOKEN|$TMPDIR"'],
        capabilities=[{"kind": "unrestricted"}],
    )
    result = await run(op, cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.SUCCESS
    assert target.read_text() == "x\n"
    secret, tmpdir = text(result).strip().split("|")
    assert secret == ""
    assert tmpdir.startswith(cfg.temp_base)
    assert result.enforcement.level == "unrestricted"
    assert not result.enforcement.degraded


async def test_protected_patterns_come_from_the_config(repo, tmp_path, sandbox_probe):
    cfg = SandboxConfig(temp_base=str(tmp_path), protected=ProtectedPaths(["pkg/**"]))
    op = make_op(
        repo, ["/bin/sh", "-c", "echo x > pkg/new; echo y > .git/hooks/new"], workspace_access="write"
    )
    result = await run(op, cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.SUCCESS  # the last command succeeded
    assert [(d.capability.kind.value, d.capability.scope) for d in result.denials] == [
        ("protected_metadata", str(repo / "pkg"))
    ]
    assert result.outcome.denial is None  # a success carries no outcome denial
    assert not (repo / "pkg" / "new").exists()
    assert (repo / ".git" / "hooks" / "new").read_text() == "y\n"


async def test_hidden_file_and_the_daemons_runtime_dir(ws, tmp_path, sandbox_probe):
    with _real_dir("agent-console-runtime-") as runtime, _real_dir("agent-console-token-") as other:
        (Path(runtime) / "bus").write_text("session-bus")
        token = Path(other) / "operator.token"
        token.write_text("operator-token-789")
        # The daemon's environment names its runtime dir; it is hidden even though the
        # config lists only the token file.
        cfg = SandboxConfig(
            hidden_paths=(str(token),), temp_base=str(tmp_path), inherit_env={"XDG_RUNTIME_DIR": runtime}
        )
        script = f"cat {token}; ls -A {runtime}; cat {runtime}/bus"
        result = await run(make_op(ws, ["/bin/sh", "-c", script]), cfg, sandbox_probe)
        assert b"operator-token-789" not in result.stdout.head
        assert b"session-bus" not in result.stdout.head
        assert result.stdout.head == b""
        assert token.read_text() == "operator-token-789"


def bwrap_options(prepared) -> list[str]:
    """bwrap's options, which it reads from the memfd named by ``--args``."""
    assert prepared.argv[1] == "--args"
    data = os.pread(int(prepared.argv[2]), 1 << 20, 0)
    return [a.decode() for a in data.split(b"\0")[:-1]]


def test_prepare_for_a_terminal_keeps_the_session(ws, cfg, sandbox_probe):
    op = make_op(ws, ["/bin/sh"])
    with prepare(op, cfg, sandbox_probe) as captured, prepare(op, cfg, sandbox_probe, terminal=True) as pty:
        assert "--new-session" in bwrap_options(captured)
        assert "--new-session" not in bwrap_options(pty)
        assert captured.argv[-2:] == ["--", "/usr/bin/dash"] or captured.argv[-1] == op.executable
        assert pty.env["TMPDIR"].startswith(pty.temp_root.path)
        assert captured.temp_root.path != pty.temp_root.path
    assert os.listdir(cfg.temp_base) == []


async def test_temp_roots_inside_the_hidden_state_dir(ws, sandbox_probe, state_dir):
    base = state_dir / "tmp"
    base.mkdir(mode=0o700)
    cfg = SandboxConfig(hidden_paths=(str(state_dir),), temp_base=str(base))
    script = f'echo scratch > "$TMPDIR/f" && cat "$TMPDIR/f" && ls -A {state_dir} {base}; cat {state_dir}/operator.token'
    result = await run(make_op(ws, ["/bin/sh", "-c", script]), cfg, sandbox_probe)
    lines = result.stdout.head.decode().splitlines()
    assert lines[0] == "scratch"
    assert "operator.token" not in result.stdout.head.decode()
    assert b"operator-token-123" not in result.stdout.head
    assert result.temp_root_removed
    assert os.listdir(base) == []


async def test_cancel_gives_the_command_its_grace(ws, cfg, sandbox_probe):
    cancel = asyncio.Event()
    script = "trap 'echo got-term; exit 0' TERM; echo go; sleep 30 & wait"
    op = make_op(ws, ["/bin/sh", "-c", script], timeout_ms=20_000)
    patient = dataclasses.replace(cfg, term_grace_s=30)  # ends as soon as the command does
    result = await run(op, patient, sandbox_probe, on_output=lambda c: cancel.set(), cancel=cancel)
    assert result.status is Status.CANCELLED
    assert (result.stdout.head, result.exit_code) == (b"go\ngot-term\n", 0), result.stderr.head


async def test_missing_executable_is_recognised_without_any_capture(ws, cfg, sandbox_probe, tmp_path):
    gone = dataclasses.replace(
        make_op(ws, ["/bin/true"], output={"capture_bytes": 0}), executable="/nonexistent/tool"
    )
    result = await run(gone, cfg, sandbox_probe)
    assert result.outcome.kind is OutcomeKind.EXECUTABLE_NOT_FOUND


@pytest.mark.needs_root
def test_a_sandbox_child_that_died_in_setup_is_a_setup_failure_not_a_timeout():
    """bwrap's child that fails its setup (a write dir gone) is a zombie until bwrap reaps
    it, and a zombie keeps its /proc entry: the check asked whether that entry existed and
    called the failure "did not finish its setup in time", a mount mismatch that blamed a
    swapped directory (test_bwraps_own_setup_failure_is_classified failed on it once in a
    loaded full run). Here the child is a zombie for as long as the check takes."""
    from collections import Counter

    from console.sandbox import verify

    child = subprocess.Popen(["/bin/true"])  # never waited for: it stays a zombie
    try:
        for _ in range(2000):
            with open(f"/proc/{child.pid}/status", "rb") as f:
                if b"State:\tZ" in f.read():
                    break
            threading.Event().wait(0.005)
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        os.write(info_w, b'{"child-pid": %d}\n' % child.pid)
        os.close(info_w)
        try:
            assert verify.confirm(child.pid, info_r, block_w, [], Counter(), timeout_s=5.0) is False
        finally:
            for fd in (info_r, block_r, block_w):
                os.close(fd)
    finally:
        child.wait()


@pytest.mark.needs_root
def test_a_setup_that_takes_too_long_is_said_as_such_not_as_a_swap():
    """A sandbox still setting up at the deadline (its child keeps its capabilities: a
    root process that never drops them stands for it) is refused as a timeout. It was
    a mount mismatch that blamed a directory swapped for a symlink, which a loaded
    machine made the operator read about."""
    from collections import Counter

    from console.sandbox import verify

    child = subprocess.Popen(["/bin/sleep", "30"])
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    os.write(info_w, b'{"child-pid": %d}\n' % child.pid)
    os.close(info_w)
    try:
        with pytest.raises(verify.SetupTimedOut, match="did not finish its setup in 0 s"):
            verify.confirm(child.pid, info_r, block_w, [], Counter(), timeout_s=0.2)
        assert child.wait(5) == -9  # killed: nothing of it runs
    finally:
        for fd in (info_r, block_r, block_w):
            os.close(fd)
        child.kill()
        child.wait()


def test_bwraps_own_setup_failure_is_classified(ws, cfg, sandbox_probe, outside):
    from console.sandbox.executor import _bwrap_failure

    write_dir = outside / "vanishing"
    write_dir.mkdir()
    op = make_op(ws, ["/bin/true"], write_dirs=[str(write_dir)])
    with prepare(op, cfg, sandbox_probe) as ready:
        write_dir.rmdir()  # gone between prepare and start: bwrap cannot bind it
        proc = subprocess.Popen(
            ready.argv, env=ready.env, cwd=ready.cwd, pass_fds=ready.pass_fds, stderr=subprocess.PIPE
        )
        assert ready.confirm(proc.pid) is False  # bwrap gave up during setup
        _, stderr = proc.communicate(timeout=30)
        done = subprocess.CompletedProcess(ready.argv, proc.returncode, b"", stderr)
    assert done.returncode == 1
    kind, reason = _bwrap_failure(done.stderr, len(done.stderr))
    assert kind is OutcomeKind.SANDBOX_SETUP_FAILURE
    assert reason.startswith("bwrap: ")
    execvp = b"bwrap: execvp /x: No such file or directory\n"
    assert _bwrap_failure(execvp, len(execvp))[0] is OutcomeKind.EXECUTABLE_NOT_FOUND
    assert _bwrap_failure(execvp, 10_000) is None  # more followed: the command's own output
    assert _bwrap_failure(b"bwrap: one\nbwrap: two\n", 22) is None


DAEMON = """
import asyncio, sys
from console.contract import OSHost, parse
from console.policy import authorize
from console.sandbox import SandboxConfig, execute, probe

async def main():
    ws, base, code = sys.argv[1:]
    op = parse({"kind": "process", "executable": sys.executable, "args": ["-I", "-S", "-c", code, "M%s"],
                "workspace_root": ws}, OSHost())
    show = lambda chunk: print(chunk.data.decode(), end="", flush=True)
    await execute(op, authorize(op, "test"), SandboxConfig(temp_base=base), probe(), on_output=show)

asyncio.run(main())
"""


def test_the_sandbox_dies_with_the_daemon(ws, tmp_path):
    marker = "765.4321"
    root = REPO
    daemon = subprocess.Popen(
        [sys.executable, "-c", DAEMON % marker, str(ws), str(tmp_path), TREE],
        stdout=subprocess.PIPE,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        assert daemon.stdout.readline() == b"started\n"
        inside = _marked(marker)
        assert len(inside) == 3
    finally:
        daemon.kill()
        daemon.wait()
        daemon.stdout.close()
    # Death propagates through the kernel (parent-death signal, then the namespace).
    _, alive = psutil.wait_procs(inside, timeout=10)
    assert alive == []


async def test_temp_root_swapped_for_a_symlink_during_the_run_is_not_followed(
    ws, cfg, sandbox_probe, tmp_path
):
    target = tmp_path / "precious"
    target.mkdir()
    (target / "keep").write_text("keep")
    swapped: list[str] = []

    def on_output(chunk: OutputChunk) -> None:
        root = os.path.dirname(chunk.data.decode().strip())  # $TMPDIR is <root>/tmp
        os.rename(root, root + ".moved")
        os.symlink(target, root)
        swapped.append(root)

    # The swap happens while the run is in progress, always before the clean-up.
    op = make_op(ws, ["/bin/sh", "-c", 'echo "$TMPDIR"'])
    result = await run(op, cfg, sandbox_probe, on_output=on_output)
    assert result.outcome.kind is OutcomeKind.SUCCESS
    assert swapped
    assert result.temp_root_removed is False
    assert os.path.islink(swapped[0])
    assert (target / "keep").read_text() == "keep"
