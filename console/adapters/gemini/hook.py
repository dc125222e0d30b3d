"""Gemini CLI's BeforeTool hook: every shell command and file write asks the console first.

Gemini CLI 0.61 (``hooks.BeforeTool`` in ``~/.gemini/settings.json``) sends the call on
stdin (``tool_name``, ``tool_input``, ``cwd``, ``session_id``; ``GEMINI_PROJECT_DIR`` in
the environment) and reads ``{"decision": "deny", "reason": R}`` (the model reads
"Tool execution blocked: R") or ``{"decision": "allow", "hookSpecificOutput":
{"hookEventName": "BeforeTool", "tool_input": {...}}}`` to run changed arguments.

- ``run_shell_command`` becomes a sandboxed request; allowed, its ``command`` is replaced
  by the daemon's ``agent-console exec --ticket ID``.
- ``write_file`` and ``replace``: a write request with what the file will hold.
- ``read_file``, ``glob``, ``grep_search``, ``list_directory``: denied here when they reach
  agent-console's state, the secret set or ``/proc`` (as Claude Code's reads), else no answer.

Gemini CLI runs the tool when a hook crashes, prints what is not JSON or outlives its
timeout; exit 2 blocks. So this hook never raises, answers every failure with a deny, ends
within ``--timeout`` + 1 s, and the installed command's tail turns a broken install into
exit 2.
"""

from __future__ import annotations

import json
import os
import sys
import time

from console.adapters import calls, gate
from console.adapters.calls import HookInputError, Refused

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from typing import IO, Any

AGENT = "gemini"
CLIENT = "gemini-hook"
DEFAULT_TIMEOUT_S = 55.0
SHELL = "run_shell_command"
WRITES = ("write_file", "replace")
# Gemini's reading tools as Claude Code's, for the same checks (claude_code/reads.py).
READS = {"read_file": "Read", "glob": "Glob", "grep_search": "Grep", "list_directory": "LS"}
# Gemini CLI's events that only tell who waits for the person, as the Claude Code events
# console/adapters/attention.py reads: a prompt starts work, the agent's answer ends it.
ATTENTION_EVENTS = {"BeforeAgent": "UserPromptSubmit", "AfterAgent": "Stop", "Notification": "Notification"}
UNSANDBOXED = "ask the operator to run it for you (Gemini CLI has no per-call flag for it)"


def _reads_input(tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(tool_input.get("file_path"), str):
        out["file_path"] = tool_input["file_path"]
    if isinstance(tool_input.get("dir_path"), str):
        out["path"] = tool_input["dir_path"]
    if tool == "glob" and isinstance(tool_input.get("pattern"), str):
        out["pattern"] = tool_input["pattern"]
    if tool == "grep_search" and isinstance(tool_input.get("include_pattern"), str):
        out["glob"] = tool_input["include_pattern"]
    return out


def operation_for(hook: dict[str, Any], state_dir: str | None, env: dict[str, str]) -> dict[str, Any] | None:
    tool = calls.field(hook, "tool_name", str)
    tool_input = calls.field(hook, "tool_input", dict)
    cwd = calls.field(hook, "cwd", str)
    if tool != SHELL and tool not in WRITES and tool not in READS:
        return None
    if not cwd.startswith("/"):
        raise HookInputError("hook input's cwd is not an absolute path")
    if tool in READS:
        from console.adapters.claude_code.reads import check_read

        check_read(READS[tool], _reads_input(tool, tool_input), cwd, env, state_dir)
        return None
    project = env.get("GEMINI_PROJECT_DIR") or ""
    where = {
        "agent": AGENT,
        "cwd": cwd,
        "project": project,
        "session": calls.text_or_empty(hook, "session_id"),
    }
    if tool == SHELL:
        command = calls.field(tool_input, "command", str)
        directory = tool_input.get("dir_path")
        if isinstance(directory, str) and directory:
            where["cwd"] = os.path.normpath(os.path.join(project or cwd, directory))
        description = tool_input.get("description")
        return calls.shell_operation(
            tool=tool,
            command=command,
            justification=description if isinstance(description, str) else "",
            unsandboxed_hint=UNSANDBOXED,
            **where,
        )
    path = calls.resolve_path(calls.field(tool_input, "file_path", str), project or cwd)
    content = _resulting_content(tool, tool_input, path)
    fields = {k: v for k, v in sorted(tool_input.items()) if k != "file_path"}
    return calls.write_operation(
        tool=tool,
        path=path,
        content=None if content is None else content.encode("utf-8", "surrogatepass"),
        edit=fields,
        state_dir=state_dir,
        **where,
    )


MAX_EDIT_FILE_BYTES = 1 << 20


def _resulting_content(tool: str, tool_input: dict[str, Any], path: str) -> str | None:
    if tool == "write_file":
        content = tool_input.get("content")
        return content if isinstance(content, str) else None
    old, new = tool_input.get("old_string"), tool_input.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_EDIT_FILE_BYTES + 1)
    except FileNotFoundError:
        return new if old == "" else None  # replace with an empty old_string creates the file
    except OSError:
        return None
    if len(raw) > MAX_EDIT_FILE_BYTES:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not old or old not in text:
        return None
    return text.replace(old, new) if tool_input.get("allow_multiple") is True else text.replace(old, new, 1)


def _deny(reason: str) -> dict[str, Any]:
    return {"decision": "deny", "reason": reason or "denied"}


def decide(
    hook_text: str, *, state_dir: str | None, timeout_s: float, started: float | None = None
) -> dict[str, Any] | None:
    started = time.monotonic() if started is None else started
    deadline = gate.deadline_for(started, timeout_s)
    try:
        hook = calls.load_input(hook_text)
        event = hook.get("hook_event_name", "BeforeTool")
        if event in ATTENTION_EVENTS:  # informs who waits for the person; never answers
            from console.adapters import attention

            said = {**hook, "hook_event_name": ATTENTION_EVENTS[event]}
            attention.report(said, state_dir=state_dir, client=CLIENT)
            return None
        if event != "BeforeTool":
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
    out: dict[str, Any] = {"decision": "allow", "reason": answer.reason}
    if answer.command is not None:
        tool_input = {**hook["tool_input"], "command": answer.command}
        out["hookSpecificOutput"] = {"hookEventName": "BeforeTool", "tool_input": tool_input}
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
        return 2  # Gemini CLI blocks on exit 2
    return 0
