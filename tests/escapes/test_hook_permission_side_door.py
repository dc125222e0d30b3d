"""The PermissionRequest answer is the daemon's, and a ticket is its agent's.

Before: the hook answered ``allow`` to Claude Code's permission dialog for any Bash command
of the ticket command's *shape* (a regular expression whose first word only had to start
with ``/``): ``/bin/sh;id>/tmp/x;/x -I -m console exec --ticket r-1-1:<43 chars>`` was
allowed even with no daemon running, and Claude Code ran it outside the sandbox. A ticket
ran for whoever presented it (a second process redeemed agent A's ticket and got A's
output), and its secret was on the ``exec`` command line, readable in /proc by any
process of the user.

Now the dialog is allowed only for a command byte for byte equal to one the daemon issued
to the asking agent (``operation.held``); everything else is an ordinary request, and with
no daemon a deny. A ticket runs only for the identity that asked, and its secret travels
in a 0600 file of the daemon's runtime directory.
"""

from __future__ import annotations

import json
import os
import stat
import string
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.daemon import running_daemon, short_tmp, workspace
from support.hook import hook_cli, hook_input

from console.adapters.claude_code.hook import decide
from console.client import Client, RPCError
from console.protocol.jsonrpc import INVALID_PARAMS

pytestmark = pytest.mark.needs_bwrap

SIDE_DOOR = "/bin/sh;touch${IFS}%s;/x -I -m console exec --ticket r-1-1:" + "A" * 43


@pytest.fixture(scope="module")
def daemon():
    with running_daemon("approval_timeout_s = 30\n") as d:
        yield d


def dialog(daemon_or_dir, ws: Path, command: str, env: dict | None = None) -> dict | None:
    class At:
        state_dir = daemon_or_dir if isinstance(daemon_or_dir, Path) else daemon_or_dir.state_dir

    return hook_cli(At, hook_input(ws, "Bash", {"command": command}, event="PermissionRequest"), "10", env)


def pre_tool_use(daemon, ws: Path, command: str) -> dict:
    out = hook_cli(daemon, hook_input(ws, "Bash", {"command": command}))
    assert out is not None and out["permissionDecision"] == "allow", out
    return out


def test_a_ticket_shaped_command_with_no_daemon_is_denied():
    ws = workspace()
    marker = short_tmp("ac-side-") / "pwned"
    out = dialog(short_tmp("ac-none-") / "state", ws, SIDE_DOOR % marker)
    assert out is not None and out["decision"]["behavior"] == "deny", out
    assert "unreachable" in out["decision"]["message"]


def test_a_ticket_shaped_command_the_daemon_never_issued_is_an_ordinary_request(daemon):
    ws = workspace()
    forged = SIDE_DOOR % (ws / "pwned")
    out = dialog(daemon, ws, forged)
    assert out is not None and out["decision"]["behavior"] == "allow", out
    # Allowed only as the daemon's own rewrite: the sandboxed run of that text.
    rewritten = out["decision"]["updatedInput"]["command"]
    assert rewritten != forged and "--ticket r-" in rewritten
    with daemon.operator() as op:
        [row] = [
            r
            for r in op.call("history.query", {"kinds": ["request"], "limit": 20})["rows"]
            if forged in json.dumps(r)
        ]
        assert row["body"]["operation"]["args"] == ["-c", forged]


