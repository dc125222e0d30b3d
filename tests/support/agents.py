"""The real agent CLIs from npm, offline, against tests/support/fake_models.py.

Each CLI is installed by scripts/install-agents.sh (the one place its version is pinned)
into ~/.cache/agent-console/<agent>, never into the project. What makes each run here
with no key and no internet is in its driver below, found by experiment with the pinned
version; docs/agents.md says the same for a person.

Every run is started as the leader of a session of its own without a terminal
(``start_new_session``), as ``setsid AGENT`` would: the daemon then names the agent
process as one identity for its hooks and its ``exec`` calls (docs/protocol.md,
"Identity").
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from support.fake_models import FakeModel, Step, call

ROOT = Path(__file__).resolve().parents[2]
INSTALLER = ROOT / "scripts" / "install-agents.sh"


class AgentUnavailable(RuntimeError):
    """The CLI could not be installed here; the message says why."""


def find_agent(agent: str) -> Path:
    """The pinned CLI, installed now by the same script ./dev runs when it is missing."""
    explicit = os.environ.get(f"AGENT_CONSOLE_{agent.upper().replace('-', '_')}")
    if explicit:
        return Path(explicit)
    try:
        r = subprocess.run(["bash", str(INSTALLER), agent], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as e:
        raise AgentUnavailable(f"npm install of {agent} took over 600 s (npm registry unreachable?)") from e
    if r.returncode != 0:
        why = " | ".join(r.stderr.strip().splitlines()[:6])
        raise AgentUnavailable(f"{INSTALLER.name} {agent} exited {r.returncode}: {why}")
    return Path(r.stdout.strip().splitlines()[-1])


def pinned_versions() -> dict[str, str]:
    r = subprocess.run(["bash", str(INSTALLER), "--versions"], capture_output=True, text=True, check=True)
    return {line.split()[0]: line.split()[2] for line in r.stdout.splitlines() if line.strip()}


@dataclass
class AgentRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    model: FakeModel

    def describe(self) -> str:
        return (
            f"exited {self.returncode} after {self.seconds:.1f} s\n"
            f"stdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-3000:]}\nmodel:\n{self.model.report()}"
        )


def base_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TMPDIR": str(home / "tmp"),
        "NO_COLOR": "1",
    }
    env.update(extra or {})
    return env


def new_home() -> Path:
    """A throw-away home outside /tmp (Codex refuses to set up its helpers under /tmp)."""
    base = Path("/var/tmp/agent-console-tests")
    base.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="home-", dir=base))
    (home / "tmp").mkdir()
    return home


def run(
    argv: list[str], cwd: Path, env: dict[str, str], model: FakeModel, timeout_s: float = 120
) -> AgentRun:
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
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
        failed = AgentRun(-9, stdout, stderr, time.monotonic() - start, model)
        raise AssertionError(f"{argv[0]} did not finish in {timeout_s} s:\n{failed.describe()}") from None
    finally:
        with_killpg(proc.pid)
    return AgentRun(proc.returncode, stdout, stderr, time.monotonic() - start, model)


def with_killpg(pgid: int) -> None:
    """What the agent left running in its session (servers, shells) ends with it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


# ---------------------------------------------------------------------------------------
# Codex


CODEX_CONFIG = """model = "gpt-5.5"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "{base}/v1"
wire_api = "responses"
requires_openai_auth = false
"""


