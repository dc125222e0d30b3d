"""`agent-console web` as a command: where it listens, its token file, what it refuses."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from support.daemon import DaemonProcess, short_tmp

from console.web.auth import SESSION_IDLE_S, WebAuth


def web(*args: str, home: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENT_CONSOLE_HOST"}
    return subprocess.Popen(
        [sys.executable, "-m", "console", "web", "--state-dir", str(home), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_it_listens_on_loopback_with_a_private_token_file(daemon: DaemonProcess) -> None:
    proc = web("--port", "0", home=daemon.state_dir)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.match(
            r"agent-console web: (http://127\.0\.0\.1:(\d+)/) for local \(log in with the token in (\S+)\)",
            line,
        )
        assert m, line
        token_file = Path(m.group(3))
        assert token_file.stat().st_mode & 0o777 == 0o600
        assert len(token_file.read_text().strip()) >= 32
        with urllib.request.urlopen(m.group(1)) as answer:  # redirected to the login form
            page = answer.read().decode()
            assert answer.url.endswith("/login") and "Log in" in page
            assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
        assert line.count(token_file.read_text().strip()) == 0  # the token is never printed
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    assert proc.returncode == 0


def test_it_refuses_what_would_expose_it() -> None:
    home = short_tmp("web-")
    wide = subprocess.run(
        [sys.executable, "-m", "console", "web", "--state-dir", str(home), "--bind", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert wide.returncode == 2 and "not loopback" in wide.stderr
    push = subprocess.run(
        [
            sys.executable,
            "-m",
            "console",
            "web",
            "--state-dir",
            str(home),
            "--ntfy",
            "https://ntfy.example/t",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert push.returncode == 2 and "--public-url" in push.stderr
    loose = home / "loose.token"
    loose.write_text("x" * 40)
    loose.chmod(0o644)
    refused = subprocess.run(
        [sys.executable, "-m", "console", "web", "--state-dir", str(home), "--token-file", str(loose)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert refused.returncode == 2 and "0600" in refused.stderr


def test_sessions_end_when_idle_and_wrong_tokens_are_throttled() -> None:
    now = [0.0]
    auth = WebAuth("k" * 40, clock=lambda: now[0])
    sid, session = auth.login("k" * 40) or ("", None)
    assert session is not None and auth.session(sid) is session
    now[0] += SESSION_IDLE_S + 1
    assert auth.session(sid) is None
    for _ in range(10):
        assert auth.login("wrong") is None
    assert auth.throttled() and auth.login("k" * 40) is None  # even the right one, for a minute
    now[0] += 61
    assert auth.login("k" * 40) is not None
