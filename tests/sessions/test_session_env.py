"""A session's environment is its own terminal's, not the daemon's.

The daemon here is started the way a script or a tmux pane would start it: TERM=dumb,
inside tmux, with AGENT_CONSOLE_HOME set. None of that may reach a session.
"""

from __future__ import annotations

import base64

import pytest
from support.daemon import operation, wait_for, workspace

from console.policy import PolicyError, policy_from_toml

pytestmark = pytest.mark.needs_bwrap

DAEMON_ENV = {
    "TERM": "dumb",
    "TMUX": "x",
    "TMUX_PANE": "%9",
    "AGENT_CONSOLE_HOME": "y",
    "COLORTERM": "",
}
PROBE = 'echo "T=$TERM C=$COLORTERM X=${TMUX-unset} P=${TMUX_PANE-unset} H=${AGENT_CONSOLE_HOME-unset}"; tput colors'
POLICY = 'session_env = { EDITOR = "ed-from-policy", PAGER = "less -R" }\n'


DAEMON_POLICY = POLICY


def output_of(client, sid: str) -> str:
    client.call("sessions.wait", {"session": sid, "timeout_s": 10})
    r = client.call("sessions.read", {"session": sid, "offset": 0, "max_bytes": 65536})
    return base64.b64decode(r["data_base64"]).decode()


def run(client, script: str, env: dict[str, str] | None = None) -> tuple[str, str]:
    params = {"unconfined": True, "argv": ["sh", "-c", script], "cwd": "/tmp"}
    if env is not None:
        params["env"] = env
    sid = client.call("sessions.new", params)["session"]["id"]
    return sid, output_of(client, sid)


def test_operator_session_gets_its_own_terminal_and_no_daemon_private_variables(daemon):
    with daemon.operator() as op:
        _, out = run(op, PROBE)
    assert "T=xterm-256color C=truecolor X=unset P=unset H=unset" in out
    assert out.splitlines()[-1].strip() == "256"


def test_the_session_marker_stays(daemon):
    with daemon.operator() as op:
        sid, out = run(op, 'echo "S=$AGENT_CONSOLE_SESSION"')
    assert f"S={sid}" in out


def test_policy_session_env_is_passed_through(daemon):
    with daemon.operator() as op:
        _, out = run(op, 'echo "E=$EDITOR P=$PAGER"')
    assert "E=ed-from-policy P=less -R" in out


def test_an_explicit_override_of_the_caller_wins_over_the_defaults(daemon):
    with daemon.operator() as op:
        _, out = run(op, 'echo "T=$TERM X=${TMUX-unset}"', env={"TERM": "screen", "TMUX": "mine"})
    assert "T=screen X=mine" in out


def test_sandboxed_session_gets_the_same_terminal_but_not_the_operators_session_env(daemon):
    ws = workspace()
    probe = PROBE + '; echo "E=${EDITOR-unset}"'
    with daemon.agent() as agent:
        op = operation(
            ws, kind="shell", executable="sh", args=["-c", probe], mode="interactive", session_id="env-a"
        )
        answer = agent.call("operation.submit", {"operation": op})
        assert answer["verdict"] == "allow"
        out = output_of(agent, answer["session"]["id"])
    assert "T=xterm-256color C=truecolor X=unset P=unset H=unset" in out
    assert "E=unset" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('session_env = ["EDITOR=vim"]', 'session_env: must be a table of NAME = "value"'),
        ("session_env = { EDITOR = 1 }", 'session_env.EDITOR: must be a string; quote it: EDITOR = "..."'),
        ('session_env = { "A B" = "x" }', "session_env: 'A B' is not a variable name"),
        (
            'session_env = { AGENT_CONSOLE_SESSION = "x" }',
            "names starting with AGENT_CONSOLE_ are the console's own",
        ),
    ],
)
def test_bad_session_env_is_refused_with_a_clear_error(text, message):
    with pytest.raises(PolicyError) as err:
        policy_from_toml(text)
    assert message in str(err.value)


def test_daemon_reports_a_bad_session_env_and_keeps_the_last_good_policy(daemon):
    good = daemon.loc.policy.read_text()
    try:
        daemon.loc.policy.write_text(good.replace('EDITOR = "ed-from-policy"', "EDITOR = 1"))
        with daemon.operator() as op:
            status = wait_for(lambda: (s := op.call("daemon.status"))["policy"]["error"] and s)
            assert "session_env.EDITOR: must be a string" in status["policy"]["error"]
            _, out = run(op, 'echo "E=$EDITOR"')
            assert "E=ed-from-policy" in out
    finally:
        daemon.loc.policy.write_text(good)
