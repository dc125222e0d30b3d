"""Claude Code's PreToolUse hook: every tool call asks the console first.

Claude Code runs a Bash command itself, outside the console's sandbox, so the operation
says so honestly: it asks for ``unrestricted``, which only a grant or the operator can
allow. File writes become a ``workspace_write`` scoped to the file: inside the
workspace they pass, a protected path or a path outside goes to review. Anything else
is left to Claude Code's own dialog (``ask``).

A hook that crashes lets Claude Code run the tool, so :func:`run_hook` never raises:
every failure — daemon down, timeout, bad input, a bug — answers ``deny`` with the
reason.
"""

from __future__ import annotations

import json
import os
import sys
from typing import IO, Any

WRITE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
DEFAULT_TIMEOUT_S = 55.0  # below Claude Code's default 60 s hook timeout


class HookInputError(ValueError):
    pass


def _field(data: dict[str, Any], name: str, kind: type) -> Any:
    value = data.get(name)
    if not isinstance(value, kind):
        raise HookInputError(f"hook input lacks {name} ({kind.__name__})")
    return value


def operation_for(hook: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The operation a tool call amounts to, or None for tools the console leaves to Claude Code."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    tool = _field(hook, "tool_name", str)
    tool_input = _field(hook, "tool_input", dict)
    cwd = _field(hook, "cwd", str)
    session = hook.get("session_id") if isinstance(hook.get("session_id"), str) else ""
    workspace = env.get("CLAUDE_PROJECT_DIR") or cwd
    base = {
        "origin": "hook",
        "workspace_root": workspace,
        "cwd": cwd if cwd.startswith(workspace.rstrip("/") + "/") or cwd == workspace else ".",
        "session_id": session[:256],
        "tool": f"claude-code:{tool}"[:128] if tool.isidentifier() else "claude-code:unknown",
    }
    if tool == "Bash":
        command = _field(tool_input, "command", str)
        description = tool_input.get("description")
        return {
            **base,
            "kind": "shell",
            "executable": "bash",
            "args": ["-c", command],
            "workspace_access": "write",
            "network": "any",
            "capabilities": [{"kind": "unrestricted"}],
            "justification": description if isinstance(description, str) else "",
        }
    if tool in WRITE_TOOLS:
        path = _field(tool_input, WRITE_TOOLS[tool], str)
        if not path.startswith("/"):
            path = os.path.join(cwd, path)
        return {
            **base,
            "kind": "process",
            # Claude Code performs the write; `true` stands for "nothing else runs".
            "executable": "true",
            "args": [path],
            "capabilities": [{"kind": "workspace_write", "scope": os.path.normpath(path)}],
            "justification": f"{tool} {path}",
        }
    return None


def _output(decision: str, reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


def decide(hook_text: str, *, state_dir: str | None, timeout_s: float) -> dict[str, Any]:
    from console.client import Client, DaemonUnreachable, RPCError
    from console.contract import strictjson

    try:
        hook = strictjson.loads(hook_text)
        if not isinstance(hook, dict):
            raise HookInputError("hook input is not a JSON object")
        if hook.get("hook_event_name", "PreToolUse") != "PreToolUse":
            return _output("ask", "agent-console only answers PreToolUse")
        operation = operation_for(hook)
    except (strictjson.StrictJSONError, HookInputError) as exc:
        return _output("deny", f"agent-console could not read the hook input: {exc}")
    if operation is None:
        return _output("ask", "agent-console does not supervise this tool; Claude Code decides")
    try:
        with Client.connect(
            state_dir, role="agent", client="claude-code-hook", timeout_s=timeout_s + 10
        ) as client:
            answer = client.submit(operation, timeout_s=timeout_s)
    except DaemonUnreachable as exc:
        return _output("deny", f"agent-console is unreachable, so nothing is allowed: {exc}")
    except RPCError as exc:
        return _output("deny", f"agent-console refused the request: {exc.message}")
    if answer.get("verdict") == "allow":
        note = answer.get("note") or ""
        return _output(
            "allow", f"approved by agent-console ({answer.get('source')})" + (f": {note}" if note else "")
        )
    reason = answer.get("reason") or "denied"
    note = answer.get("note") or ""
    return _output("deny", f"denied by agent-console: {reason}" + (f" — {note}" if note else ""))


def run_hook(
    stdin: IO[str], stdout: IO[str], *, state_dir: str | None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> int:
    try:
        result = decide(stdin.read(), state_dir=state_dir, timeout_s=timeout_s)
    except BaseException as exc:
        result = _output("deny", f"agent-console hook failed ({type(exc).__name__}); denying to stay safe")
    try:
        stdout.write(json.dumps(result) + "\n")
        stdout.flush()
    except Exception:
        return 2  # Claude Code treats exit 2 from PreToolUse as a block
    return 0


if __name__ == "__main__":
    raise SystemExit(run_hook(sys.stdin, sys.stdout, state_dir=None))
