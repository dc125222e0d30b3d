"""Host addresses, named hosts and dial-stdio, without SSH: what is accepted, what is
refused and why, which host a command talks to (docs/remote.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.daemon import DaemonProcess, short_tmp

from console.protocol.results import TrustedWorkspace
from console.remote.contexts import ContextError, Contexts, hosts_path, load_contexts
from console.remote.url import HostURLError, parse_host_url
from console.remote.workdir import NoRemoteWorkspace, remote_cwd, remote_workspace


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("http://box", "starts with ssh://"),
        ("ssh://me:secret@box", "no password"),
        ("ssh://-oProxyCommand=x@box", "user name"),
        ("ssh://box:0", "port"),
        ("ssh://box:99999", "port"),
        ("ssh://bo x", "without spaces"),
        ("ssh://box/../etc", "'..'"),
        ("ssh://box/srv//ac", "'//'"),
        ("ssh://box/srv/a%2e", "percent"),
        ("ssh://box?socket=/var/run/docker.sock", "unknown option"),
        ("ssh://box?transport=tcp", "transport"),
        ("ssh://box?command=agent-console;rm", "absolute path"),
        ("ssh://box?known_hosts=relative", "absolute path"),
        ("ssh://box#x", "fragment"),
        ("ssh://box\x1b[2J", "control"),
    ],
)
def test_an_address_that_is_not_understood_is_refused_saying_why(text: str, why: str) -> None:
    with pytest.raises(HostURLError, match=why.replace("(", r"\(")):
        parse_host_url(text)


def test_an_address_reads_back_as_written() -> None:
    url = parse_host_url("ssh://me@box.example:2222/srv/ac?known_hosts=~/.ssh/kh&transport=stdio")
    assert (url.user, url.host, url.port, url.state_dir, url.transport) == (
        "me",
        "box.example",
        2222,
        "/srv/ac",
        "stdio",
    )
    assert parse_host_url(str(url)) == url
    assert url.address == "me@box.example:2222"
    assert parse_host_url("ssh://[::1]").address == "[::1]"


def test_which_host_a_command_talks_to() -> None:
    home = short_tmp("hosts-")
    contexts = load_contexts(hosts_path(home))
    contexts.add("box", "ssh://me@box")
    contexts.add("ci", "ssh://ci@runner:2200")
    contexts.use("box")
    contexts.save()
    assert (home / "hosts.toml").stat().st_mode & 0o777 == 0o600
    again = load_contexts(hosts_path(home))
    assert [t.name for t in again.resolve()] == ["box"]  # the current one
    assert [t.name for t in again.resolve(env="ci")] == ["ci"]  # $AGENT_CONSOLE_HOST wins over it
    assert [t.name for t in again.resolve(["local"], env="ci")] == ["local"]  # --host wins over both
    assert [t.name for t in again.resolve(["all"])] == ["local", "box", "ci"]
    assert [t.name for t in again.resolve(["ssh://me@box"])] == ["box"]  # an address of a named host
    assert [t.name for t in again.resolve(["ssh://x@y:23"])] == ["x@y:23"]
    with pytest.raises(ContextError, match="no host named 'nope'"):
        again.resolve(["nope"])
    with pytest.raises(ContextError, match="reserved"):
        again.add("all", "ssh://x")
    again.remove("box")
    assert again.current == "" and [t.name for t in again.resolve()] == ["local"]


def test_a_broken_hosts_file_is_named_with_the_fix() -> None:
    home = short_tmp("hosts-")
    (home / "hosts.toml").write_text('[hosts.box]\nurl = "ssh://me@box?socket=/tmp/x"\n')
    with pytest.raises(ContextError, match=r"hosts.toml: \[hosts.box\]: .*unknown option"):
        load_contexts(hosts_path(home))
    (home / "hosts.toml").write_text('current = "gone"\n')
    with pytest.raises(ContextError, match="names no host"):
        load_contexts(hosts_path(home))
    assert isinstance(load_contexts(hosts_path(short_tmp("hosts-"))), Contexts)


def dial(d: DaemonProcess, first: bytes, then: bytes = b"") -> tuple[list[dict], int]:
    proc = subprocess.run(
        [sys.executable, "-m", "console", "daemon", "dial-stdio", "--state-dir", str(d.state_dir)],
        input=first + then,
        capture_output=True,
        timeout=30,
    )
    return [json.loads(line) for line in proc.stdout.splitlines()], proc.returncode


def test_dial_stdio_says_hello_with_its_own_token(daemon: DaemonProcess) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "hello", "params": {"client": "x", "token": "not it"}}
    status = {"jsonrpc": "2.0", "id": 2, "method": "pending.list", "params": {}}
    answers, code = dial(daemon, (json.dumps(hello) + "\n").encode(), (json.dumps(status) + "\n").encode())
    assert code == 0
    assert answers[0]["result"]["role"] == "operator"  # the token was this machine's, not the one sent
    assert answers[1]["result"]["count"] == 0


def test_dial_stdio_takes_nothing_but_a_hello_first(daemon: DaemonProcess) -> None:
    status = {"jsonrpc": "2.0", "id": 2, "method": "pending.list", "params": {}}
    answers, code = dial(daemon, (json.dumps(status) + "\n").encode())
    assert code == 2 and answers[0]["error"]["data"]["dial"] == "bad_hello"
    answers, code = dial(daemon, b"x" * (300 * 1024))
    assert code == 2 and answers[0]["error"]["data"]["dial"] == "bad_hello"


def test_a_session_on_another_host_starts_in_a_workspace_of_that_host() -> None:
    def entry(root: str, source: str, at: float | None) -> TrustedWorkspace:
        return TrustedWorkspace(workspace_root=root, source=source, at=at, request_id="")

    policy = [entry("/srv/src", "policy", None), entry("/srv/other", "policy", None)]
    trusted = [entry("/home/me/old", "operator", 100.0), entry("/home/me/new", "approval", 200.0)]
    # The newest the host trusts; without any, the first its policy trusts; else none.
    assert remote_workspace(policy + trusted) == "/home/me/new"
    assert remote_workspace(policy) == "/srv/src"
    assert remote_workspace([]) is None
    assert remote_cwd("box", None, policy + trusted, unconfined=False) == "/home/me/new"
    # A named directory is the host's, absolute; unconfined with none: the host's home ("").
    assert remote_cwd("box", "/srv/x/../y", None, unconfined=False) == "/srv/y"
    assert remote_cwd("box", None, None, unconfined=True) == ""
    with pytest.raises(NoRemoteWorkspace, match="absolute path"):
        remote_cwd("box", "project", None, unconfined=False)
    with pytest.raises(NoRemoteWorkspace, match="box trusts no workspace yet"):
        remote_cwd("box", None, [], unconfined=False)
