"""Finding 1: the agent picked its own workspace (`--workspace ~` made the home writable).

Now a workspace is the operator's: `/`, a home, /tmp, system directories and the
console's state are refused when the request is parsed; any other directory outside the
trusted roots waits for the operator as `new_workspace`, which only an "always" approval
(or `agent-console workspaces add`) turns into a trusted one.
"""

from __future__ import annotations

import os
import shutil

import pytest
from support.daemon import (
    DaemonProcess,
    operation,
    running_daemon,
    short_tmp,
    submit_in_thread,
    wait_for,
    workspace,
)

from console.client import RPCError

# A policy that trusts a root the test workspaces are not under.
UNTRUSTING = 'workspaces = ["/srv/not-the-tests"]\n'


def pending(d):
    with d.operator() as op:
        return op.call("pending.list")["pending"]


@pytest.fixture
def fake_home(monkeypatch):
    """The daemon's $HOME: a directory with the files the attack appends to."""
    home = short_tmp("home-")
    (home / ".ssh").mkdir()
    (home / ".bashrc").write_text("# rc\n")
    monkeypatch.setenv("HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


def test_exec_with_the_home_as_workspace_is_refused_and_writes_nothing(fake_home):
    with running_daemon() as d:  # the test policy trusts /tmp, and the fake home is under it
        r = d.cli(
            "exec",
            "--workspace",
            f"{fake_home}/",
            "--",
            "sh",
            "-c",
            "echo x >> .bashrc; echo key >> .ssh/authorized_keys",
        )
        assert r.returncode == 2, r.stdout + r.stderr
        assert "workspace_root" in r.stderr and "home directory" in r.stderr
        assert (fake_home / ".bashrc").read_text() == "# rc\n"
        assert not (fake_home / ".ssh" / "authorized_keys").exists()


def test_the_real_passwd_home_is_refused_as_a_workspace():
    import pwd

    home = pwd.getpwuid(os.getuid()).pw_dir
    with running_daemon() as d, d.agent() as agent, pytest.raises(RPCError) as info:
        agent.submit(operation(home, workspace_access="write"))
    assert info.value.data["problem"]["field"] == "workspace_root"
    assert info.value.data["problem"]["reason"] == "workspace_is_home"


@pytest.mark.parametrize(
    ("root", "reason"),
    [
        ("/etc", "workspace_is_system_directory"),
        ("/usr/lib", "workspace_is_system_directory"),
        ("/tmp", "workspace_is_shared_directory"),
        ("/", "workspace_is_root"),
    ],
)
def test_system_and_shared_directories_are_refused_as_workspaces(root, reason):
    with running_daemon() as d, d.agent() as agent, pytest.raises(RPCError) as info:
        agent.submit(operation(root, workspace_access="write"))
    problem = info.value.data["problem"]
    assert (problem["field"], problem["reason"]) == ("workspace_root", reason)


def test_the_consoles_own_state_directory_is_refused_as_a_workspace():
    with running_daemon() as d, d.agent() as agent:
        for root in (d.state_dir, d.state_dir.parent):  # inside it, or containing it
            with pytest.raises(RPCError) as info:
                agent.submit(operation(root, workspace_access="write"))
            assert info.value.data["problem"]["reason"] == "workspace_is_console_state"


def test_untrusted_workspace_waits_as_new_workspace_and_always_trusts_it():
    ws = workspace()
    with running_daemon(UNTRUSTING) as d:
        result = submit_in_thread(d, operation(ws, args=["first"], workspace_access="write"))
        [item] = wait_for(lambda: pending(d))
        esc = item["evaluation"]["escalations"]
        assert [e.get("code") for e in esc] == ["new_workspace"]
        assert esc[0]["reason"] == (
            f"new workspace: {ws} is not among your trusted workspaces; approve always to trust it"
        )
        assert item["evaluation"]["reason"] == "escalation_requires_approval"
        # Not watched before the operator said yes.
        with d.operator() as op:
            assert str(ws) not in repr(op.call("watch.status"))
            op.call("decide", {"target": item["request_id"], "action": "approve", "scope": "always"})
        assert result()["verdict"] == "allow"
        with d.agent() as agent:
            # Another command in the now trusted workspace needs nobody.
            assert agent.submit(operation(ws, args=["second"]))["reason"] == "within_ceiling"
        with d.operator() as op:
            rows = op.call("workspaces.list")["workspaces"]
            assert {"workspace_root": str(ws), "source": "approval"}.items() <= rows[-1].items()
    shutil.rmtree(ws.parent, ignore_errors=True)


def test_once_approval_does_not_trust_the_workspace():
    ws = workspace()
    with running_daemon(UNTRUSTING) as d:
        result = submit_in_thread(d, operation(ws, args=["first"]))
        [item] = wait_for(lambda: pending(d))
        with d.operator() as op:
            op.call("decide", {"target": item["request_id"], "action": "approve"})
        assert result()["verdict"] == "allow"
        assert result()["reason"] == "operator_approved"
        with d.agent() as agent:
            answer = agent.submit(operation(ws, args=["second"]), timeout_s=0.5)
        assert (answer["verdict"], answer["reason"]) == ("deny", "approval_timeout")
    shutil.rmtree(ws.parent, ignore_errors=True)


def test_new_workspace_is_never_a_read_only_command_and_never_policy_allowed():
    ws = workspace()
    with running_daemon(UNTRUSTING + 'approval = "never"\n') as d, d.agent() as agent:
        answer = agent.submit(operation(ws))  # `true`: within every ceiling
        assert (answer["verdict"], answer["reason"]) == ("deny", "escalation_denied_by_policy")
        assert answer["escalations"][0]["code"] == "new_workspace"
    with running_daemon(UNTRUSTING + 'approval = "untrusted"\n') as d:
        result = submit_in_thread(d, operation(ws, kind="git", executable="git", args=["status"]))
        [item] = wait_for(lambda: pending(d))
        assert item["evaluation"]["reason"] == "untrusted_requires_approval"
        assert [e.get("code") for e in item["evaluation"]["escalations"]] == ["new_workspace"]
        with d.operator() as op:
            op.call("decide", {"target": item["request_id"], "action": "deny"})
        assert result()["verdict"] == "deny"
    shutil.rmtree(ws.parent, ignore_errors=True)


def test_pending_cli_says_new_workspace_in_words():
    ws = workspace()
    with running_daemon(UNTRUSTING) as d:
        result = submit_in_thread(d, operation(ws, args=["cli"]))
        wait_for(lambda: pending(d))
        r = d.cli("pending")
        assert r.returncode == 0, r.stderr
        assert "NEW-WS" in r.stdout
        assert (
            f"new workspace: {ws} is not among your trusted workspaces; approve always to trust it"
            in r.stdout
        )
        with d.operator() as op:
            op.call("decide", {"target": pending(d)[0]["request_id"], "action": "deny"})
        result()
    shutil.rmtree(ws.parent, ignore_errors=True)


def test_workspaces_add_list_remove_round_trip_with_clear_errors():
    ws = workspace()
    link = ws.parent / "link"
    link.symlink_to(ws)
    base = short_tmp()
    d = DaemonProcess(base / "s", UNTRUSTING).start()
    try:
        r = d.cli("workspaces", "add", str(ws))
        assert (r.returncode, r.stdout.strip()) == (0, f"trusted: {ws}"), r.stderr
        r = d.cli("workspaces", "add", str(ws))
        assert "already trusted" in r.stdout
        r = d.cli("workspaces", "list")
        assert str(ws) in r.stdout and "/srv/not-the-tests" in r.stdout
        with d.agent() as agent:
            assert agent.submit(operation(ws))["reason"] == "within_ceiling"

        for bad, fragment in (
            ("project", "absolute path"),
            (str(ws / "missing"), "existing directory"),
            (str(link), "symlink"),
            ("/", "filesystem root"),
            ("/etc", "system directory"),
            (str(d.state_dir / "x"), "state directory"),
        ):
            if bad.endswith("/x"):
                (d.state_dir / "x").mkdir(exist_ok=True)
            r = d.cli("workspaces", "add", bad)
            assert r.returncode == 2, (bad, r.stdout, r.stderr)
            assert "workspace_root" in r.stderr and fragment in r.stderr, (bad, r.stderr)
            assert "Traceback" not in r.stderr

        r = d.cli("workspaces", "remove", "/srv/not-the-tests")
        assert r.returncode == 2 and "policy.toml" in r.stderr
        r = d.cli("workspaces", "remove", str(ws / "src"))
        assert r.returncode == 1 and "not among the trusted workspaces" in r.stderr

        d.stop()
        d = DaemonProcess(base / "s").start()  # the runtime list is in the history
        assert str(ws) in d.cli("workspaces", "list").stdout
        r = d.cli("workspaces", "remove", str(ws))
        assert (r.returncode, r.stdout.strip()) == (0, f"no longer trusted: {ws}")
        with d.agent() as agent:
            answer = agent.submit(operation(ws), timeout_s=0.5)
        assert answer["reason"] == "approval_timeout"
        assert "new_workspace" in [e.get("code") for e in answer["escalations"]]
        r = d.cli("history", "verify")
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        d.stop()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(ws.parent, ignore_errors=True)


@pytest.mark.parametrize(
    ("root", "reason"),
    [
        ("/", "workspace_is_root"),
        ("/home/alice", "workspace_is_home"),
        ("/home", "workspace_is_home"),
        ("/etc/nginx", "workspace_is_system_directory"),
        ("/var", "workspace_is_system_directory"),  # contains /var/lib
        ("/tmp", "workspace_is_shared_directory"),
        ("/srv", "workspace_is_shared_directory"),
        ("/state/agent-console", "workspace_is_console_state"),
        ("/state", "workspace_is_console_state"),
        ("/home/alice/src/app", None),
        ("/tmp/ws/project", None),
        ("/srv/www/site", None),
    ],
)
def test_the_refusal_rules(root, reason):
    from console.contract.workspace import WorkspaceLimits

    limits = WorkspaceLimits.of(homes=["/home/alice"], private=["/state/agent-console"])
    found = limits.refusal(root)
    assert (found[0] if found else None) == reason


def test_workspaces_add_refuses_what_can_never_be_a_workspace_with_the_reason():
    """`workspaces add /tmp` (or ~) trusted every directory below it with no question;
    trusting now refuses the same set a request's workspace_root is refused for."""
    import pwd

    home = pwd.getpwuid(os.getuid()).pw_dir
    with running_daemon(UNTRUSTING) as d:
        (d.state_dir / "x").mkdir()
        for root, reason in (
            ("/tmp", "workspace_is_shared_directory"),
            ("/var/tmp", "workspace_is_shared_directory"),
            (home, "workspace_is_home"),
            ("/home", "workspace_is_home"),
            ("/usr/lib", "workspace_is_system_directory"),
            ("/", "filesystem root"),
            (str(d.state_dir / "x"), "workspace_is_console_state"),
            (str(d.state_dir.parent), "workspace_is_console_state"),
        ):
            r = d.cli("workspaces", "add", root)
            assert r.returncode == 2, (root, r.stdout, r.stderr)
            assert reason in r.stderr and "Traceback" not in r.stderr, (root, r.stderr)
        listed = d.cli("workspaces", "list", "--json").stdout
        assert '/tmp"' not in listed and home not in listed
        # Nothing below /tmp became trusted on the way: a directory there still asks.
        ws = workspace(short_tmp("below-tmp-"))
        with d.agent() as agent:
            answer = agent.submit(operation(ws), timeout_s=0.5)
        assert "new_workspace" in [e.get("code") for e in answer["escalations"]]


@pytest.mark.parametrize(
    ("roots", "fragment"),
    [
        ('["/tmp"]', "workspace_is_shared_directory"),
        ('["/usr"]', "workspace_is_system_directory"),
        ("[HOME]", "workspace_is_"),  # /root is also a shared parent: either reason
        ("[STATE]", "workspace_is_console_state"),
    ],
)
def test_a_policy_that_trusts_a_refused_root_does_not_start_the_daemon(roots, fragment):
    import pwd

    base = short_tmp()
    roots = roots.replace("HOME", repr(pwd.getpwuid(os.getuid()).pw_dir)).replace("STATE", repr(str(base)))
    d = DaemonProcess(base / "s", f"workspaces = {roots}\n".replace("'", '"'))
    try:
        r = d.cli("daemon", "start")
        assert r.returncode == 1, r.stdout
        assert "workspaces[0]" in r.stderr and fragment in r.stderr, r.stderr
        assert "does not start on a broken policy" in r.stderr
        assert d.cli("daemon", "status").returncode == 3
    finally:
        d.cli("daemon", "stop", "--force")  # one that started after all ends with the test
        d.stop()
        shutil.rmtree(base, ignore_errors=True)
