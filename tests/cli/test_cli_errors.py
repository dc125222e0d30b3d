"""No traceback reaches a user, and exit codes mean what the docs say
(0 ok, 1 denied / tampered, 2 bad input, 3 no daemon)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.daemon import short_tmp, workspace
from support.fake_daemon import HELLO, fake_daemon


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "console", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def clean(r: subprocess.CompletedProcess[str], code: int) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    assert r.stderr.startswith("agent-console: ") or code == 0, r.stderr


def test_history_verify_and_export_without_a_database():
    state = short_tmp() / "s"
    state.mkdir()
    clean(cli("history", "verify", "--state-dir", str(state)), 2)
    clean(cli("history", "export", "--state-dir", str(state)), 2)


def test_history_verify_and_export_on_a_damaged_database():
    state = short_tmp() / "s"
    state.mkdir()
    (state / "history.sqlite3").write_bytes(os.urandom(8192))
    r = cli("history", "verify", "--state-dir", str(state))
    clean(r, 1)
    assert "damaged" in r.stderr
    clean(cli("history", "export", "--state-dir", str(state)), 2)


def test_history_verify_with_a_missing_or_garbage_anchor_file(daemon, tmp_path):
    clean(
        cli("history", "verify", "--anchor", str(tmp_path / "nope"), "--state-dir", str(daemon.state_dir)), 2
    )
    (tmp_path / "garbage").write_text("hello")
    r = cli("history", "verify", "--anchor", str(tmp_path / "garbage"), "--state-dir", str(daemon.state_dir))
    clean(r, 2)
    assert "not an agent-console anchor file" in r.stderr


def test_history_accept_without_a_daemon_is_exit_3(tmp_path):
    clean(cli("history", "accept", "--through", "5", "--state-dir", str(tmp_path / "none")), 3)


@pytest.mark.parametrize("text", ["[1,2]", '"op"', "7", "null"])
def test_fingerprint_of_something_that_is_not_an_object(text):
    r = cli("fingerprint", "-", stdin=text)
    clean(r, 2)
    assert "JSON object" in r.stderr


HUGE = "9" * 4400


@pytest.mark.parametrize("command", ["fingerprint", "evaluate"])
def test_a_4400_digit_integer_is_bad_input_not_a_crash(command):
    op = f'{{"kind":"process","executable":"true","workspace_root":"{workspace()}","timeout_s":{HUGE}}}'
    r = cli(command, "-", stdin=op)
    clean(r, 2)
    assert "number_too_large" in r.stderr


def test_a_4400_digit_integer_in_a_request_is_exit_2_not_denied(daemon):
    op = f'{{"kind":"process","executable":"true","workspace_root":"{workspace()}","timeout_s":{HUGE}}}'
    r = cli("request", "-", "--state-dir", str(daemon.state_dir), stdin=op)
    clean(r, 2)


def raw_call(path: Path, frames: list[bytes]) -> list[dict]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(path))
        out = []
        f = s.makefile("rb")
        for frame in frames:
            s.sendall(frame)
            out.append(json.loads(f.readline()))
        return out


def test_a_non_ascii_operator_token_is_refused_as_wrong_not_an_internal_error(daemon):
    (answer,) = raw_call(
        daemon.loc.operator_socket,
        [
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hello", "params": {"token": "tökén✓"}}).encode()
            + b"\n"
        ],
    )
    assert answer["error"]["code"] != -32603
    assert "token" in answer["error"]["message"]


def test_a_5000_digit_id_is_answered_and_the_connection_survives(daemon):
    huge = b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"hello","params":{}}\n'
    ok = b'{"jsonrpc":"2.0","id":2,"method":"hello","params":{}}\n'
    first, second = raw_call(daemon.loc.agent_socket, [huge, ok])
    assert first["error"]["code"] == -32700 and "digits" in first["error"]["message"]
    assert second["id"] == 2 and "result" in second


def test_sessions_replay_into_a_closed_pipe_ends_quietly(tmp_path):
    state = short_tmp() / "s"
    rec = state / "sessions" / "s1"
    rec.mkdir(parents=True)
    lines = [json.dumps({"version": 2, "width": 80, "height": 24})]
    lines += [json.dumps([i * 0.001, "o", f"line {i}\r\n" * 50]) for i in range(2000)]
    (rec / "output.cast").write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "console",
            "sessions",
            "replay",
            "s1",
            "--speed",
            "1000",
            "--state-dir",
            str(state),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(100)  # as `| head -c 100` does, then goes away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert code == 141


def test_sessions_replay_speed_zero_is_bad_input(tmp_path):
    state = short_tmp() / "s"
    rec = state / "sessions" / "s1"
    rec.mkdir(parents=True)
    (rec / "output.cast").write_text(json.dumps({"version": 2, "width": 80, "height": 24}) + "\n")
    clean(cli("sessions", "replay", "s1", "--speed", "0", "--state-dir", str(state)), 2)


def test_an_answer_the_cli_cannot_read_is_exit_3_and_not_called_a_refusal():
    # The call may have acted (an exec's command may have run): the CLI must not say the
    # daemon refused it, nor exit 2 as for bad input, but 3, which an agent takes as
    # "not allowed", and point at the history.
    state = short_tmp() / "s"
    answers = {"hello": HELLO, "operation.submit": {"request_id": "r-1-1", "verdict": "allow"}}
    op = f'{{"kind":"process","executable":"true","workspace_root":"{workspace()}"}}'
    with fake_daemon(state, answers):
        r = cli("request", "-", "--state-dir", str(state), stdin=op)
    clean(r, 3)
    assert "malformed result of operation.submit" in r.stderr
    assert "refused" not in r.stderr and "agent-console history" in r.stderr
