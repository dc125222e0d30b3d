"""The probe with the real bwrap, and what happens without a working sandbox."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from console.contract import OSHost, parse
from console.contract.outcome import OutcomeKind, State
from console.policy import authorize
from console.sandbox import SandboxConfig, SandboxUnavailable, Status, execute, prepare, probe


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    return d


def make_op(ws, argv, **fields):
    wire = {"kind": "process", "executable": argv[0], "args": list(argv[1:]), "workspace_root": str(ws)}
    wire.update(fields)
    return parse(wire, OSHost())


@pytest.mark.needs_bwrap
def test_probe_checks_the_real_sandbox():
    found = probe()
    assert found.available, found.reason
    assert found.backend == "bubblewrap"
    assert found.path == os.path.realpath(found.path)
    assert found.version.count(".") == 2
    assert found.pid_ns and found.net_ns and found.ipc_ns and found.uts_ns
    assert found.network_isolated
    assert found.seccomp  # ptrace refused inside (console/sandbox/seccomp.py)
    assert found.reason == ""
    assert json.loads(json.dumps(found.to_dict()))["available"] is True


def test_bogus_bwrap_path_is_unavailable_with_a_reason():
    found = probe("/nonexistent/bwrap")
    assert not found.available
    assert "bwrap" in found.reason
    assert not found.network_isolated


def test_a_bwrap_that_fails_is_unavailable(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'bubblewrap 0.8.0'; exit 0; fi\n"
        "echo 'bwrap: No permissions to create new namespace' >&2; exit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    found = probe(str(fake))
    assert not found.available
    assert found.version == "0.8.0"
    assert "No permissions to create new namespace" in found.reason


def test_a_bwrap_that_does_not_isolate_is_unavailable(tmp_path):
    # Runs the command without any namespace: the probe must notice from inside.
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'bubblewrap 0.8.0'; exit 0; fi\n"
        'while [ "$1" != -- ]; do shift; done; shift; exec "$@"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    found = probe(str(fake))
    assert not found.available
    assert "namespaces not separated" in found.reason


async def test_unavailable_sandbox_is_a_setup_failure(ws, tmp_path):
    unavailable = probe("/nonexistent/bwrap")
    cfg = SandboxConfig(temp_base=str(tmp_path))
    op = make_op(ws, ["/bin/true"])
    with pytest.raises(SandboxUnavailable):
        prepare(op, cfg, unavailable)
    result = await execute(op, authorize(op, "test"), cfg, unavailable)
    assert result.status is Status.NOT_STARTED
    assert result.outcome.state is State.FAILED
    assert result.outcome.kind is OutcomeKind.SANDBOX_SETUP_FAILURE
    assert result.outcome.exit is not None and result.outcome.exit.code == 126
    assert "bwrap" in result.reason
    assert [p for p in Path(tmp_path).iterdir() if p.name.startswith("agent-console-run-")] == []


async def test_degraded_runs_unconfined_and_says_so(ws, tmp_path):
    unavailable = probe("/nonexistent/bwrap")
    cfg = SandboxConfig(temp_base=str(tmp_path), allow_degraded=True)
    ok = make_op(ws, ["/bin/sh", "-c", "echo ran"])
    result = await execute(ok, authorize(ok, "test"), cfg, unavailable)
    assert result.outcome.state is State.COMPLETED
    assert result.outcome.kind is OutcomeKind.SUCCESS
    assert result.stdout.head == b"ran\n"
    assert result.enforcement.degraded
    assert result.outcome.enforcement.degraded
    assert "bwrap" in result.enforcement.downgrade_reason

    failing = make_op(ws, ["/bin/sh", "-c", "exit 4"])
    result = await execute(failing, authorize(failing, "test"), cfg, unavailable)
    assert result.outcome.state is State.FAILED
    assert result.outcome.kind is OutcomeKind.ENFORCEMENT_DEGRADED
    assert result.exit_code == 4


async def test_unconfined_exit_codes_and_signals_are_told_apart(ws, tmp_path):
    unavailable = probe("/nonexistent/bwrap")
    cfg = SandboxConfig(temp_base=str(tmp_path), allow_degraded=True)
    for script, expected in (
        ("exit 130", (Status.EXITED, 130, "")),
        ("kill -TERM $$", (Status.SIGNALED, 143, "SIGTERM")),
    ):
        op = make_op(ws, ["/bin/sh", "-c", script])
        result = await execute(op, authorize(op, "test"), cfg, unavailable)
        assert (result.status, result.exit_code, result.signal) == expected
