"""Installing the Copilot CLI hook so that it cannot fail open, and checking an install.

Copilot CLI (1.0) reads every ``$COPILOT_HOME/hooks/*.json`` (``~/.copilot``); a
``preToolUse`` hook is ``{"type": "command", "bash": CMD, "timeoutSec": N}``. It denies a
call whose hook exits non-zero, but **runs** it when the hook prints what is not JSON or
outlives ``timeoutSec``. The file agent-console writes is its own
(``hooks/agent-console.json``): the command of
:func:`console.adapters.installing.hook_command` with ``timeoutSec`` ``--timeout`` + 10 s.

What no configuration closes: a tool this hook leaves undecided (MCP tools, sub-agents'
``task``) runs unasked under ``--allow-all-tools`` or ``--yolo``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from console.adapters import installing
from console.adapters.installing import Check, SettingsError

AGENT = "copilot"
FILE = "agent-console.json"
OPEN_MODES = (
    "a tool this hook leaves undecided (MCP tools, task) runs unasked under --allow-all-tools or --yolo: "
    "the safe way is agent-console run -- copilot"
)


# A prompt (working) and the end of the agent's turn (done) only inform the console who
# waits for the person: `|| exit 0`, a short timeout; they gate nothing.
ATTENTION_EVENTS = ("userPromptSubmitted", "agentStop")
ATTENTION_TIMEOUT_S = 10


def attention_command(state_dir: Path, python: str | None = None) -> str:
    import shlex
    import sys

    python = python or sys.executable
    return f"{shlex.quote(python)} -I -m console hook {AGENT} --state-dir {shlex.quote(str(state_dir))} || exit 0"


def hooks_dir(home: str | None) -> Path:
    base = home or os.environ.get("COPILOT_HOME") or str(Path.home() / ".copilot")
    return Path(base).expanduser().absolute() / "hooks"


def install(
    *, state_dir: Path, timeout_s: float, home: str | None, binary: str | None, python: str | None = None
) -> list[str]:
    path = hooks_dir(home) / FILE
    command = installing.hook_command(AGENT, state_dir, timeout_s, python)
    timeout = installing.agent_timeout_for(timeout_s)
    informs = {
        "type": "command",
        "bash": attention_command(state_dir, python),
        "timeoutSec": ATTENTION_TIMEOUT_S,
    }
    config = {
        "version": 1,
        "hooks": {
            "preToolUse": [{"type": "command", "bash": command, "timeoutSec": timeout}],
            **{event: [informs] for event in ATTENTION_EVENTS},
        },
    }
    backup = installing.write_json(path, config)
    lines = [f"installed the agent-console preToolUse hook as {path}"]
    if backup is not None:
        lines.append(f"  the previous file is kept as {backup}")
    lines += [
        f"  command  {command}",
        f"  timeout  {timeout} s (Copilot CLI's), --timeout {installing.seconds(timeout_s)} s (the hook's)",
        f"  and the {', '.join(ATTENTION_EVENTS)} hooks (who waits for you; they only inform)",
    ]
    return lines


def sample_input(cwd: Path, target: Path) -> dict[str, Any]:
    return {
        "sessionId": "agent-console-doctor",
        "timestamp": 0,
        "cwd": str(cwd),
        "toolName": "create",
        "toolArgs": {"path": str(target), "file_text": "x"},
    }


def verdict(run: installing.Ran) -> tuple[bool, str]:
    if run.exit_code is None:
        return False, "Copilot CLI gives up on the hook at timeoutSec and RUNS the tool"
    if run.exit_code != 0:
        return True, f"exit {run.exit_code}: Copilot CLI denies the tool"
    try:
        decision = json.loads(run.stdout)["permissionDecision"]
    except (ValueError, KeyError, TypeError):
        return False, "exit 0 without a decision: Copilot CLI RUNS the tool"
    return decision == "deny", f"exit 0 with permissionDecision {decision!r}"


def doctor(*, state_dir: Path, home: str | None, binary: str | None, approval: float | None) -> list[Check]:
    path = hooks_dir(home) / FILE
    try:
        config = installing.read_json(path)
    except SettingsError as exc:
        return [Check("risk", str(exc))]
    raw_hooks = config.get("hooks")
    hooks: dict[str, Any] = raw_hooks if isinstance(raw_hooks, dict) else {}
    entries = [
        h
        for h in hooks.get("preToolUse") or []
        if isinstance(h, dict) and installing.is_ours(h.get("bash"), AGENT)
    ]
    if not entries:
        return [
            Check(
                "risk", f"no agent-console preToolUse hook in {path}: run agent-console hook install copilot"
            )
        ]
    checks: list[Check] = []
    if config.get("version") != 1:
        checks.append(Check("risk", f"{path}: version is not 1: Copilot CLI may not read the file"))
    for entry in entries:
        command = str(entry["bash"])
        raw = entry.get("timeoutSec", 30)
        timeout_s = float(raw) if isinstance(raw, int | float) else 30.0
        checks += installing.command_checks(str(path), command, AGENT)
        checks += installing.timeout_checks(str(path), command, timeout_s, "Copilot CLI")
        target = state_dir / "operator.token"
        run = installing.run_command(command, json.dumps(sample_input(Path.cwd(), target)), timeout_s)
        blocks, what = verdict(run)
        checks.append(
            Check(
                "ok" if blocks else "risk",
                f"ran the hook on a create of {target} ({run.seconds:.1f} s): {what}",
            )
        )
    checks.append(Check("open", OPEN_MODES))
    return checks
