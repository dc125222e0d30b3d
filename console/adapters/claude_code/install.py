"""Installing the Claude Code hook so that it cannot fail open, and checking an install.

Claude Code runs a hook's ``command`` through the shell and goes ahead with the tool
unless the hook exits 0 with a decision or exits 2, or when the hook outlives its
``timeout``. The installed command is therefore:

- the absolute path of the Python that runs agent-console, started with ``-I`` (no
  ``PYTHONPATH``, no cwd on ``sys.path``: a ``console/`` folder in the project cannot
  replace the hook), and ``--state-dir`` pinned to one absolute directory;
- followed by `` || exit 2``: a missing interpreter (127), a non-executable one (126)
  or a crash on import (1) becomes a block;
- given a Claude Code ``timeout`` of ``--timeout`` plus :data:`MARGIN_S`, because the
  hook itself answers by ``--timeout`` + 1 s.

The attention hooks (Notification, Stop, UserPromptSubmit: who waits for the person)
run the same command without `` || exit 2`` and with a short timeout: they gate nothing.

:func:`diagnose` reads settings files the way Claude Code merges them and reports each
fail-open risk it sees; the CLI's ``hook doctor`` also runs the command.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.adapters import installing
from console.adapters.installing import (
    Check,
    SettingsError,
    checkout_warning,
    matches,
    parse_command,
    source_checkout,
)

MARGIN_S = installing.MARGIN_S
CLAUDE_DEFAULT_HOOK_TIMEOUT_S = 60.0
# Every tool the hook supervises or guards (Read/Glob/Grep are checked for private state).
MATCHER = "Bash|Write|Edit|MultiEdit|NotebookEdit|Read|Glob|Grep|NotebookRead|LS|mcp__.*"
REQUIRED_TOOLS = (
    "Bash",
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "Read",
    "Glob",
    "Grep",
    "mcp__server__tool",  # stands for every MCP tool: the matcher must cover mcp__.*
)
MARKER = "hook claude-code"
# The events the hook answers: PreToolUse before every supervised call (the gate, also in
# -p mode) and PermissionRequest when Claude Code would show its dialog (interactive).
EVENTS = ("PreToolUse", "PermissionRequest")
# The events that only inform the console who waits for the person (attention, see
# console/adapters/attention.py). Their command has no `` || exit 2``: it
# gates nothing, and exit 2 would do harm — from Stop it makes Claude Code continue
# instead of stopping, from UserPromptSubmit it erases the person's prompt. A broken
# install there costs a badge, never a tool run unsupervised.
ATTENTION_EVENTS = ("Notification", "Stop", "UserPromptSubmit")
# The hook gives up on the daemon after 3 s (attention.DEADLINE_S).
ATTENTION_TIMEOUT_S = 10


def hook_command(state_dir: Path, timeout_s: float, python: str | None = None) -> str:
    python = python or sys.executable
    return (
        f"{shlex.quote(python)} -I -m console hook claude-code "
        f"--state-dir {shlex.quote(str(state_dir))} --timeout {_seconds(timeout_s)} || exit 2"
    )


def attention_command(state_dir: Path, python: str | None = None) -> str:
    """The command of the attention hooks: the same hook, without `` || exit 2``."""
    python = python or sys.executable
    return f"{shlex.quote(python)} -I -m console hook claude-code --state-dir {shlex.quote(str(state_dir))}"


def hook_timeout_for(timeout_s: float) -> int:
    """Claude Code's ``timeout`` for a hook run with ``--timeout timeout_s``."""
    return installing.agent_timeout_for(timeout_s)


_seconds = installing.seconds


def settings_path(scope: str, project_dir: Path | None = None) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    return (project_dir or Path.cwd()) / ".claude" / "settings.json"


def read_settings(path: Path) -> dict[str, Any]:
    """The settings object at ``path`` ({} when there is no file)."""
    return installing.read_json(path)


def is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and MARKER in str(hook.get("command", ""))


