"""Copilot CLI's preToolUse hook: every shell command and file write asks the console first.

Copilot CLI 1.0 (``$COPILOT_HOME/hooks/*.json``, ``"version": 1``) sends the call on stdin
(``sessionId``, ``cwd``, ``toolName``, ``toolArgs``) and reads
``{"permissionDecision": "deny", "permissionDecisionReason": R}`` (the model reads
"Denied by preToolUse hook: R") or ``{"permissionDecision": "allow", "modifiedArgs":
{...}}`` to run changed arguments.

- ``bash`` becomes a sandboxed request; allowed, its ``command`` is replaced by the
  daemon's ``agent-console exec --ticket ID``.
- ``create`` and ``edit``: a write request with what the file will hold.
- ``view``, ``glob``, ``grep``: denied here when they reach agent-console's state, the
  secret set or ``/proc`` (as Claude Code's reads), else no answer.

Copilot CLI blocks on exit 1 and 2, but **runs** the tool when the hook prints what is not
JSON or outlives ``timeoutSec``; this hook always prints a JSON answer and ends within
``--timeout`` + 1 s.
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

AGENT = "copilot"
CLIENT = "copilot-hook"
DEFAULT_TIMEOUT_S = 55.0
WRITES = ("create", "edit")
READS = {"view": "Read", "glob": "Glob", "grep": "Grep"}
UNSANDBOXED = "ask the operator to run it for you (Copilot CLI has no per-call flag for it)"
MAX_EDIT_FILE_BYTES = 1 << 20


def attention_event(hook: dict[str, Any]) -> str | None:
    """Copilot CLI names no event in a hook's input: a prompt (``userPromptSubmitted``) has
    ``prompt``, the end of the agent's turn (``agentStop``) ``stopReason``; a tool call has
    ``toolName``. The Claude Code event each amounts to (console/adapters/attention.py)."""
    if "toolName" in hook:
        return None
    if "stopReason" in hook:
        return "Stop"
    if "prompt" in hook:
        return "UserPromptSubmit"
    return None


def _reads_input(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if tool == "view" and isinstance(args.get("path"), str):
        out["file_path"] = args["path"]
    paths = args.get("paths")
    if isinstance(paths, str):
        out["path"] = paths
    elif isinstance(paths, list) and paths and isinstance(paths[0], str):
        out["path"] = paths[0]
    if tool == "glob" and isinstance(args.get("pattern"), str):
        out["pattern"] = args["pattern"]
    if tool == "grep" and isinstance(args.get("glob"), str):
        out["glob"] = args["glob"]
    return out


def operation_for(hook: dict[str, Any], state_dir: str | None, env: dict[str, str]) -> dict[str, Any] | None:
    tool = calls.field(hook, "toolName", str)
    args = hook.get("toolArgs")
    if isinstance(args, str):  # some versions send the arguments as a JSON string
        args = calls.load_input(args)
    if not isinstance(args, dict):
        raise HookInputError("hook input lacks toolArgs (dict)")
    cwd = calls.field(hook, "cwd", str)
    if tool != "bash" and tool not in WRITES and tool not in READS:
        return None
    if not cwd.startswith("/"):
        raise HookInputError("hook input's cwd is not an absolute path")
    if tool in READS:
        from console.adapters.claude_code.reads import check_read

        if tool == "grep" and isinstance(args.get("paths"), list):
            for path in args["paths"]:
                if isinstance(path, str):
                    check_read("Grep", {**_reads_input(tool, args), "path": path}, cwd, env, state_dir)
        check_read(READS[tool], _reads_input(tool, args), cwd, env, state_dir)
        return None
    where = {"agent": AGENT, "cwd": cwd, "project": "", "session": calls.text_or_empty(hook, "sessionId")}
    if tool == "bash":
        description = args.get("description")
        return calls.shell_operation(
            tool=tool,
            command=calls.field(args, "command", str),
            justification=description if isinstance(description, str) else "",
            unsandboxed_hint=UNSANDBOXED,
            **where,
        )
    path = calls.resolve_path(calls.field(args, "path", str), cwd)
    content = _resulting_content(tool, args, path)
    fields = {k: v for k, v in sorted(args.items()) if k != "path"}
    return calls.write_operation(
        tool=tool,
        path=path,
        content=None if content is None else content.encode("utf-8", "surrogatepass"),
        edit=fields,
        state_dir=state_dir,
        **where,
    )


def _resulting_content(tool: str, args: dict[str, Any], path: str) -> str | None:
    if tool == "create":
        content = args.get("file_text")
        return content if isinstance(content, str) else None
    old, new = args.get("old_str"), args.get("new_str")
    if not isinstance(old, str) or not isinstance(new, str) or not old:
        return None
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_EDIT_FILE_BYTES + 1)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if len(raw) > MAX_EDIT_FILE_BYTES or text.count(old) != 1:
        return None  # Copilot's edit replaces exactly one occurrence
    return text.replace(old, new, 1)


def _deny(reason: str) -> dict[str, Any]:
    return {"permissionDecision": "deny", "permissionDecisionReason": reason or "denied by agent-console"}


def decide(
    hook_text: str, *, state_dir: str | None, timeout_s: float, started: float | None = None
) -> dict[str, Any] | None:
    import os

    started = time.monotonic() if started is None else started
    deadline = gate.deadline_for(started, timeout_s)
    try:
        hook = calls.load_input(hook_text)
        said = attention_event(hook)
        if said is not None:  # informs who waits for the person; never answers
            from console.adapters import attention

            session = calls.text_or_empty(hook, "sessionId")
            attention.report(
                {"hook_event_name": said, "session_id": session}, state_dir=state_dir, client=CLIENT
            )
            return None
        operation = operation_for(hook, state_dir, dict(os.environ))
    except HookInputError as exc:
        return _deny(f"agent-console could not read the hook input: {exc}")
    except Refused as exc:
        return _deny(f"denied by agent-console: {exc}")
    if operation is None:
        return None
    answer = gate.ask(operation, state_dir=state_dir, deadline=deadline, client=CLIENT)
    if not answer.allow:
        return _deny(answer.reason)
    out: dict[str, Any] = {"permissionDecision": "allow", "permissionDecisionReason": answer.reason}
    if answer.command is not None:
        args = hook["toolArgs"] if isinstance(hook["toolArgs"], dict) else calls.load_input(hook["toolArgs"])
        out["modifiedArgs"] = {**args, "command": answer.command}
    return out


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
        result = _deny(f"agent-console hook failed ({type(exc).__name__}); denying to stay safe")
    if result is None:
        return 0
    try:
        stdout.write(json.dumps(result) + "\n")
        stdout.flush()
    except Exception:
        sys.stderr.write("agent-console: the hook could not write its answer; blocked\n")
        return 2  # Copilot CLI denies on a failing hook
    return 0
