"""Denials recognised in output, and only where the boundary agrees with the text."""

from __future__ import annotations

import dataclasses

import pytest

from console.contract import OSHost, parse
from console.contract.host import DEFAULT_TRUSTED_PATH
from console.sandbox import SandboxConfig, prepare, probe
from console.sandbox.diagnostics import MAX_DENIALS, recognise
from console.sandbox.environment import child_environment
from console.sandbox.tempdir import PrivateTempRoot

pytestmark = pytest.mark.needs_bwrap


@pytest.fixture(scope="module")
def sandbox_probe():
    found = probe()
    assert found.available, found.reason
    return found


@pytest.fixture
def layout(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    writable = tmp_path / "out"
    writable.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    return ws, writable, state


@pytest.fixture
def prepared(layout, tmp_path, sandbox_probe):
    ws, _, state = layout

    def make(**fields):
        wire = {"kind": "process", "executable": "/bin/true", "workspace_root": str(ws), **fields}
        op = parse(wire, OSHost())
        cfg = SandboxConfig(hidden_paths=(str(state),), temp_base=str(tmp_path))
        p = prepare(op, cfg, sandbox_probe)
        made.append(p)
        return p

    made: list = []
    yield make
    for p in made:
        p.close()


def kinds(denials):
    return [(d.capability.kind.value, d.capability.scope) for d in denials]


def test_read_only_workspace(prepared, layout):
    ws, _, _ = layout
    p = prepared()
    out = recognise([b"sh: 1: cannot create made-here: Read-only file system\n"], p, str(ws))
    assert kinds(out) == [("workspace_write", str(ws))]
    assert out[0].source.value == "platform_sandbox"
    assert out[0].next_action.value == "request_approval"


def test_outside_path_in_node_form(prepared, layout):
    ws, _, _ = layout
    p = prepared(workspace_access="write")
    out = recognise([b"Error: EROFS: read-only file system, mkdir '/opt/cache/x'\n"], p, str(ws))
    assert kinds(out) == [("workspace_write", "/opt/cache/x")]


def test_text_the_boundary_contradicts_is_not_a_denial(prepared, layout):
    ws, writable, _ = layout
    p = prepared(workspace_access="write", write_dirs=[str(writable)])
    lies = (
        f"touch: cannot touch '{writable}/f': Read-only file system\n"
        f"EPERM: operation not permitted, mkdir '{ws}/sub'\n"
        f"OSError: [Errno 30] Read-only file system: '{p.temp_root.tmp}/x'\n"
    ).encode()
    assert recognise([lies], p, str(ws)) == []


def test_protected_path(prepared, layout):
    ws, _, _ = layout
    p = prepared(workspace_access="write")
    out = recognise([b"/bin/sh: 1: cannot create .git/hooks/pre-commit: Read-only file system\n"], p, str(ws))
    assert kinds(out) == [("protected_metadata", str(ws / ".git" / "hooks"))]


def test_hidden_paths_are_not_recoverable(prepared, layout):
    ws, _, state = layout
    p = prepared()
    (denial,) = recognise([f"cannot create {state}/x: Read-only file system\n".encode()], p, str(ws))
    assert not denial.recoverable
    assert denial.next_action.value == "none"
    assert denial.capability.scope == ""


def test_network_only_when_isolated(prepared, layout):
    ws, _, _ = layout
    lines = [
        b"OSError: [Errno 101] Network is unreachable\n",
        b"curl: (6) Could not resolve host: example.com\n",
    ]
    out = recognise(lines, prepared(), str(ws))
    assert kinds(out) == [("external_network", "")]
    # A brokered run hears the broker's own reason (a 403); its errors are not the sandbox's.
    assert recognise(lines, dataclasses.replace(prepared(), brokered=True), str(ws)) == []


def test_permission_denied_inside_the_workspace_is_file_modes(prepared, layout):
    ws, _, _ = layout
    p = prepared()
    assert recognise([f"cat: {ws}/secret: Permission denied\n".encode()], p, str(ws)) == []
    out = recognise([b"mkdir: cannot create directory '/srv/data': Permission denied\n"], p, str(ws))
    assert kinds(out) == [("workspace_write", "/srv/data")]


def test_scopes_stay_short_and_printable(prepared, layout):
    ws, _, _ = layout
    p = prepared()
    long_path = "/opt/" + "a" * 500
    out = recognise([f"touch: cannot touch '{long_path}': Read-only file system\n".encode()], p, str(ws))
    assert kinds(out) == [("workspace_write", "")]
    out = recognise([b"touch: cannot touch '/opt/\x1b[31mred': Read-only file system\n"], p, str(ws))
    assert kinds(out) == [("workspace_write", "")]


def test_bounded_and_deduplicated(prepared, layout):
    ws, _, _ = layout
    p = prepared()
    many = b"".join(f"touch: cannot touch '/opt/{i}': Read-only file system\n".encode() for i in range(50))
    out = recognise([many, many], p, str(ws))
    assert len(out) == MAX_DENIALS
    assert len(set(kinds(out))) == MAX_DENIALS


def test_unconfined_runs_have_no_sandbox_denials(layout, tmp_path):
    ws, _, _ = layout
    op = parse({"kind": "process", "executable": "/bin/true", "workspace_root": str(ws)}, OSHost())
    cfg = SandboxConfig(temp_base=str(tmp_path), allow_degraded=True)
    with prepare(op, cfg, probe("/nonexistent/bwrap")) as p:
        assert not p.sandboxed
        assert recognise([b"touch: cannot touch '/x': Read-only file system\n"], p, str(ws)) == []


def test_environment_allowlist(tmp_path):
    daemon = {
        "PATH": "/home/me/bin:/usr/bin:/bin",  # never inherited: children get the trusted PATH
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TERM": "xterm",
        "GITHUB_TOKEN": "ghp_secret",
        "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
        "TMPDIR": "/var/daemon-tmp",
    }
    with PrivateTempRoot(str(tmp_path)) as root:
        env = child_environment(daemon, (("MODE", "ci"), ("TMPDIR", "/elsewhere")), root)
        assert env == {
            "LANG": "C.UTF-8",
            "LC_ALL": "C",
            "MODE": "ci",
            "PATH": DEFAULT_TRUSTED_PATH,
            "TEMP": root.tmp,
            "TERM": "xterm",
            "TMP": root.tmp,
            "TMPDIR": root.tmp,
            "XDG_CACHE_HOME": root.path + "/cache",
            "XDG_RUNTIME_DIR": root.path,
        }
        assert list(env) == sorted(env)
        with pytest.raises(ValueError, match="invalid name"):
            child_environment({}, (("A=B", "x"),), root)
        with pytest.raises(ValueError, match="NUL"):
            child_environment({}, (("A", "x\x00y"),), root)
