"""Forms that used to run a script with nothing bound, against the
real daemon: each binds the file that runs, what cannot be bound is shown and refuses a
standing grant, and an unreadable script is a problem, not a traceback."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading

import pytest
from support.daemon import operation, running_daemon, short_tmp, wait_for, workspace
from support.items import pending_item

from console.client import RPCError
from console.tui.render.present import PLAIN, DetailOptions, render_request

SCRIPT = b"#!/bin/sh\n. ./lib.sh\necho built\n"


@pytest.fixture(scope="module")
def ws():
    root = workspace()
    for name, data in {
        "build.sh": SCRIPT,
        "lib.sh": b"echo lib\n",
        "x.py": b"print('x')\n",
        "Makefile": b"include rules.mk\nall:\n\ttrue\n",
        "rules.mk": b"X = 1\n",
    }.items():
        (root / name).write_bytes(data)
    (root / "build.sh").chmod(0o755)
    return root


@pytest.fixture(scope="module")
def outside():
    path = short_tmp("outside-") / "deploy.sh"
    path.write_bytes(b"echo deploy\n")
    return path


@pytest.fixture(scope="module")
def daemon(ws):
    with running_daemon(f"approval_timeout_s = 30\nworkspaces = {json.dumps([str(ws)])}\n") as d:
        yield d


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pending_for(daemon, ws, executable, args):
    """Submit (the network makes it wait), read what the operator is shown, deny it."""
    agent = daemon.agent()
    op_ = operation(ws, executable=executable, args=list(args), network="any")
    t = threading.Thread(target=lambda: agent.call("operation.submit", {"operation": op_}), daemon=True)
    t.start()
    with daemon.operator() as op:
        item = wait_for(lambda: op.call("pending.list")["pending"])[0]
        op.call("decide", {"target": item["request_id"], "action": "deny"})
    t.join(30)
    agent.close()
    return item


@pytest.mark.parametrize(
    ("executable", "args"),
    [
        ("bash", ["--rcfile", "/dev/null", "build.sh"]),
        ("env", ["bash", "build.sh"]),
        ("timeout", ["60", "./build.sh"]),
        ("nice", ["-n", "5", "./build.sh"]),
        ("sh", ["-c", "./build.sh"]),
        ("bash", ["--init-file", "lib.sh", "build.sh"]),
    ],
    ids=["rcfile", "env", "timeout", "nice", "sh-c", "init-file"],
)
def test_wrapped_script_and_what_it_sources_are_bound(daemon, ws, executable, args):
    content = dict(pending_for(daemon, ws, executable, args)["content"])
    assert content[str(ws / "build.sh")] == sha(ws / "build.sh")
    assert content[str(ws / "lib.sh")] == sha(ws / "lib.sh")


def test_env_python_binds_the_script(daemon, ws):
    content = dict(pending_for(daemon, ws, "env", ["python3", "x.py"])["content"])
    assert content[str(ws / "x.py")] == sha(ws / "x.py")
    # python3 itself, when the toolchain PATH finds it outside the system (a pyenv shim)
    assert all(path == str(ws / "x.py") or path.endswith("/python3") for path in content), content


def test_make_binds_the_makefile_and_its_include(daemon, ws):
    content = dict(pending_for(daemon, ws, "make", ["all"])["content"])
    assert content[str(ws / "Makefile")] == sha(ws / "Makefile")
    assert content[str(ws / "rules.mk")] == sha(ws / "rules.mk")
    assert content[str(ws / "GNUmakefile")] is None


def test_a_script_outside_the_workspace_is_bound(daemon, ws, outside):
    content = dict(pending_for(daemon, ws, "bash", [str(outside)])["content"])
    assert content == {str(outside): sha(outside)}


def test_unbound_content_is_shown_and_refuses_a_standing_grant(daemon, ws):
    agent = daemon.agent()
    op_ = operation(ws, executable="python3", args=["-m", "json.tool", "--help"], network="any")
    box: dict = {}
    t = threading.Thread(
        target=lambda: box.update(answer=agent.call("operation.submit", {"operation": op_})), daemon=True
    )
    t.start()
    with daemon.operator() as op:
        item = wait_for(lambda: op.call("pending.list")["pending"])[0]
        assert item["unbound"] == ["content not bound: python -m module resolved at run time"]
        shown = render_request(pending_item(item), [], PLAIN, DetailOptions()).text.plain
        assert "content not bound: python -m module resolved at run time" in shown
        assert "a standing grant is refused" in shown
        for scope in ("always", "session"):
            with pytest.raises(RPCError) as exc:
                op.call("decide", {"target": item["request_id"], "action": "approve", "scope": scope})
            assert "not fully bound" in exc.value.message and "approve once" in exc.value.message
        assert op.call("pending.list")["pending"][0]["request_id"] == item["request_id"]
        op.call("decide", {"target": item["request_id"], "action": "approve"})
        assert op.call("grants.list")["grants"] == []
    t.join(30)
    assert box["answer"]["verdict"] == "allow"
    agent.close()


def test_an_unreadable_script_is_a_problem_naming_the_argument(daemon, ws):
    # Even root cannot read it: /proc/sys files honour their mode for everyone.
    argv = ["exec", "--state-dir", str(daemon.state_dir), "--", "bash", "-x", "/proc/sys/vm/drop_caches"]
    r = subprocess.run(
        [sys.executable, "-m", "console", *argv],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert "content_unreadable" in r.stderr and "args[1]" in r.stderr
    assert "Traceback" not in r.stderr
