"""Codex's PreToolUse hook: every shell command, patch and MCP call asks the console first.

Codex 0.171 (``[hooks]`` in ``~/.codex/hooks.json`` or ``config.toml``) sends the call on
stdin — ``tool_name`` ``Bash`` (its ``exec_command`` tool; ``tool_input.command`` the
text), ``apply_patch`` (the whole patch in ``tool_input.command``) or
``mcp__<server>__<tool>`` — and reads Claude Code's answer shape:
``hookSpecificOutput.permissionDecision`` ``deny`` with a non-empty reason (the model
reads it), or ``allow`` with ``updatedInput`` to run another command.

- ``Bash`` becomes a sandboxed request (:func:`console.adapters.calls.shell_operation`);
  allowed, the command is replaced by the daemon's ``agent-console exec --ticket ID``, so
  what Codex runs is exactly the held request, in the console's sandbox.
- ``apply_patch``: one write request per file, with what the file will hold
  (:mod:`console.adapters.codex.patch`); every one must be allowed.
- ``mcp__*``: an MCP request (``unrestricted``, the whole input shown).

Codex runs the tool when the hook exits 1, prints something that is not JSON, or outlives
its timeout; it blocks on exit 2 only when stderr says why. So this hook never raises,
answers every failure with a deny, and ends within ``--timeout`` + 1 s; the installed
command's tail turns a broken install into exit 2 with a reason.
"""

from __future__ import annotations

import json
import sys
import time

from console.adapters import calls, gate
from console.adapters.calls import HookInputError, Refused

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from typing import IO, Any

AGENT = "codex"
CLIENT = "codex-hook"
DEFAULT_TIMEOUT_S = 55.0
MCP_PREFIX = "mcp__"
SUPERVISED = ("Bash", "apply_patch")
# UserPromptSubmit (working), Stop (done), PermissionRequest (Codex asks the person:
# waiting); see console/adapters/attention.py.
ATTENTION_EVENTS = ("UserPromptSubmit", "Stop", "PermissionRequest")
UNSANDBOXED = "ask the operator to run it for you (Codex has no per-call flag for it)"


def operations_for(hook: dict[str, Any], state_dir: str | None) -> list[dict[str, Any]]:
    """The requests a call amounts to ([] for tools the console leaves to Codex)."""
    tool = calls.field(hook, "tool_name", str)
    tool_input = calls.field(hook, "tool_input", dict)
    cwd = calls.field(hook, "cwd", str)
    if tool not in SUPERVISED and not tool.startswith(MCP_PREFIX):
        return []
    if not cwd.startswith("/"):
        raise HookInputError("hook input's cwd is not an absolute path")
    where = {"agent": AGENT, "cwd": cwd, "project": "", "session": calls.text_or_empty(hook, "session_id")}
    if tool == "Bash":
        command = calls.field(tool_input, "command", str)
        return [calls.shell_operation(tool=tool, command=command, unsandboxed_hint=UNSANDBOXED, **where)]
    if tool.startswith(MCP_PREFIX):
        server, _, name = tool[len(MCP_PREFIX) :].partition("__")
        return [calls.mcp_operation(tool=tool, server=server, name=name, tool_input=tool_input, **where)]
    from console.adapters.codex import patch

    text = calls.field(tool_input, "command", str)
    try:
        changes = patch.parse(text)
    except patch.PatchError as exc:
        raise Refused(f"the patch cannot be read: {exc}") from None
    patch.resolve(changes, cwd)
    ops = []
    for change in changes:
        for path in (change.path, change.move_to) if change.move_to else (change.path,):
            ops.append(
                calls.write_operation(
                    tool=tool,
                    path=path,
                    content=change.new if path == (change.move_to or change.path) else b"",
                    edit=text,
                    state_dir=state_dir,
                    what=f"apply_patch ({change.kind})",
                    **where,
                )
            )
    return ops


def _output(decision: str, reason: str, command: str | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason or decision,
    }
    if command is not None:
        answer["updatedInput"] = {"command": command}
    return {"hookSpecificOutput": answer}


def decide(
    hook_text: str, *, state_dir: str | None, timeout_s: float, started: float | None = None
) -> dict[str, Any] | None:
    started = time.monotonic() if started is None else started
    deadline = gate.deadline_for(started, timeout_s)
    try:
        hook = calls.load_input(hook_text)
        event = hook.get("hook_event_name", "PreToolUse")
        if event in ATTENTION_EVENTS:  # informs who waits for the person; never answers
            from console.adapters import attention

            attention.report(hook, state_dir=state_dir, client=CLIENT, permission_waits=True)
            return None
        if event != "PreToolUse":
            return None
        operations = operations_for(hook, state_dir)
    except HookInputError as exc:
        return _output("deny", f"agent-console could not read the hook input: {exc}")
    except Refused as exc:
        return _output("deny", f"denied by agent-console: {exc}")
    if not operations:
        return None
    command = None
    reasons = []
    for operation in operations:
        answer = gate.ask(operation, state_dir=state_dir, deadline=deadline, client=CLIENT)
        if not answer.allow:
            return _output("deny", answer.reason)
        command = answer.command or command
        reasons.append(answer.reason)
    return _output("allow", "; ".join(dict.fromkeys(reasons)), command)


def run_hook(
    stdin: IO[str],
    stdout: IO[str],
    *,
    state_dir: str | None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    started: float | None = None,
) -> int:
    started = time.monotonic() if started is None else started
    try:
        result = decide(stdin.read(), state_dir=state_dir, timeout_s=timeout_s, started=started)
    except BaseException as exc:
        result = _output("deny", f"agent-console hook failed ({type(exc).__name__}); denying to stay safe")
    if result is None:
        return 0
    try:
        stdout.write(json.dumps(result) + "\n")
        stdout.flush()
    except Exception:
        sys.stderr.write("agent-console: the hook could not write its answer; blocked\n")
        return 2  # Codex blocks on exit 2 with a reason on stderr
    return 0
