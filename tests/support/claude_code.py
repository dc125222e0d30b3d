"""The real Claude Code CLI, offline, against a scripted Messages API (fake_anthropic).

What makes Claude Code 2.1.x (2.1.332, found by experiment) run here with no key and no
internet, each turn answered by tests/support/fake_anthropic.py:

    claude -p PROMPT --output-format json --dangerously-skip-permissions
    env: ANTHROPIC_BASE_URL=http://127.0.0.1:PORT   (it calls POST /v1/messages?beta=true,
                                                     stream: true; HEAD /api/hello unless
                                                     nonessential traffic is disabled)
         ANTHROPIC_API_KEY=dummy                     (any value; -p mode asks no one)
         HOME=<throw-away>                           (~/.claude, ~/.claude.json, transcripts)
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, DISABLE_TELEMETRY=1, DISABLE_AUTOUPDATER=1
         IS_SANDBOX=1                                (as root, bypass mode is refused without
                                                     it: "--dangerously-skip-permissions cannot
                                                     be used with root/sudo privileges")
    cwd: the project, whose .claude/settings.json holds the PreToolUse hook. -p mode
         trusts project settings without a dialog.

`--dangerously-skip-permissions` (= `--permission-mode bypassPermissions`) means nothing but
our hook stands between the model and the tool: a hook that fails open shows up as a tool
that ran. (Without it, -p mode denies a Bash call that writes a file by itself, which would
hide a fail-open.) One run takes about 1.5 s plus whatever the hook waits for.

The hook contract seen with 2.1.332, `claude -p` + bypassPermissions:
- exit 0 + `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
  "deny", "permissionDecisionReason": R}}`: the tool does not run; the model's tool_result is
  "PreToolUse:Bash hook error: R". Legacy `{"decision": "block", "reason": R}` does the same.
- "allow": the tool runs. "allow" + `updatedInput` runs the rewritten input instead.
- "ask": in -p mode nobody can be asked: not run, the tool_result is the reason.
- exit 2: blocked; the tool_result carries the hook's stderr.
- FAIL-OPEN (the tool runs): exit 1 or any other non-2 code (127 not found, 126 not
  executable), stdout that is not JSON, `{}`, a permissionDecision outside allow/deny/ask,
  a hookSpecificOutput whose hookEventName is missing or not "PreToolUse", and a hook that
  outlives its `timeout` (killed, then the tool runs). `{"continue": false}` stops the session
  but the tool has already run.
- The hook gets on stdin: session_id, transcript_path, cwd, permission_mode, hook_event_name,
  tool_name, tool_input, tool_use_id (and prompt_id, effort); in its env CLAUDE_PROJECT_DIR.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.daemon import DaemonProcess
from support.fake_anthropic import FakeAnthropic

ROOT = Path(__file__).resolve().parents[2]  # the checkout: tests/support/ is two below it
INSTALLER = ROOT / "scripts" / "install-claude-code.sh"
SUPERVISED = "Bash|Write|Edit|MultiEdit|NotebookEdit"


class ClaudeCodeUnavailable(RuntimeError):
    """Claude Code could not be installed here; the message says why (and how to fix it)."""


def find_claude_code() -> Path:
    """The `claude` binary: $AGENT_CONSOLE_CLAUDE, else the pinned version in the cache,
    installed now by the same script ./dev runs when it is not there yet."""
    explicit = os.environ.get("AGENT_CONSOLE_CLAUDE")
    if explicit:
        return Path(explicit)
    try:
        r = subprocess.run(["bash", str(INSTALLER)], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as e:
        raise ClaudeCodeUnavailable(
            "npm install of Claude Code took over 300 s (npm registry unreachable?)"
        ) from e
    if r.returncode != 0:
        why = " | ".join(r.stderr.strip().splitlines()[:6])
        raise ClaudeCodeUnavailable(f"{INSTALLER.name} exited {r.returncode}: {why}")
    return Path(r.stdout.strip().splitlines()[-1])


def agent_console_argv() -> list[str]:
    """This checkout's `agent-console`, by absolute path (Claude Code's PATH is not the venv's)."""
    entry = Path(sys.executable).parent / "agent-console"
    return [str(entry)] if entry.exists() else [sys.executable, "-m", "console"]


