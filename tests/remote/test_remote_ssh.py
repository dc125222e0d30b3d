"""Daemons on other machines over SSH (docs/remote.md): real sshd instances on 127.0.0.x,
each with its own daemon and state, reached by the real CLI and the real link."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.daemon import operation, short_tmp, submit_in_thread, wait_for, workspace
from support.sshd import SSHLab, have_sshd, ssh_lab

from console.remote.link import HostUnreachable, RemoteHost, check_ticket_socket
from console.remote.url import parse_host_url

pytestmark = pytest.mark.sshd

POLICY = "approval_timeout_s = 120\n"


@pytest.fixture(scope="module")
def lab() -> Iterator[SSHLab]:
    if not have_sshd():
        pytest.skip("needs /usr/sbin/sshd and ssh-keygen (Debian openssh-server; ./dev installs it)")
    with ssh_lab("a", "b", "c", policy=POLICY, no_streamlocal=("c",)) as lab:
        yield lab


@pytest.fixture
def home() -> Iterator[Path]:
    """The console's own machine: a state dir with no daemon, for hosts.toml."""
    base = short_tmp("con-")
    yield base
    subprocess.run(["rm", "-rf", str(base)], check=False)


def console(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    run_env = {k: v for k, v in os.environ.items() if k not in ("AGENT_CONSOLE_HOST", "AGENT_CONSOLE_HOME")}
    run_env["AGENT_CONSOLE_HOME"] = str(home)
    run_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "console", *args], capture_output=True, text=True, timeout=60, env=run_env
    )


def test_approve_on_host_b_from_this_machine(lab: SSHLab, home: Path) -> None:
    a, b = lab.hosts[0], lab.hosts[1]
    ws = workspace()
    answer = submit_in_thread(b.daemon, operation(ws, network="any", justification="needs the net"))
    listed = wait_for(
        lambda: json.loads(console(home, "--host", b.url(), "pending", "--json").stdout or "[]") or None
    )
    (item,) = listed
    assert item["command"].endswith("true")
    # Host A has nothing: the request is B's alone.
    assert json.loads(console(home, "--host", a.url(), "pending", "--json").stdout) == []

    done = console(home, "--host", b.url(), "approve", item["request_id"], "--note", "from afar")
    assert done.returncode == 0, done.stderr
    decision = answer()
    assert decision["verdict"] == "allow" and decision["source"] == "operator"
    assert decision["note"] == "from afar"
    # Recorded in B's own chain, by B's daemon.
    with b.daemon.operator() as op:
        rows = op.call("history.query", {"request_id": item["request_id"]})["rows"]
    assert rows and rows[0]["verdict"] == "allow"