def test_the_dialog_for_the_daemons_own_rewrite_is_allowed_and_a_byte_more_is_not(daemon):
    ws = workspace()
    command = pre_tool_use(daemon, ws, "echo fine")["updatedInput"]["command"]
    out = dialog(daemon, ws, command)
    assert out == {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    for near in (
        command + " ",
        " " + command,
        command + "\n",
        command + "; touch x",
        command.replace("-I", "-i"),
    ):
        answer = dialog(daemon, ws, near)
        assert answer is not None
        assert answer["decision"].get("updatedInput", {}).get("command") not in (None, near), near


# Characters an attacker would splice into the command: shell syntax, whitespace, quotes,
# look-alikes and invisible characters.
NASTY = [
    *";&|`$()<>{}[]*?!#~\\'\"\n\r\t \x00\x0b\x0c",
    "\u00a0",
    "\u200b",
    "\u202e",
    "\u2028",
    "\uff0f",  # fullwidth solidus
    "\u0456",  # Cyrillic i
    "é",
]
texts = st.text(
    alphabet=st.sampled_from(NASTY + list(string.ascii_letters + string.digits + "-_/.:")), max_size=8
)


def mutations(command: str) -> st.SearchStrategy[str]:
    """Near-ticket strings: the real command with a prefix, a suffix, an insertion, a
    replaced or deleted character, or a changed ticket id/state dir/interpreter."""
    n = len(command)
    index = st.integers(0, n - 1)
    return st.one_of(
        texts.filter(bool).map(lambda t: t + command),
        texts.filter(bool).map(lambda t: command + t),
        st.tuples(index, texts.filter(bool)).map(lambda p: command[: p[0]] + p[1] + command[p[0] :]),
        st.tuples(index, st.sampled_from([*NASTY, "x", "0", "Z"])).map(
            lambda p: command[: p[0]] + p[1] + command[p[0] + 1 :]
        ),
        index.map(lambda i: command[:i] + command[i + 1 :]),
        st.sampled_from(
            [
                command.replace("-m console", "-m consolе"),
                command.replace("--ticket r-", "--ticket  r-"),
                command.replace("exec", "exec\u200b"),
                command.replace(sys.executable, "/bin/sh;id>/tmp/x;" + sys.executable),
            ]
        ),
    ).filter(lambda s: s != command)


def test_thousands_of_near_ticket_strings_are_never_the_daemons(daemon):
    ws = workspace()
    command = pre_tool_use(daemon, ws, "echo near")["updatedInput"]["command"]
    # Byte-identical, but asked by another agent (a process tree of its own): not its ticket.
    assert _held_for_a_stranger(daemon, command) is False
    with _as_the_hook(daemon) as agent:
        assert agent.call("operation.held", {"command": command})["held"] is True

        @settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(mutations(command))
        def never_held(near: str) -> None:
            if "\x00" in near:  # refused at the socket (the hook then denies)
                with pytest.raises(RPCError) as refused:
                    agent.call("operation.held", {"command": near})
                assert refused.value.code == INVALID_PARAMS
                return
            assert agent.call("operation.held", {"command": near})["held"] is False, repr(near)

        never_held()


def test_without_a_daemon_no_near_ticket_string_is_allowed(tmp_path):
    ws = workspace()
    base = SIDE_DOOR % "/tmp/pwned"
    nowhere = str(tmp_path / "no-daemon")

    @settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(mutations(base))
    def denied(near: str) -> None:
        call = hook_input(ws, "Bash", {"command": near}, event="PermissionRequest")
        answer = decide(json.dumps(call), state_dir=nowhere, timeout_s=2)
        assert answer is not None
        verdict = answer["hookSpecificOutput"].get("decision") or answer["hookSpecificOutput"]
        assert verdict.get("behavior", verdict.get("permissionDecision")) == "deny", repr(near)

    denied()


STRANGER = """
import json, sys
from console.client import Client
from console.protocol.procs import agent_process_pid
with Client.connect(sys.argv[1], role="agent", agent_pid=agent_process_pid(), per_call=True) as c:
    print(json.dumps(c.call(sys.argv[2], json.loads(sys.argv[3]))))
"""


def stranger_call(daemon, method: str, params: dict) -> dict:
    """``method`` called by another agent: a process in a session of its own."""
    r = subprocess.run(
        [sys.executable, "-c", STRANGER, str(daemon.state_dir), method, json.dumps(params)],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert r.returncode == 0 or "RPCError" in r.stderr, r.stderr
    return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr}


def _held_for_a_stranger(daemon, command: str) -> bool:
    return bool(stranger_call(daemon, "operation.held", {"command": command})["held"])


class _as_the_hook:
    """A connection with the identity the hook's subprocesses get: this test process's."""

    def __init__(self, daemon) -> None:
        self.client = Client.connect(daemon.state_dir, role="agent", agent_pid=os.getpid())

    def __enter__(self) -> Client:
        return self.client

    def __exit__(self, *exc) -> None:
        self.client.close()


# ------------------------------------------------------------------ the ticket's identity


def test_a_ticket_runs_only_for_the_agent_that_asked(daemon):
    from console.protocol.tickets import read_secret

    ws = workspace()
    (ws / "note.txt").write_text("A's secret note\n")
    op = {
        "kind": "process",
        "executable": "/bin/cat",
        "args": ["note.txt"],
        "workspace_root": str(ws),
        "workspace_access": "read_only",
    }
    with daemon.agent() as a:
        held = a.call("operation.hold", {"operation": op})
        ticket_id = held["ticket"]
        secret = read_secret(daemon.state_dir / "run", ticket_id)
        # Another agent with the secret in hand (read from /proc, or from the file).
        refused = stranger_call(daemon, "operation.run", {"ticket": f"{ticket_id}:{secret}", "stream": False})
        assert "another agent identity" in refused["error"] and "secret note" not in refused["error"]
        # Not consumed by the attempt: its agent still runs it.
        run = a.call("operation.run", {"ticket": f"{ticket_id}:{secret}", "stream": False})
        assert run["result"]["stdout"]["head"] == "A's secret note\n"


def test_the_secret_is_in_a_private_file_and_never_on_the_command_line(daemon):
    from console.protocol.tickets import ticket_path

    ws = workspace()
    out = pre_tool_use(daemon, ws, "echo from-the-ticket")
    command = out["updatedInput"]["command"]
    ticket_id = command.split("--ticket ")[1].split()[0]
    path = ticket_path(daemon.state_dir / "run", ticket_id)
    mode = os.lstat(path).st_mode
    assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o600
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700
    secret = path.read_text()
    assert secret not in command and ":" not in command.split("--ticket ")[1].split()[0]
    run = subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout == "from-the-ticket\n", run.stderr
    assert not path.exists()  # a used ticket leaves no secret behind


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Read", {"file_path": "/proc/1/cmdline"}),
        ("Read", {"file_path": "/proc/self/environ"}),
        ("Read", {"file_path": "/proc/%d/environ"}),
        ("Read", {"file_path": "/proc/%d/mem"}),
        ("Read", {"file_path": "/proc/%d/fd/0"}),
        ("Read", {"file_path": "/proc/%d/task/%d/cmdline"}),
        ("Glob", {"pattern": "*/cmdline", "path": "/proc"}),
        ("Glob", {"pattern": "/proc/*/environ"}),
        ("Grep", {"pattern": "--ticket", "path": "/proc"}),
        ("Grep", {"pattern": "--ticket", "path": "/proc/%d"}),
        ("LS", {"path": "/proc/%d/fd"}),
    ],
)
def test_another_agents_process_table_is_not_readable_through_the_hook(daemon, tool, tool_input):
    pid = os.getpid()
    filled = {k: v.replace("%d", str(pid)) for k, v in tool_input.items()}
    out = hook_cli(daemon, hook_input(workspace(), tool, filled))
    assert out is not None and out["permissionDecision"] == "deny", out
    assert "/proc" in out["permissionDecisionReason"]
