"""Installing the Gemini CLI hook so that it cannot fail open, and checking an install.

Gemini CLI (0.61) reads ``hooks.BeforeTool`` from ``~/.gemini/settings.json``; its hook
``timeout`` is in milliseconds (60 s by default). It runs the tool when a hook crashes,
prints what is not JSON or outlives that timeout, and blocks on exit 2. So the command is
:func:`console.adapters.installing.hook_command` (its tail turns a broken install into
exit 2) and Gemini's timeout is ``--timeout`` + 10 s.

What no configuration closes: ``gemini --acp`` never runs BeforeTool hooks (host it with
``agent-console run --acp -- gemini --acp``), and a hook answering ``ask`` hangs a
headless run (this hook never answers ``ask``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from console.adapters import installing
from console.adapters.installing import Check, SettingsError

AGENT = "gemini"
EVENT = "BeforeTool"
MATCHER = "run_shell_command|write_file|replace|read_file|glob|grep_search|list_directory"
REQUIRED = ("run_shell_command", "write_file", "replace", "read_file", "glob", "grep_search")
OPEN_MODES = (
    "gemini --acp never runs BeforeTool hooks, and any tool outside the matcher (MCP tools, web_fetch) "
    "runs unasked: the safe way is agent-console run -- gemini"
)


# The events that only inform the console who waits for the person: no blocking tail (they
# gate nothing), a short timeout (milliseconds).
ATTENTION_EVENTS = ("BeforeAgent", "AfterAgent", "Notification")
ATTENTION_TIMEOUT_MS = 10_000


def attention_command(state_dir: Path, python: str | None = None) -> str:
    import shlex
    import sys

    python = python or sys.executable
    # `|| exit 0`: a broken install costs the "who waits" mark, never the agent's turn (a
    # failing BeforeAgent stops Gemini CLI's prompt; exit 2 from Codex's Stop makes it go on).
    return f"{shlex.quote(python)} -I -m console hook {AGENT} --state-dir {shlex.quote(str(state_dir))} || exit 0"


def settings_path(home: str | None) -> Path:
    return (
        Path(home).expanduser().absolute() / "settings.json"
        if home
        else Path.home() / ".gemini" / "settings.json"
    )


def install(
    *, state_dir: Path, timeout_s: float, home: str | None, binary: str | None, python: str | None = None
) -> list[str]:
    path = settings_path(home)
    command = installing.hook_command(AGENT, state_dir, timeout_s, python)
    timeout_ms = installing.agent_timeout_for(timeout_s) * 1000
    group = {"matcher": MATCHER, "hooks": [{"type": "command", "command": command, "timeout": timeout_ms}]}
    merged = installing.merge_group(installing.read_json(path), EVENT, group, AGENT, str(path))
    informs = {
        "type": "command",
        "command": attention_command(state_dir, python),
        "timeout": ATTENTION_TIMEOUT_MS,
    }
    for event in ATTENTION_EVENTS:
        merged = installing.merge_group(merged, event, {"matcher": "*", "hooks": [informs]}, AGENT, str(path))
    backup = installing.write_json(path, merged)
    lines = [f"installed the agent-console BeforeTool hook in {path}"]
    if backup is not None:
        lines.append(f"  the previous file is kept as {backup}")
    lines += [
        f"  command  {command}",
        f"  matcher  {MATCHER}",
        f"  timeout  {timeout_ms} ms (Gemini CLI's), --timeout {installing.seconds(timeout_s)} s (the hook's)",
        f"  and the {', '.join(ATTENTION_EVENTS)} hooks (who waits for you; they only inform)",
    ]
    return lines


def sample_input(cwd: Path, target: Path) -> dict[str, Any]:
    """A call the hook denies without the operator: a write of the operator token."""
    return {
        "session_id": "agent-console-doctor",
        "cwd": str(cwd),
        "hook_event_name": EVENT,
        "tool_name": "write_file",
        "tool_input": {"file_path": str(target), "content": "x"},
    }


def verdict(run: installing.Ran) -> tuple[bool, str]:
    if run.exit_code is None:
        return False, "Gemini CLI kills the hook at its timeout and RUNS the tool"
    if run.exit_code == 2:
        return True, "exit 2: Gemini CLI blocks the tool"
    if run.exit_code != 0:
        return False, f"exit {run.exit_code}: Gemini CLI RUNS the tool"
    try:
        decision = json.loads(run.stdout)["decision"]
    except (ValueError, KeyError, TypeError):
        return False, "exit 0 without a decision: Gemini CLI RUNS the tool"
    return decision in ("deny", "block"), f"exit 0 with decision {decision!r}"


def doctor(*, state_dir: Path, home: str | None, binary: str | None, approval: float | None) -> list[Check]:
    path = settings_path(home)
    try:
        settings = installing.read_json(path)
    except SettingsError as exc:
        return [Check("risk", str(exc))]
    found = installing.installed_in_groups(settings, EVENT, AGENT)
    if not found:
        return [
            Check(
                "risk", f"no agent-console BeforeTool hook in {path}: run agent-console hook install gemini"
            )
        ]
    checks: list[Check] = []
    hooks_config = settings.get("hooksConfig")
    if isinstance(hooks_config, dict) and hooks_config.get("enabled") is False:
        checks.append(Check("risk", f"{path}: hooksConfig.enabled is false: no hook runs at all"))
    for tool in REQUIRED:
        if not any(installing.matches(matcher, tool) for matcher, _ in found):
            checks.append(
                Check("risk", f"no agent-console hook runs for {tool}: Gemini CLI runs it unsupervised")
            )
    for _, hook in found:
        command = str(hook["command"])
        checks += installing.command_checks(str(path), command, AGENT)
        raw = hook.get("timeout", 60000)
        timeout_s = float(raw) / 1000 if isinstance(raw, int | float) else 60.0
        checks += installing.timeout_checks(str(path), command, timeout_s, "Gemini CLI")
        target = state_dir / "operator.token"
        run = installing.run_command(command, json.dumps(sample_input(Path.cwd(), target)), timeout_s)
        blocks, what = verdict(run)
        checks.append(
            Check(
                "ok" if blocks else "risk",
                f"ran the hook on a write of {target} ({run.seconds:.1f} s): {what}",
            )
        )
    checks.append(Check("open", OPEN_MODES))
    return checks