def hook_command(state_dir: Path, timeout_s: float | None = None) -> str:
    """The hook command line of docs/claude-code.md, for a settings file."""
    argv = [*agent_console_argv(), "hook", "claude-code", "--state-dir", str(state_dir)]
    if timeout_s is not None:
        argv += ["--timeout", f"{timeout_s:g}"]
    return shlex.join(argv)


def write_hook_settings(
    project: Path,
    command: str,
    *,
    hook_timeout_s: int = 60,
    matcher: str = SUPERVISED,
    name: str = "settings.json",
) -> Path:
    """A project .claude/settings.json with `command` as the PreToolUse hook.

    Tests that want the settings `agent-console hook install` writes can run that instead:
    run_claude only needs a project whose settings name a hook."""
    path = project / ".claude" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": matcher,
                    "hooks": [{"type": "command", "command": command, "timeout": hook_timeout_s}],
                }
            ]
        }
    }
    path.write_text(json.dumps(settings, indent=2) + "\n")
    return path


@dataclass
class ClaudeRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    api: FakeAnthropic

    @property
    def result(self) -> dict[str, Any]:
        """The final `--output-format json` object (type: result)."""
        try:
            data = json.loads(self.stdout)
        except ValueError as e:
            raise AssertionError(f"claude printed no JSON result:\n{self.describe()}") from e
        assert isinstance(data, dict), self.describe()
        return data

    def describe(self) -> str:
        return (
            f"claude exited {self.returncode} after {self.seconds:.1f} s\n"
            f"stdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-3000:]}\n"
            f"api:\n{self.api.report()}"
        )


def claude_env(api: FakeAnthropic, home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "IS_SANDBOX": "1",
        "TMPDIR": str(home / "tmp"),  # Claude Code's scratch (claude-UID/, sockets) goes with HOME
    }
    env.update(extra or {})
    return env


def run_claude(
    claude: Path,
    api: FakeAnthropic,
    project: Path,
    prompt: str = "Do what the task needs.",
    *,
    timeout_s: float = 90,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = ("--dangerously-skip-permissions",),
) -> ClaudeRun:
    """Run `claude -p` in `project` until it exits; kill it (and its hooks) past timeout_s."""
    home = Path(tempfile.mkdtemp(prefix="cc-home-", dir="/tmp"))
    (home / "tmp").mkdir()
    start = time.monotonic()
    proc = subprocess.Popen(
        [str(claude), "-p", prompt, "--output-format", "json", *args],
        cwd=project,
        env=claude_env(api, home, env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        run = ClaudeRun(-9, stdout, stderr, time.monotonic() - start, api)
        raise AssertionError(f"claude did not finish in {timeout_s} s:\n{run.describe()}") from None
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return ClaudeRun(proc.returncode, stdout, stderr, time.monotonic() - start, api)


class Operator(threading.Thread):
    """Answers the first pending request of `tool` through the operator socket, as a person at
    the console would. Start it before Claude Code; `result()` afterwards returns the request
    it answered, or fails saying what went wrong (with `context`, e.g. the run's description)."""

    def __init__(
        self, daemon: DaemonProcess, action: str, *, tool: str = "claude-code:Bash", **params: Any
    ) -> None:
        super().__init__(name=f"operator-{action}", daemon=True)
        self.d, self.action, self.tool, self.params = daemon, action, tool, params
        self.item: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self._done = threading.Event()

    def run(self) -> None:
        try:
            with self.d.operator() as op:
                while not self._done.is_set():
                    pending = [
                        p
                        for p in op.call("pending.list")["pending"]
                        if p["operation"].get("tool") == self.tool
                    ]
                    if pending:
                        self.item = pending[0]
                        op.call(
                            "decide",
                            {"target": self.item["request_id"], "action": self.action, **self.params},
                        )
                        return
                    self._done.wait(0.05)
        except BaseException as e:
            self.error = e

    def result(self, context: str = "", timeout_s: float = 10) -> dict[str, Any]:
        self.join(timeout_s)
        self._done.set()
        self.join(5)
        if self.error is not None:
            raise AssertionError(
                f"the operator could not {self.action}: {self.error!r}\n{context}"
            ) from self.error
        assert self.item is not None, f"no pending {self.tool} request appeared\n{context}"
        return self.item


__all__ = [
    "ClaudeCodeUnavailable",
    "ClaudeRun",
    "Operator",
    "find_claude_code",
    "hook_command",
    "run_claude",
    "write_hook_settings",
]