def test_named_hosts_choose_where_commands_go(lab: SSHLab, home: Path) -> None:
    b = lab.hosts[1]
    assert console(home, "hosts", "add", "bee", b.url()).returncode == 0
    refused = console(home, "hosts", "add", "local", b.url())
    assert refused.returncode == 2 and "reserved" in refused.stderr
    assert console(home, "hosts", "use", "bee").returncode == 0
    listed = json.loads(console(home, "hosts", "list", "--json").stdout)
    assert [h["name"] for h in listed["hosts"] if h["current"]] == ["bee"]
    assert (home / "hosts.toml").stat().st_mode & 0o777 == 0o600
    status = console(home, "daemon", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["state_dir"] == str(b.daemon.state_dir)
    # AGENT_CONSOLE_HOST wins over the current host; --host over both.
    via_env = console(home, "daemon", "status", "--json", env={"AGENT_CONSOLE_HOST": "local"})
    assert via_env.returncode == 3
    # Commands that work on this machine's files refuse a remote host rather than lie.
    replay = console(home, "history", "verify")
    assert replay.returncode == 2 and "run it there" in replay.stderr
    assert console(home, "hosts", "remove", "bee").returncode == 0
    assert json.loads(console(home, "hosts", "list", "--json").stdout)["hosts"][0]["current"]


def test_a_host_key_that_is_not_pinned_is_refused(lab: SSHLab, home: Path) -> None:
    a, b = lab.hosts[0], lab.hosts[1]
    # Pin B's key for A's address: A's real key then does not match.
    wrong = home / "known_hosts"
    wrong.write_text(b.known_hosts_line.replace(f"[{b.address}]:{b.port}", f"[{a.address}]:{a.port}") + "\n")
    mismatch = console(home, "--host", a.url(known_hosts=str(wrong)), "pending")
    assert mismatch.returncode == 3
    assert "not the one pinned" in mismatch.stderr
    # No line for the host at all: refused the same way, never trusted on first use.
    empty = home / "empty_known_hosts"
    empty.write_text("")
    unknown = console(home, "--host", a.url(known_hosts=str(empty)), "pending")
    assert unknown.returncode == 3 and "not the one pinned" in unknown.stderr
    missing = console(home, "--host", a.url(known_hosts=str(home / "none")), "pending")
    assert missing.returncode == 3 and "no known_hosts file" in missing.stderr


def test_a_socket_outside_the_daemons_is_refused(lab: SSHLab, home: Path) -> None:
    """dial-stdio dials only its own daemon: a state dir whose operator.sock leads to
    another daemon's socket (a symlink) is refused there, before a byte is sent."""
    a, b = lab.hosts[0], lab.hosts[1]
    decoy = short_tmp("decoy-") / "s"
    (decoy / "run").mkdir(parents=True, mode=0o700)
    decoy.chmod(0o700)
    (decoy / "operator.token").write_text(a.daemon.loc.token.read_text())
    (decoy / "operator.token").chmod(0o600)
    (decoy / "run" / "operator.sock").symlink_to(a.daemon.loc.operator_socket)
    refused = console(home, "--host", b.url(path=str(decoy)), "pending")
    assert refused.returncode == 3, refused.stdout
    assert "not the daemon's socket" in refused.stderr
    # The console refuses a ticket that would open anything but a daemon's operator socket.
    for path in (
        "/var/run/docker.sock",
        "/tmp/x/../operator.sock",
        "run/operator.sock",
        "/tmp//operator.sock",
    ):
        with pytest.raises(HostUnreachable):
            check_ticket_socket(path)
    assert check_ticket_socket(str(a.daemon.loc.operator_socket))


async def test_a_dial_stdio_that_says_nothing_is_named_slow_not_ended(lab: SSHLab) -> None:
    """sshd runs the user's shell, and its start-up files, before the command: one that
    waits (a stale `pyenv rehash` lock waits 60 s) leaves dial-stdio silent. Both links
    say so, and where to look, instead of "ended"."""
    from console.remote.blocking import connect_blocking
    from console.remote.contexts import Target

    slow = short_tmp("slow-") / "agent-console"
    slow.write_text("#!/bin/sh\nsleep 20\n")
    slow.chmod(0o755)
    url = parse_host_url(lab.hosts[0].url(command=str(slow)))
    host = RemoteHost("a", url, connect_timeout_s=1.0)
    try:
        with pytest.raises(HostUnreachable, match=r"a: dial-stdio said nothing in 1 s: .*start-up file"):
            await host.open_client()
    finally:
        await host.close()
    with pytest.raises(HostUnreachable, match=r"a: dial-stdio said nothing in 1 s: .*start-up file"):
        await asyncio.to_thread(connect_blocking, Target("a", url), timeout_s=1.0)


def test_an_unreachable_host_fails_closed_there(lab: SSHLab, home: Path) -> None:
    b = lab.hosts[1]
    ws = workspace()
    answer = submit_in_thread(b.daemon, operation(ws, network="any"), timeout_s=10)
    with b.daemon.operator() as op:
        listed = wait_for(lambda: op.call("pending.list")["pending"])
    rid = listed[0]["request_id"]
    b.stop_sshd()
    try:
        refused = console(home, "--host", b.url(), "approve", rid)
        assert refused.returncode == 3
        assert "cannot reach" in refused.stderr
        decision = answer()
        assert decision["verdict"] == "deny" and decision["reason"] == "approval_timeout"
    finally:
        b.start_sshd()


async def test_streamlocal_with_a_ticket_and_stdio_where_refused(lab: SSHLab) -> None:
    a, c = lab.hosts[0], lab.hosts[2]
    host_a = RemoteHost("a", parse_host_url(a.url()))
    host_c = RemoteHost("c", parse_host_url(c.url()))
    try:
        first = await host_a.open_client()
        second = await host_a.open_client()
        assert host_a.transport == "streamlocal"
        assert first.hello["role"] == second.hello["role"] == "operator"
        # Both are channels to A's daemon, as the operator, without A's token here.
        status = await second.call("daemon.status")
        assert status["state_dir"] == str(a.daemon.state_dir)
        on_c = await host_c.open_client()
        assert host_c.transport.startswith("stdio: streamlocal refused")
        assert (await on_c.call("daemon.status"))["state_dir"] == str(c.daemon.state_dir)
        again = await host_c.open_client()
        assert (await again.call("pending.list"))["count"] == 0
    finally:
        await host_a.close()
        await host_c.close()


async def test_a_remote_session_attaches_through_the_link(lab: SSHLab) -> None:
    a = lab.hosts[0]
    host = RemoteHost("a", parse_host_url(a.url()))
    try:
        client = await host.open_client()
        # As a remote operator starts one: in a project of that machine, confined.
        started = {"argv": ["/bin/cat"], "cwd": str(workspace()), "cols": 40, "rows": 5}
        session = (await client.call("sessions.new", started))["session"]
        assert session["sandboxed"] is True
        output: asyncio.Queue[bytes] = asyncio.Queue()
        client.on_notification("session.output", lambda n: output.put_nowait(base64.b64decode(n.data_base64)))
        await client.call("sessions.attach", {"session": session["id"]})
        await client.call("sessions.input", {"session": session["id"], "text": "over ssh\r"})
        seen = b""
        while b"over ssh" not in seen:
            seen += await asyncio.wait_for(output.get(), 10)
        await client.call("sessions.kill", {"session": session["id"], "grace_s": 0})
    finally:
        await host.close()


async def test_the_web_inbox_merges_hosts_and_marks_one_unreachable(lab: SSHLab) -> None:
    from console.protocol.requests import DecideAction
    from console.remote.contexts import Target
    from console.remote.hostset import HostSet
    from console.web.inbox import DecisionRefused, Inbox

    a, b = lab.hosts[0], lab.hosts[1]
    hostset = HostSet([Target("a", parse_host_url(a.url())), Target("b", parse_host_url(b.url()))], None)
    inbox = Inbox({n: hostset.connector(n, "test-web") for n in hostset.names})
    inbox.start()
    ws = workspace()
    on_b = submit_in_thread(b.daemon, operation(ws, network="any"), timeout_s=60)

    async def until(predicate, timeout_s: float = 30.0):  # type: ignore[no-untyped-def]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while loop.time() < deadline:
            if value := predicate():
                return value
            await asyncio.sleep(0.05)
        raise AssertionError("condition not met in time")

    try:
        (host, item), *_ = await until(inbox.items)
        assert host == "b"
        await until(lambda: inbox.hosts["a"].state == "connected")
        # Bound to the host, the id and the fingerprint shown: another host or fingerprint is refused.
        with pytest.raises(DecisionRefused):
            await inbox.decide("a", item.request_id, item.fingerprint, DecideAction.DENY)
        with pytest.raises(DecisionRefused):
            await inbox.decide("b", item.request_id, "0" * 64, DecideAction.DENY)
        b.stop_sshd()
        try:
            await until(lambda: inbox.hosts["b"].state == "unreachable")
            assert inbox.items() == [] and inbox.hosts["a"].state == "connected"
            with pytest.raises(DecisionRefused, match="unreachable"):
                await inbox.decide("b", item.request_id, item.fingerprint, DecideAction.APPROVE)
        finally:
            b.start_sshd()
        await until(lambda: inbox.hosts["b"].state == "connected")
        result = await inbox.decide("b", item.request_id, item.fingerprint, DecideAction.DENY, note="n")
        assert result.decided == [item.request_id]
        assert (await asyncio.to_thread(on_b))["note"] == "n"
    finally:
        await inbox.stop()
        await hostset.close()


def test_a_session_started_on_a_host_runs_in_a_workspace_of_that_host(lab: SSHLab, home: Path) -> None:
    """`sessions new --host H` without --cwd: not this machine's directory (which may not
    exist there) but the workspace H trusts most recently; this machine's environment
    stays here; a relative --cwd is refused, an unconfined session starts in H's home."""
    c = lab.hosts[2]
    with c.daemon.operator() as op:
        for w in op.call("workspaces.list")["workspaces"]:
            if w["source"] != "policy":
                op.call("workspaces.remove", {"workspace_root": w["workspace_root"]})
    here = short_tmp("here-")  # the console's own directory: nothing of host c
    marker = {"AC_ONLY_ON_THIS_MACHINE": "local-secret"}

    def new(*args: str) -> subprocess.CompletedProcess[str]:
        run_env = {
            k: v for k, v in os.environ.items() if k not in ("AGENT_CONSOLE_HOST", "AGENT_CONSOLE_HOME")
        }
        run_env.update(AGENT_CONSOLE_HOME=str(home), **marker)
        return subprocess.run(
            [sys.executable, "-m", "console", "--host", c.url(), "sessions", "new", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=run_env,
            cwd=here,
        )

    older, newer = workspace(), workspace()
    with c.daemon.operator() as op:
        op.call("workspaces.add", {"workspace_root": str(older)})
        op.call("workspaces.add", {"workspace_root": str(newer)})
    started = new("--", "/bin/sh", "-c", "env; cat")
    assert started.returncode == 0, started.stderr
    sid = started.stdout.strip()
    relative = new("--cwd", "project", "--", "/bin/true")
    assert relative.returncode == 2 and "absolute path" in relative.stderr
    loose = new("--unconfined", "--", "/bin/cat")
    assert loose.returncode == 0, loose.stderr
    with c.daemon.operator() as op:
        session = op.call("sessions.get", {"session": sid})["session"]
        assert session["cwd"] == str(newer) != str(here) and session["sandboxed"] is True
        screen = wait_for(
            lambda: (
                (text := op.call("sessions.screen", {"session": sid})["text"]) and "PATH=" in text and text
            )
        )
        assert "local-secret" not in screen and "AC_ONLY_ON_THIS_MACHINE" not in screen
        unconfined = op.call("sessions.get", {"session": loose.stdout.strip()})["session"]
        assert unconfined["cwd"] == str(Path(c.daemon.env["HOME"] if c.daemon.env else os.environ["HOME"]))
        for s in (sid, unconfined["id"]):
            op.call("sessions.kill", {"session": s, "grace_s": 0})
