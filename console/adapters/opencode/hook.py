"""The hook OpenCode's agent-console plugin runs before every tool call.

OpenCode (1.18) has no command hooks: a plugin's ``tool.execute.before`` sees each call
(``input.tool``, ``input.sessionID``, ``output.args``) and may throw to block it or change
``output.args`` to run something else. The plugin agent-console installs
(:mod:`console.adapters.opencode.install`) hands the call to this hook as JSON on stdin
(``tool_name``, ``tool_input``, ``session_id``, ``cwd``, ``project``) and reads one JSON
answer: ``{"decision": "allow", "args": {...}}``, ``{"decision": "deny", "reason": R}``
(the plugin throws R, which the model reads) or ``{"decision": "none"}`` for tools the
console leaves to OpenCode. Anything else — no output, another exit code, a timeout —
the plugin treats as a block.

- ``bash`` becomes a sandboxed request; allowed, ``command`` is replaced by the daemon's
  ``agent-console exec --ticket ID`` (and ``timeout`` set above the sandbox's).
- ``write`` and ``edit``: a write request with what the file will hold.
- ``read``, ``glob``, ``grep``, ``list``: denied here when they reach agent-console's
  state, the secret set or ``/proc`` (as Claude Code's reads), else none.
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

AGENT = "opencode"
CLIENT = "opencode-hook"
DEFAULT_TIMEOUT_S = 55.0
WRITES = ("write", "edit")
# What the plugin reports of OpenCode's own events, in the Claude Code events' names that
# console/adapters/attention.py reads: a prompt (working), idle (done), a permission (waiting).
ATTENTION_EVENTS = ("UserPromptSubmit", "Stop", "Notification")
READS = {"read": "Read", "glob": "Glob", "grep": "Grep", "list": "LS"}
UNSANDBOXED = "ask the operator to run it for you (OpenCode has no per-call flag for it)"
# OpenCode's own timeout for the rewritten command stays this far above the sandbox's.
TIMEOUT_MARGIN_MS = 15_000
MAX_EDIT_FILE_BYTES = 1 << 20


def _reads_input(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(args.get("filePath"), str):
        out["file_path"] = args["filePath"]
    if isinstance(args.get("path"), str):
        out["path"] = args["path"]
    if tool == "glob" and isinstance(args.get("pattern"), str):
        out["pattern"] = args["pattern"]
    if tool == "grep" and isinstance(args.get("include"), str):
        out["glob"] = args["include"]
    return out


def operation_for(hook: dict[str, Any], state_dir: str | None) -> dict[str, Any] | None:
    tool = calls.field(hook, "tool_name", str)
    args = calls.field(hook, "tool_input", dict)
    cwd = calls.field(hook, "cwd", str)
    if tool != "bash" and tool not in WRITES and tool not in READS:
        return None
    if not cwd.startswith("/"):
        raise HookInputError("hook input's cwd is not an absolute path")
    if tool in READS:
        from console.adapters.claude_code.reads import check_read

        check_read(READS[tool], _reads_input(tool, args), cwd, dict(os.environ), state_dir)
        return None
    # OpenCode's worktree is the git root, or "/" outside a repository: no project then.
    project = hook.get("project") if isinstance(hook.get("project"), str) else ""
    if project == "/" or not calls.within(cwd, project or "/"):
        project = ""
    where = {
        "agent": AGENT,
        "cwd": cwd,
        "project": project or "",
        "session": calls.text_or_empty(hook, "session_id"),
    }
    if tool == "bash":
        workdir = args.get("workdir")
        if isinstance(workdir, str) and workdir:
            where["cwd"] = os.path.normpath(os.path.join(cwd, workdir))
        timeout = args.get("timeout")
        description = args.get("description")
        return calls.shell_operation(
            tool=tool,
            command=calls.field(args, "command", str),
            justification=description if isinstance(description, str) else "",
            timeout_ms=timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else None,
            unsandboxed_hint=UNSANDBOXED,
            **where,
        )
    path = calls.resolve_path(calls.field(args, "filePath", str), cwd)
    content = _resulting_content(tool, args, path)
    fields = {k: v for k, v in sorted(args.items()) if k != "filePath"}
    return calls.write_operation(
        tool=tool,
        path=path,
        content=None if content is None else content.encode("utf-8", "surrogatepass"),
        edit=fields,
        state_dir=state_dir,
        **where,
    )


def _resulting_content(tool: str, args: dict[str, Any], path: str) -> str | None:
    if tool == "write":
        content = args.get("content")
        return content if isinstance(content, str) else None
    old, new = args.get("oldString"), args.get("newString")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_EDIT_FILE_BYTES + 1)
    except FileNotFoundError:
        return new if old == "" else None
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
    return text.replace(old, new) if args.get("replaceAll") is True else text.replace(old, new, 1)


def _deny(reason: str) -> dict[str, Any]:
    return {"decision": "deny", "reason": reason or "denied by agent-console"}


def decide(
    hook_text: str, *, state_dir: str | None, timeout_s: float, started: float | None = None
) -> dict[str, Any]:
    started = time.monotonic() if started is None else started
    deadline = gate.deadline_for(started, timeout_s)
    try:
        hook = calls.load_input(hook_text)
        if hook.get("hook_event_name") in ATTENTION_EVENTS:  # informs who waits; never a decision
            from console.adapters import attention

            attention.report(hook, state_dir=state_dir, client=CLIENT)
            return {"decision": "none"}
        operation = operation_for(hook, state_dir)
    except HookInputError as exc:
        return _deny(f"agent-console could not read the call: {exc}")
    except Refused as exc:
        return _deny(f"denied by agent-console: {exc}")
    if operation is None:
        return {"decision": "none"}
    answer = gate.ask(operation, state_dir=state_dir, deadline=deadline, client=CLIENT)
    if not answer.allow:
        return _deny(answer.reason)
    out: dict[str, Any] = {"decision": "allow", "reason": answer.reason}
    if answer.command is not None:
        out["args"] = {"command": answer.command, "timeout": operation["timeout_ms"] + TIMEOUT_MARGIN_MS}
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
    try:
        stdout.write(json.dumps(result) + "\n")
        stdout.flush()
    except Exception:
        sys.stderr.write("agent-console: the hook could not write its answer; blocked\n")
        return 2  # the plugin blocks on any exit but 0 with an answer
    return 0