def merge(
    settings: dict[str, Any], command: str, timeout: int, attention: str | None = None
) -> dict[str, Any]:
    """``settings`` with our PreToolUse and PermissionRequest hooks (and, given the
    ``attention`` command, our Notification, Stop and UserPromptSubmit hooks) in place of
    any earlier ones; other keys and other hooks stay as they were. Idempotent."""
    out: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError("the settings' hooks is not an object")
    for event in EVENTS + (ATTENTION_EVENTS if attention is not None else ()):
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsError(f"the settings' hooks.{event} is not a list")
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                rest = [h for h in group["hooks"] if not is_ours(h)]
                if not rest and len(rest) != len(group["hooks"]):
                    continue
                group = {**group, "hooks": rest}
            kept.append(group)
        if event in ATTENTION_EVENTS:
            ours = {"type": "command", "command": attention, "timeout": ATTENTION_TIMEOUT_S}
            kept.append({"matcher": "", "hooks": [ours]} if event == "Notification" else {"hooks": [ours]})
        else:
            kept.append(
                {"matcher": MATCHER, "hooks": [{"type": "command", "command": command, "timeout": timeout}]}
            )
        hooks[event] = kept
    return out


def write_settings(path: Path, settings: dict[str, Any]) -> Path | None:
    """Write atomically (a temporary file renamed over it); returns the backup of the old file."""
    return installing.write_json(path, settings)


# ---------------------------------------------------------------------------------------
# Diagnosis


@dataclass(frozen=True, slots=True)
class Installed:
    file: Path
    matcher: str
    command: str
    timeout: float


def installed_hooks(files: Iterable[tuple[Path, dict[str, Any]]]) -> list[Installed]:
    found = []
    for path, settings in files:
        hooks = settings.get("hooks")
        groups = hooks.get("PreToolUse") if isinstance(hooks, dict) else None
        for group in groups if isinstance(groups, list) else []:
            if not isinstance(group, dict):
                continue
            matcher = str(group.get("matcher", "") or "")
            for hook in group.get("hooks") or []:
                if is_ours(hook):
                    raw = hook.get("timeout", CLAUDE_DEFAULT_HOOK_TIMEOUT_S)
                    timeout = float(raw) if isinstance(raw, int | float) else CLAUDE_DEFAULT_HOOK_TIMEOUT_S
                    found.append(Installed(path, matcher, str(hook["command"]), timeout))
    return found


def attention_checks(files: Iterable[tuple[Path, dict[str, Any]]]) -> list[Check]:
    """Notes on the attention hooks: missing ones (the console cannot tell when Claude
    Code waits for you; nothing runs unsupervised) and ones that would block."""
    out: list[Check] = []
    for event in ATTENTION_EVENTS:
        found: list[tuple[Path, Any]] = []
        for path, settings in files:
            hooks = settings.get("hooks")
            groups = hooks.get(event) if isinstance(hooks, dict) else None
            for group in groups if isinstance(groups, list) else []:
                if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                    found.extend((path, h) for h in group["hooks"] if is_ours(h))
        if not found:
            out.append(
                Check(
                    "note",
                    f"no agent-console {event} hook: the console does not show when Claude Code "
                    "waits for you (reinstall: agent-console hook install claude-code)",
                )
            )
        for path, hook in found:
            if parse_command(str(hook.get("command", ""))).blocks_on_failure:
                out.append(
                    Check(
                        "note",
                        f"{path}: the {event} hook ends with '|| exit 2': a broken install would "
                        + (
                            "keep Claude Code from stopping"
                            if event == "Stop"
                            else "block Claude Code's turn"
                        )
                        + "; reinstall: agent-console hook install claude-code",
                    )
                )
    return out


