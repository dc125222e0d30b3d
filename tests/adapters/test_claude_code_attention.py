"""Attention: Claude Code's Notification, Stop and UserPromptSubmit hooks mark
who waits for the person, against a real daemon; the hook runs as Claude Code runs it,
a child of a stand-in `claude` process (so the daemon issues that process an identity)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.daemon import running_daemon, short_tmp, wait_for, workspace
from support.hook import hook_input
from support.tui import Clock, Notices, make_app, until

from console.client import RPCError
from console.locations import ensure_private_dir, locate

HOOK = [sys.executable, "-m", "console", "hook", "claude-code", "--timeout", "20"]

# A stand-in for the `claude` process: for each JSON line on stdin it runs one command
# (the hook, or a client snippet) and answers a JSON line. As Claude Code 2.1 runs a
# hook: through `sh -c`, in a new session without a terminal (setsid).
FAKE_CLAUDE = textwrap.dedent(
    """
    import json, shlex, subprocess, sys
    for line in sys.stdin:
        req = json.loads(line)
        r = subprocess.run(
            ["/bin/sh", "-c", shlex.join(req["argv"])], input=req["stdin"], capture_output=True, text=True,
            timeout=60, start_new_session=True,
        )
        print(json.dumps({"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr}), flush=True)
    """
)

# Runs under a fake claude: connects as that agent (agent_pid = the fake claude) and
# tries what another agent would.
AS_AGENT = textwrap.dedent(
    """
    import json, os, sys
    from console.client import Client, RPCError
    out = {}
    from console.protocol.procs import agent_process_pid
    with Client.connect(sys.argv[1], role="agent", agent_pid=agent_process_pid()) as c:
        out["me"] = c.hello["agent"]["id"]
        out["list"] = c.call("agent.attention_list")
        for name, params in json.loads(sys.stdin.read()):
            try:
                out[name] = c.call("agent.attention", params)
            except RPCError as e:
                out[name] = {"error": e.code, "message": e.message}
    print(json.dumps(out))
    """
)


class FakeClaude:
    def __init__(self) -> None:
        # Started as an agent without a terminal must be (`setsid claude -p`): leading a
        # session of its own, so that the sessions its hooks run in can name it.
        self.proc = subprocess.Popen(
            [sys.executable, "-c", FAKE_CLAUDE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def run(self, argv: list[str], stdin: str) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"argv": argv, "stdin": stdin}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def hook(self, state_dir, payload: dict) -> dict:
        return self.run([*HOOK, "--state-dir", str(state_dir)], json.dumps(payload))

    def quiet(self, state_dir, payload: dict) -> None:
        """An attention hook call: exit 0, nothing printed."""
        r = self.hook(state_dir, payload)
        assert (r["rc"], r["stdout"]) == (0, ""), r

    def as_agent(self, state_dir, calls: list) -> dict:
        r = self.run([sys.executable, "-c", AS_AGENT, str(state_dir)], json.dumps(calls))
        assert r["rc"] == 0, r["stderr"]
        return json.loads(r["stdout"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


@pytest.fixture
def claude():
    fakes: list[FakeClaude] = []

    def make() -> FakeClaude:
        fakes.append(FakeClaude())
        return fakes[-1]

    yield make
    for fake in fakes:
        fake.close()


def event(ws, name: str, session: str, **fields) -> dict:
    return {
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(ws),
        "hook_event_name": name,
        **fields,
    }


def notification(
    ws, session: str, message="Claude needs your permission to use Bash", kind="permission_prompt"
):
    return event(ws, "Notification", session, message=message, notification_type=kind)


def entries(d, session: str) -> list[dict]:
    with d.operator() as op:
        return [a for a in op.call("agent.attention_list")["agents"] if a["session_id"] == session]


def agents_json(d) -> list[dict]:
    r = d.cli("agents", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_notification_waits_a_tool_call_works_stop_is_done(daemon, claude):
    ws, fake = workspace(), claude()
    with daemon.operator(timeout_s=10) as op:
        op.subscribe(["attention"])
        fake.quiet(daemon.state_dir, notification(ws, "s-flow"))
        (mine,) = [a for a in agents_json(daemon) if a["session_id"] == "s-flow"]
        assert mine["state"] == "waiting" and mine["state_text"] == "waiting for you"
        assert mine["message"] == "Claude needs your permission to use Bash"
        assert mine["kind"] == "permission_prompt" and mine["root_pid"] == fake.proc.pid
        table = daemon.cli("agents")
        assert (
            table.returncode == 0 and "waiting for you" in table.stdout and mine["agent_id"] in table.stdout
        )

        # A supervised tool call of the same claude and session: working again.
        target = ws / "src" / "new.txt"
        write = hook_input(ws, "Write", {"file_path": str(target), "content": "x\n"}, session="s-flow")
        r = fake.hook(daemon.state_dir, write)
        assert r["rc"] == 0 and '"allow"' in r["stdout"], r
        assert entries(daemon, "s-flow")[0]["state"] == "working"

        fake.quiet(daemon.state_dir, event(ws, "Stop", "s-flow", stop_hook_active=False))
        (done,) = entries(daemon, "s-flow")
        assert done["state"] == "done" and done["state_text"] == "done"
        fake.quiet(daemon.state_dir, event(ws, "UserPromptSubmit", "s-flow", prompt="secret plans"))
        (again,) = entries(daemon, "s-flow")
        assert again["state"] == "working" and "secret plans" not in json.dumps(again)

        op.call("daemon.status")  # every event published so far is queued ahead of this answer
        states = [e["entry"]["state"] for e in op._events if e["entry"]["session_id"] == "s-flow"]
        assert states == ["waiting", "working", "done", "working"]


def test_the_same_state_again_is_no_new_transition(daemon, claude):
    ws, fake = workspace(), claude()
    with daemon.operator(timeout_s=10) as op:
        op.subscribe(["attention"])
        before = op.call("daemon.status")["attention"]["transitions"]
        fake.quiet(daemon.state_dir, notification(ws, "s-dup"))
        fake.quiet(daemon.state_dir, notification(ws, "s-dup"))
        fake.quiet(
            daemon.state_dir, notification(ws, "s-dup", "Claude is waiting for your input", "idle_prompt")
        )
        status = op.call("daemon.status")["attention"]
        events = [e for e in op._events if e["entry"]["session_id"] == "s-dup"]
        assert len(events) == 1 and events[0]["previous"] is None and events[0]["entry"]["state"] == "waiting"
        assert status["transitions"] == before + 1
        (entry,) = entries(daemon, "s-dup")
        assert entry["reports"] == 3 and entry["transitions"] == 1
        assert entry["message"] == "Claude is waiting for your input"  # the latest words, no new event
        # auth_success is no reason to wait: nothing is sent.
        fake.quiet(daemon.state_dir, notification(ws, "s-auth", "Logged in", "auth_success"))
        assert entries(daemon, "s-auth") == []


def test_another_agent_can_neither_set_nor_read_this_agents_state(daemon, claude):
    ws, victim, other = workspace(), claude(), claude()
    victim.quiet(daemon.state_dir, notification(ws, "s-victim"))
    (theirs,) = entries(daemon, "s-victim")
    out = other.as_agent(
        daemon.state_dir,
        [
            ["named", {"state": "done", "session_id": "s-victim", "agent_id": theirs["agent_id"]}],
            ["same_session", {"state": "done", "session_id": "s-victim"}],
        ],
    )
    assert out["me"] != theirs["agent_id"]
    assert out["list"] == {"agents": [], "waiting": 0}  # the victim's entry is not shown
    assert out["named"]["error"] == -32602 and "unknown params" in out["named"]["message"]
    # The same session id is another key: the other agent's own entry.
    assert out["same_session"]["entry"]["agent_id"] == out["me"]
    now = {a["agent_id"]: a["state"] for a in entries(daemon, "s-victim")}
    assert now == {theirs["agent_id"]: "waiting", out["me"]: "done"}
    # And the victim, listing its own over agent.sock, sees only its own.
    mine = victim.as_agent(daemon.state_dir, [])
    assert mine["me"] == theirs["agent_id"]
    assert {a["agent_id"] for a in mine["list"]["agents"]} == {theirs["agent_id"]}


def test_bad_params_get_clear_errors(daemon):
    with daemon.agent() as agent:
        for params, words in [
            ({"state": "asleep"}, "state: must be one of: waiting, working, done"),
            ({}, "state: is required"),
            ({"state": "waiting", "message": "x" * 501}, "message: must be at most 500"),
            ({"state": "waiting", "session_id": "s" * 257}, "session_id: must be at most 256"),
            ({"state": "waiting", "kind": "Bad Kind"}, "kind: lowercase letters"),
            ({"state": "waiting", "owner": "a-0"}, "unknown params"),
        ]:
            with pytest.raises(RPCError) as e:
                agent.call("agent.attention", params)
            assert e.value.code == -32602 and words in e.value.message, (params, e.value.message)
    with daemon.operator() as op, pytest.raises(RPCError) as e:
        op.call("agent.attention", {"state": "waiting"})
    assert "agent.sock only" in e.value.message


def test_the_hook_exits_0_silently_when_the_daemon_is_down_or_stalls(tmp_path):
    ws = workspace()
    nowhere = short_tmp("none-") / "s"
    for payload in (notification(ws, "s"), event(ws, "Stop", "s"), event(ws, "UserPromptSubmit", "s")):
        r = subprocess.run(
            [*HOOK, "--state-dir", str(nowhere)], input=json.dumps(payload), capture_output=True, text=True
        )
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = subprocess.run(
        [sys.executable, "-m", "console", "agents", "--state-dir", str(nowhere)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 3 and r.stderr.startswith("agent-console:") and "Traceback" not in r.stderr
    # A daemon that accepts and never answers: the hook gives up after its 3 s deadline.
    stalled = short_tmp("stall-") / "s"
    loc = locate(stalled)
    ensure_private_dir(loc.state_dir)
    ensure_private_dir(loc.runtime_dir)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(loc.agent_socket))
    os.chmod(loc.agent_socket, 0o600)
    server.listen(4)
    try:
        started = time.monotonic()
        r = subprocess.run(
            [*HOOK, "--state-dir", str(stalled)],
            input=json.dumps(event(ws, "Stop", "s")),
            capture_output=True,
            text=True,
            timeout=30,
        )
        took = time.monotonic() - started
    finally:
        server.close()
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert 2.5 < took < 8, took


def test_install_adds_the_attention_hooks_without_exit_2_and_doctor_notes_them(daemon, tmp_path):
    path = tmp_path / "settings.json"
    r = daemon.cli("hook", "install", "claude-code", "--settings", str(path), "--timeout", "30")
    assert r.returncode == 0, r.stderr
    hooks = json.loads(path.read_text())["hooks"]
    for name in ("Notification", "Stop", "UserPromptSubmit"):
        (group,) = hooks[name]
        (hook,) = group["hooks"]
        assert "hook claude-code" in hook["command"] and "exit 2" not in hook["command"]
        assert f"--state-dir {daemon.state_dir}" in hook["command"] and hook["timeout"] == 10
    assert hooks["Notification"][0]["matcher"] == ""
    assert hooks["PreToolUse"][0]["hooks"][0]["command"].endswith(" || exit 2")
    doctor = daemon.cli("hook", "doctor", "--settings", str(path))
    assert doctor.returncode == 0 and "no agent-console Stop hook" not in doctor.stdout, doctor.stdout
    # Without them: a note, not a fail-open risk.
    settings = json.loads(path.read_text())
    del settings["hooks"]["Stop"]
    path.write_text(json.dumps(settings))
    doctor = daemon.cli("hook", "doctor", "--settings", str(path))
    assert doctor.returncode == 0 and "NOTE    no agent-console Stop hook" in doctor.stdout, doctor.stdout
    assert "no fail-open risk found" in doctor.stdout


def test_sessions_list_marks_the_session_claude_runs_in(daemon):
    """Claude Code started in a console session: the session shows its attention state."""
    script = Path(short_tmp("fc-")) / "fake_claude.py"
    script.write_text(FAKE_CLAUDE)
    # sh stays the session leader (`; :` keeps it from exec'ing): claude is not a leader.
    r = daemon.cli(
        "sessions",
        "new",
        "--unconfined",
        "--title",
        "claude",
        "--",
        "sh",
        "-c",
        f"{sys.executable} {script}; :",
    )
    assert r.returncode == 0, r.stderr
    sid = r.stdout.strip()
    ws = workspace()
    line = json.dumps(
        {
            "argv": [*HOOK, "--state-dir", str(daemon.state_dir)],
            "stdin": json.dumps(notification(ws, "s-pty")),
        }
    )
    try:
        with daemon.operator() as op:
            op.call("sessions.input", {"session": sid, "text": line + "\n"})
        row = wait_for(
            lambda: (
                (ln := next((x for x in daemon.cli("sessions").stdout.splitlines() if x.startswith(sid)), ""))
                and "waiting for you" in ln
                and ln
            ),
            timeout_s=15,
        )
        assert "waiting for you" in row
    finally:
        daemon.cli("sessions", "kill", sid, "--grace", "1")


async def test_the_console_shows_a_waiting_badge_and_notifies_once(claude):
    ws = workspace()
    with running_daemon() as d:
        app = make_app(d, Clock())
        fake = claude()
        seen = Notices()
        async with app.run_test(size=(120, 30), message_hook=seen) as pilot:
            await until(pilot, lambda: app.pills.get("daemon") == "" and app.link is not None)
            await until(pilot, lambda: "pending" in app.pills.items)
            assert app.pills.get("attention") == ""
            await asyncio.to_thread(fake.quiet, d.state_dir, notification(ws, "s-tui"))
            await until(pilot, lambda: app.pills.get("attention") == "1 agent waiting for you")
            assert app.pills.items["attention"][1] == "warning"
            await asyncio.to_thread(fake.quiet, d.state_dir, notification(ws, "s-tui"))  # the same again
            await asyncio.to_thread(fake.quiet, d.state_dir, notification(ws, "s-tui2"))
            await until(pilot, lambda: app.pills.get("attention") == "2 agents waiting for you")
            waits = [n for n in seen.raised if "is waiting for you" in n.message]
            assert len(waits) == 2, [n.message for n in waits]
            assert "Claude needs your permission to use Bash" in waits[0].message
            await asyncio.to_thread(fake.quiet, d.state_dir, event(ws, "Stop", "s-tui"))
            await asyncio.to_thread(fake.quiet, d.state_dir, event(ws, "Stop", "s-tui2"))
            await until(pilot, lambda: "attention" not in app.pills.items)


@pytest.mark.claude_code
def test_real_claude_code_reports_working_then_done_through_the_installed_hooks(daemon, tmp_path):
    from support.claude_code import ClaudeCodeUnavailable, find_claude_code, run_claude
    from support.fake_anthropic import fake_anthropic, text, tool_use

    try:
        real = find_claude_code()
    except ClaudeCodeUnavailable as e:
        pytest.skip(f"REAL CLAUDE CODE E2E TEST NOT RUN: {e}")
    # The harness starts claude as `setsid claude -p` would: the leader of a session of
    # its own without a terminal, which the sessions its hooks run in may name.
    claude = real
    ws = workspace()
    r = daemon.cli("hook", "install", "claude-code", "--settings", str(ws / ".claude" / "settings.json"))
    assert r.returncode == 0, r.stderr
    target = ws / "src" / "made.txt"
    script = [[tool_use("Write", {"file_path": str(target), "content": "made\n"})], [text("Finished.")]]
    with daemon.operator(timeout_s=10) as op:
        op.subscribe(["attention"])
        with fake_anthropic(script) as api:
            run = run_claude(claude, api, ws)
        assert run.returncode == 0 and target.exists(), run.describe()
        session = run.result["session_id"]
        op.call("daemon.status")
        states = [e["entry"]["state"] for e in op._events if e["entry"]["session_id"] == session]
    assert states == ["working", "done"], run.describe()
    (entry,) = [a for a in agents_json(daemon) if a["session_id"] == session]
    assert entry["state"] == "done" and entry["kind"] == "stop" and entry["root_pid"] is not None


# The agent-process rule Claude Code's hooks need (procs.may_name): a hook runs in a new
# session without a terminal, which may be crossed; a session with a terminal (a login,
# a terminal window) may not, or two agents started from two terminals could name the
# same ancestor and share one identity.
LEADER = textwrap.dedent(
    """
    import contextlib, fcntl, os, subprocess, sys, termios
    if sys.argv[3] == "tty":  # take a controlling terminal, as a login shell has one
        master, slave = os.openpty()
        fd = os.open(os.ttyname(slave), os.O_RDWR)
        with contextlib.suppress(OSError):  # opening it may have made it ours already
            fcntl.ioctl(fd, termios.TIOCSCTTY, 0)
        assert open("/proc/self/stat").read().rsplit(")", 1)[1].split()[4] != "0"
    name = (
        "import json, sys\\n"
        "from console.client import Client, RPCError\\n"
        "with Client.connect(sys.argv[1], role='agent') as c:\\n"
        "    try:\\n"
        "        print(json.dumps(c.call('hello', {'agent_pid': int(sys.argv[2])})['agent']['root_pid']))\\n"
        "    except RPCError as e:\\n"
        "        print(json.dumps(e.code))\\n"
    )
    r = subprocess.run([sys.executable, "-c", name, sys.argv[1], sys.argv[2]], capture_output=True, text=True)
    print(r.stdout or r.stderr, end="")
    """
)
AGENT = textwrap.dedent(
    """
    import os, subprocess, sys
    r = subprocess.run(
        [sys.executable, "-c", sys.argv[1], sys.argv[2], str(os.getpid()), sys.argv[3]],
        capture_output=True, text=True, start_new_session=True,
    )
    print(r.stdout or r.stderr, end="")
    """
)


@pytest.mark.parametrize(("between", "named"), [("detached", True), ("tty", False)])
def test_an_agent_is_named_across_a_detached_session_never_across_a_terminal(daemon, between, named):
    r = subprocess.run(
        [sys.executable, "-c", AGENT, LEADER, str(daemon.state_dir), between],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,  # an agent without a terminal leads a session of its own
    )
    answer = json.loads(r.stdout)
    if named:
        assert isinstance(answer, int) and answer > 1, r.stdout
    else:
        assert answer == -32001, r.stdout  # UNAUTHORIZED
