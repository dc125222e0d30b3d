"""Finding 9: environment overrides that make programs run other code were not flagged,
and commands inherited the daemon's PATH (user-writable directories first).

Now the rule is inverted: a short list of inert variables (locale, terminal, colour,
CI) with plain values; every other override is the `environment` capability on its
name, which the operator decides. Commands always get the trusted PATH.
"""

from __future__ import annotations

import os
import shutil

import pytest
from support.daemon import operation, running_daemon, short_tmp, workspace
from support.fakehost import FakeHost

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.operation import parse
from console.policy import PolicyConfig
from console.policy.diff import capability_diff

W = "/home/dev/project"
HOST = FakeHost()
POLICY = PolicyConfig(workspaces=("/home/dev",))

FOUND_RISKY = [
    "GIT_EXTERNAL_DIFF",
    "GIT_PROXY_COMMAND",
    "GIT_EDITOR",
    "GIT_COMMON_DIR",
    "LESSOPEN",
    "PYTHONUSERBASE",
    "PYTHONBREAKPOINT",
    "npm_config_script_shell",
    "XDG_CONFIG_HOME",
    "ZDOTDIR",
    "MAKEFLAGS",
    "JAVA_TOOL_OPTIONS",
    "RUSTC_WRAPPER",
    "GOFLAGS",
    # and what the old list had
    "PATH",
    "LD_PRELOAD",
    "BASH_ENV",
    "HOME",
    # and names nobody listed, which is the point of an allowlist
    "CARGO_BUILD_RUSTC_WRAPPER",
    "SOME_TOOL_PLUGIN_DIR",
]


def escalations(env):
    op = parse({"kind": "process", "executable": "/usr/bin/make", "workspace_root": W, "env": env}, HOST)
    return {(i.capability.kind, i.capability.scope) for i in capability_diff(op, POLICY).escalations}


@pytest.mark.parametrize("name", FOUND_RISKY)
def test_overriding_a_variable_that_runs_code_is_an_environment_escalation(name):
    assert escalations({name: "/tmp/x"}) == {(CapabilityKind.ENVIRONMENT, name)}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LANG", "C.UTF-8"),
        ("LC_ALL", "en_US.UTF-8"),
        ("TERM", "xterm-256color"),
        ("TZ", "Europe/Paris"),
        ("NO_COLOR", "1"),
        ("CI", "true"),
        ("COLUMNS", "120"),
    ],
)
def test_inert_variables_with_plain_values_stay_within_the_ceiling(name, value):
    assert escalations({name: value}) == set()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LANG", "../../tmp/evil"),  # glibc would load a locale from that path
        ("LC_ALL", "/tmp/evil"),
        ("TERM", "../../tmp/evil"),  # ncurses would read that terminfo file
        ("TZ", ":/tmp/zoneinfo"),
        ("TZ", "/tmp/zoneinfo"),
        ("COLUMNS", "$(id)"),
        ("LC_", "x"),
    ],
)
def test_an_inert_name_with_a_path_like_value_is_not_inert(name, value):
    assert escalations({name: value}) == {(CapabilityKind.ENVIRONMENT, name)}


@pytest.fixture
def ws():
    root = workspace()
    yield root
    shutil.rmtree(root.parent, ignore_errors=True)


def test_the_daemon_asks_before_running_with_git_external_diff(ws):
    with running_daemon() as d, d.agent() as agent:
        answer = agent.submit(
            operation(ws, executable="git", args=["diff"], env={"GIT_EXTERNAL_DIFF": "./x.sh"}),
            timeout_s=0.5,
        )
        assert answer["reason"] == "approval_timeout"
        assert Capability(CapabilityKind.ENVIRONMENT, "GIT_EXTERNAL_DIFF").to_dict().items() <= (
            answer["escalations"][0].items()
        )
        assert agent.submit(operation(ws, env={"LANG": "C.UTF-8"}))["reason"] == "within_ceiling"


@pytest.mark.needs_bwrap
def test_the_childs_path_has_no_directory_an_agent_can_write_even_when_the_daemons_starts_with_one(
    ws, monkeypatch
):
    """The sandbox's PATH is the operator's toolchains (console/sandbox/toolchains.py), less
    scratch space, directories others may write and what the run can write."""
    evil = short_tmp("bin-")
    marker = ws / "ran"
    for name in ("git", "ls", "cat"):
        (evil / name).write_text(f"#!/bin/sh\necho pwned > {marker}\n")
        (evil / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{evil}:{os.environ['PATH']}")
    try:
        with running_daemon() as d:
            r = d.cli("exec", "--workspace", str(ws), "--", "sh", "-c", 'echo "PATH=$PATH"; ls >/dev/null')
            assert r.returncode == 0, r.stdout + r.stderr
            path = r.stdout.split("PATH=", 1)[1].splitlines()[0].split(":")
            assert str(evil) not in path and "/usr/bin" in path, path
            with d.operator() as op:
                assert str(evil) not in op.call("daemon.status")["sandbox"]["path"]
        assert not marker.exists()
    finally:
        shutil.rmtree(evil, ignore_errors=True)