def check_hook(hook: Installed, approval_timeout_s: float | None) -> list[Check]:
    out: list[Check] = []
    cmd = parse_command(hook.command)
    where = f"{hook.file}"
    if cmd.executable.startswith("/") and os.access(cmd.executable, os.X_OK):
        root = source_checkout(cmd.executable)
        if root is not None:
            out.append(Check("warn", checkout_warning(f"{where}: the hook", root)))
    if not cmd.executable.startswith("/"):
        out.append(
            Check(
                "risk",
                f"{where}: the hook runs {cmd.executable!r} through PATH; if it is not found Claude Code runs "
                "the tool. Reinstall: agent-console hook install claude-code",
            )
        )
    elif not os.access(cmd.executable, os.X_OK):
        out.append(Check("risk", f"{where}: {cmd.executable} is missing or not executable"))
    if not cmd.blocks_on_failure:
        out.append(
            Check(
                "risk",
                f"{where}: the command does not end with '|| exit 2': a missing or broken install "
                "(exit 127, 126 or 1) lets Claude Code run the tool",
            )
        )
    if cmd.executable.rsplit("/", 1)[-1].startswith("python") and not cmd.isolated:
        out.append(
            Check(
                "risk",
                f"{where}: python runs without -I: PYTHONPATH or a console/ folder in the project "
                "could replace the hook",
            )
        )
    if cmd.state_dir is None:
        out.append(
            Check("note", f"{where}: no --state-dir: the hook follows AGENT_CONSOLE_HOME of Claude Code")
        )
    hook_timeout_s = cmd.timeout_s if cmd.timeout_s is not None else 55.0
    if hook.timeout <= hook_timeout_s + 1:
        out.append(
            Check(
                "risk",
                f"{where}: Claude Code's hook timeout ({_seconds(hook.timeout)} s) is not above the hook's "
                f"--timeout ({_seconds(hook_timeout_s)} s) + 1 s: Claude Code would kill the hook and run the tool",
            )
        )
    elif hook.timeout < hook_timeout_s + MARGIN_S:
        out.append(
            Check(
                "note",
                f"{where}: Claude Code's hook timeout ({_seconds(hook.timeout)} s) leaves less than "
                f"{MARGIN_S} s above --timeout ({_seconds(hook_timeout_s)} s)",
            )
        )
    if approval_timeout_s is not None and hook_timeout_s > approval_timeout_s:
        out.append(
            Check(
                "note",
                f"{where}: --timeout is {_seconds(hook_timeout_s)} s but the daemon's approval_timeout_s is "
                f"{_seconds(approval_timeout_s)} s: requests are denied (approval_timeout) after "
                f"{_seconds(approval_timeout_s)} s",
            )
        )
    return out


def diagnose(files: list[tuple[Path, dict[str, Any]]], approval_timeout_s: float | None) -> list[Check]:
    """Every fail-open risk visible in the settings files (merged as Claude Code does)."""
    out: list[Check] = []
    for path, settings in files:
        if settings.get("disableAllHooks") is True:
            out.append(Check("risk", f"{path}: disableAllHooks is true: no hook runs at all"))
    hooks = installed_hooks(files)
    if not hooks:
        out.append(
            Check(
                "risk",
                "no agent-console PreToolUse hook is configured: run agent-console hook install claude-code",
            )
        )
        return out
    for tool in REQUIRED_TOOLS:
        if not any(matches(h.matcher, tool) for h in hooks):
            shown = "MCP tools (mcp__.*)" if tool.startswith("mcp__") else tool
            out.append(
                Check("risk", f"no agent-console hook runs for {shown}: Claude Code runs it unsupervised")
            )
    for hook in hooks:
        out.extend(check_hook(hook, approval_timeout_s))
    out.extend(attention_checks(files))
    return out


def sample_input(cwd: Path, target: Path) -> dict[str, Any]:
    """A PreToolUse call the hook answers without the operator: a Read of the token."""
    return {
        "session_id": "agent-console-doctor",
        "transcript_path": "/dev/null",
        "cwd": str(cwd),
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": str(target)},
    }


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a hook command as Claude Code runs it, and what Claude Code would do."""

    exit_code: int | None  # None: killed at the timeout
    decision: str | None  # permissionDecision printed, if any
    seconds: float
    stderr: str

    @property
    def blocks(self) -> bool:
        return self.exit_code == 2 or (self.exit_code == 0 and self.decision == "deny")

    def verdict(self) -> str:
        if self.exit_code is None:
            return "Claude Code kills the hook at its timeout and RUNS the tool"
        if self.exit_code == 2:
            return "exit 2: Claude Code blocks the tool"
        if self.exit_code == 0 and self.decision:
            return f"exit 0 with permissionDecision {self.decision!r}"
        if self.exit_code == 0:
            return "exit 0 without a decision: Claude Code's own permission flow decides"
        return f"exit {self.exit_code}: Claude Code RUNS the tool"


def run_command(
    command: str,
    stdin: dict[str, Any],
    timeout_s: float,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> Run:
    """Run ``command`` through ``sh -c`` with ``stdin`` as JSON, the way Claude Code does."""
    started = time.monotonic()
    try:
        proc = subprocess.run(
            ["/bin/sh", "-c", command],
            input=json.dumps(stdin),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired:
        return Run(None, None, time.monotonic() - started, "")
    decision = None
    if proc.returncode == 0 and proc.stdout.strip():
        try:
            out = json.loads(proc.stdout)
            decision = out["hookSpecificOutput"]["permissionDecision"]
        except (ValueError, KeyError, TypeError):
            decision = None
    return Run(proc.returncode, decision, time.monotonic() - started, proc.stderr[-2000:])
