"""Running the Claude Code hook as Claude Code does: a JSON call on stdin, an answer on stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def hook_input(ws, tool: str, tool_input: dict, session: str = "sess-1", event: str = "PreToolUse") -> dict:
    return {
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(ws),
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": tool_input,
    }


def hook_cli(daemon, payload: Any, timeout: str = "20", env: dict | None = None) -> dict | None:
    """The hook's ``hookSpecificOutput``, or None when it gave no answer (exit 0, no output)."""
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "console",
            "hook",
            "claude-code",
            "--timeout",
            timeout,
            "--state-dir",
            str(daemon.state_dir),
        ],
        input=payload if isinstance(payload, str) else json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    if not r.stdout.strip():
        return None  # no answer: Claude Code's own flow decides
    return json.loads(r.stdout)["hookSpecificOutput"]


SECRET = "PRIVATE-KEY-MATERIAL"


def secret_home(short_tmp) -> tuple:
    """A home with an SSH key, and the policy line that hides it from sandboxed commands
    (as the daemon hides real homes): (the home, the policy text)."""
    home = short_tmp("ac-home-")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text(SECRET + "\n")
    return home, f"hidden = [{str(home)!r}]\n"