class Codex:
    """``codex exec`` against the fake Responses API. ``--dangerously-bypass-approvals-and-
    sandbox``: nothing but the hook stands between the model and the tool, so a hook that
    fails open shows up as a tool that ran."""

    name = "codex"
    shell_tool = "Bash"
    edit_tool = "apply_patch"
    points: ClassVar[dict[str, str]] = {
        "shell": "PreToolUse hook, Bash (hooks.json, trusted)",
        "edit": "PreToolUse hook, apply_patch",
        "install": "hook install + doctor (app-server trust)",
        "attention": "UserPromptSubmit, Stop hooks",
    }

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.home = new_home()
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir()
        self.config_dir = self.codex_home
        (self.codex_home / "config.toml").write_text(CODEX_CONFIG.format(base="http://127.0.0.1:9"))

    def install(self, state_dir: Path, timeout_s: float, python: str | None = None) -> list[str]:
        from console.adapters.codex import install

        old = os.environ.get("CODEX_HOME")
        os.environ["CODEX_HOME"] = str(self.codex_home)
        try:
            return install.install(
                state_dir=state_dir, timeout_s=timeout_s, home=None, binary=str(self.binary), python=python
            )
        finally:
            if old is None:
                del os.environ["CODEX_HOME"]
            else:
                os.environ["CODEX_HOME"] = old

    def run(self, model: FakeModel, ws: Path, timeout_s: float = 120) -> AgentRun:
        argv = [
            str(self.binary),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "-c",
            f'model_providers.fake.base_url="{model.base_url}/v1"',
            "Do what the task needs.",
        ]
        env = base_env(self.home, {"CODEX_HOME": str(self.codex_home)})
        return run(argv, ws, env, model, timeout_s)

    def edit_step(self, path: Path, content: str) -> Step:
        body = "".join(f"+{line}\n" for line in content.splitlines())
        return call("apply_patch", raw=f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n")

    def close(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


class Gemini:
    """``gemini -p`` against the fake Gemini API. ``--yolo``: every tool is approved without a
    dialog, so the hook is the only gate. A fixed model skips Gemini CLI's routing
    classifier (a JSON request the fake does not script)."""

    name = "gemini"
    shell_tool = "run_shell_command"
    edit_tool = "write_file"
    points: ClassVar[dict[str, str]] = {
        "shell": "BeforeTool hook, run_shell_command",
        "edit": "BeforeTool hook, write_file",
        "install": "hook install + doctor (settings.json)",
        "attention": "BeforeAgent, AfterAgent hooks",
    }

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.home = new_home()
        self.dot = self.home / ".gemini"
        self.dot.mkdir()
        self.config_dir = self.dot
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        }
        (self.dot / "settings.json").write_text(json.dumps(settings))

    def install(self, state_dir: Path, timeout_s: float, python: str | None = None) -> list[str]:
        from console.adapters.gemini import install

        return install.install(
            state_dir=state_dir, timeout_s=timeout_s, home=str(self.dot), binary=None, python=python
        )

    def run(self, model: FakeModel, ws: Path, timeout_s: float = 120) -> AgentRun:
        argv = [str(self.binary), "-p", "Do what the task needs.", "--yolo", "-m", "gemini-2.5-pro"]
        env = base_env(self.home, {"GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": model.base_url})
        return run(argv, ws, env, model, timeout_s)

    def edit_step(self, path: Path, content: str) -> Step:
        return call("write_file", {"file_path": str(path), "content": content})

    def close(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


class OpenCode:
    """``opencode run`` with an ``@ai-sdk/openai-compatible`` provider in the project's
    opencode.json pointing at the fake Chat Completions API. OpenCode runs every tool
    without asking in this mode, so the plugin is the only gate."""

    name = "opencode"
    shell_tool = "bash"
    edit_tool = "write"
    points: ClassVar[dict[str, str]] = {
        "shell": "plugin tool.execute.before, bash",
        "edit": "plugin tool.execute.before, write",
        "install": "hook install + doctor (plugin file)",
        "attention": "plugin chat.message, session.idle",
    }

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.home = new_home()
        self.config = self.home / ".config" / "opencode"
        self.config.mkdir(parents=True)
        self.config_dir = self.config

    def install(self, state_dir: Path, timeout_s: float, python: str | None = None) -> list[str]:
        from console.adapters.opencode import install

        return install.install(
            state_dir=state_dir, timeout_s=timeout_s, home=str(self.config), binary=None, python=python
        )

    def run(self, model: FakeModel, ws: Path, timeout_s: float = 180) -> AgentRun:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "fake",
            "options": {"baseURL": f"{model.base_url}/v1", "apiKey": "dummy"},
            "models": {"fake-model": {"name": "fake", "tool_call": True}},
        }
        config = {"provider": {"fake": provider}, "model": "fake/fake-model"}
        (ws / "opencode.json").write_text(json.dumps(config))
        xdg = {
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
        }
        argv = [str(self.binary), "run", "Do what the task needs."]
        return run(argv, ws, base_env(self.home, xdg), model, timeout_s)

    def edit_step(self, path: Path, content: str) -> Step:
        return call("write", {"filePath": str(path), "content": content})

    def close(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


class Copilot:
    """``copilot -p`` in offline mode with an OpenAI-type provider pointing at the fake
    Chat Completions API. ``--allow-all-tools``: every tool runs without a dialog, so the
    hook is the only gate."""

    name = "copilot"
    shell_tool = "bash"
    edit_tool = "create"
    points: ClassVar[dict[str, str]] = {
        "shell": "preToolUse hook, bash",
        "edit": "preToolUse hook, create",
        "install": "hook install + doctor (hooks/agent-console.json)",
        "attention": "userPromptSubmitted, agentStop hooks",
    }

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.home = new_home()
        self.copilot_home = self.home / ".copilot"
        self.copilot_home.mkdir()
        self.config_dir = self.copilot_home

    def install(self, state_dir: Path, timeout_s: float, python: str | None = None) -> list[str]:
        from console.adapters.copilot import install

        return install.install(
            state_dir=state_dir, timeout_s=timeout_s, home=str(self.copilot_home), binary=None, python=python
        )

    def run(self, model: FakeModel, ws: Path, timeout_s: float = 120) -> AgentRun:
        argv = [str(self.binary), "-p", "Do what the task needs.", "--allow-all-tools"]
        env = base_env(
            self.home,
            {
                "COPILOT_HOME": str(self.copilot_home),
                "COPILOT_OFFLINE": "true",
                "COPILOT_PROVIDER_BASE_URL": f"{model.base_url}/v1",
                "COPILOT_PROVIDER_TYPE": "openai",
                "COPILOT_PROVIDER_API_KEY": "dummy",
                "COPILOT_MODEL": "fake-model",
            },
        )
        return run(argv, ws, env, model, timeout_s)

    def edit_step(self, path: Path, content: str) -> Step:
        return call("create", {"path": str(path), "file_text": content})

    def close(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


class ClaudeCodeACP:
    """``agent-console run --acp -- claude-code-acp`` against the fake Anthropic API
    (tests/support/fake_anthropic.py): claude-code-acp runs Claude Code through its SDK
    and offers its own Bash, Read, Write and Edit as MCP tools (``mcp__acp__Bash`` …),
    handing terminals and file writes to its ACP client — the console."""

    name = "acp:claude-code-acp"

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.home = new_home()

    def run(self, api: Any, ws: Path, state_dir: Path, timeout_s: float = 120) -> AgentRun:
        import sys

        env = base_env(
            self.home,
            {
                "ANTHROPIC_BASE_URL": api.base_url,
                "ANTHROPIC_API_KEY": "dummy",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "IS_SANDBOX": "1",
            },
        )
        argv = [
            sys.executable, "-m", "console", "run", "--acp", "--state-dir", str(state_dir),
            "--workspace", str(ws), "--prompt", "Do what the task needs.", "--", str(self.binary),
        ]  # fmt: skip
        return run(argv, ws, env, api, timeout_s)

    def close(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)


def shell_call(agent: str, command: str) -> tuple[str, dict[str, Any]]:
    """The model's shell tool call for ``agent``: (tool name, arguments)."""
    if agent == "codex":
        return "exec_command", {"cmd": command}
    if agent == "gemini":
        return "run_shell_command", {"command": command, "description": "run a command"}
    if agent == "copilot":
        return "bash", {"command": command, "description": "run a command", "mode": "sync"}
    if agent == "opencode":
        return "bash", {"command": command, "description": "run a command"}
    raise ValueError(agent)


def pending_items(daemon: Any) -> list[dict[str, Any]]:
    with daemon.operator() as op:
        return list(op.call("pending.list")["pending"])


def tool_rows(daemon: Any, prefix: str) -> list[dict[str, Any]]:
    with daemon.operator() as op:
        rows = op.call("history.query", {"kinds": ["request"], "limit": 200})["rows"]
    return [r for r in rows if prefix in json.dumps(r)]
