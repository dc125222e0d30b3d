"""Claude Code's PreToolUse hook: every supervised tool call asks the console first.

A Bash call becomes a *sandboxed* operation (``bash -c TEXT``: workspace writes, no
network, nothing beyond the sandbox), judged by the policy like any other: within the
ceiling it is allowed without asking. The daemon holds the allowed operation behind a
one-time ticket for this agent (``operation.hold``) and the hook answers allow with
``updatedInput`` that replaces the command by the daemon's ``agent-console exec
--ticket ID`` (the secret stays in a private file): what Claude Code's Bash
tool then runs is exactly the approved request, in bubblewrap, with its content pinned
and its outcome recorded. A command that needs more says so in leading
``# agent-console:`` lines (:mod:`console.adapters.escalation`), and
``dangerouslyDisableSandbox: true`` asks for ``unrestricted``; both go to the operator.

File writes become a ``workspace_write`` scoped to the file, with the sha256 of
the content the file will hold as an argument (so a grant binds path and content):
inside the workspace they pass, a protected path or a path outside goes to review.
An MCP tool call (``mcp__<server>__<tool>``) is shaped like a write: nothing runs in the
sandbox, the input's digest is bound, its whole text is shown, and it asks for
``unrestricted`` (the server acts outside any sandbox).
A ``PermissionRequest`` event (the permission dialog) gets the same decision in that
event's JSON shape; the dialog for the daemon's own rewrite is allowed only when the
daemon says it issued exactly that command to this agent (``operation.held``). Read,
Glob and Grep are answered here, without the daemon
(:mod:`console.adapters.claude_code.reads`): one that reaches agent-console's state, the
secret set or another process's ``/proc`` entries is denied, anything else is left to
Claude Code. Tools the console does not supervise, and events other than PreToolUse and
PermissionRequest, get no answer at all (exit 0, nothing printed), so Claude Code's own
permission flow applies to them unchanged.

Claude Code goes ahead with the tool when a hook exits with anything but 0-with-JSON
or 2, and when the hook outlives its ``timeout``. So :func:`run_hook` never raises —
every failure (daemon down or stalled, bad input, a bug) answers ``deny`` with the
reason — and everything it waits for shares one deadline: ``--timeout`` from the
moment the hook started, plus a short grace for the daemon's own ``approval_timeout``
answer. What no Python code can catch (the interpreter missing, a broken install) is
covered by the installed command's `` || exit 2`` (see :mod:`console.adapters.claude_code.install`).
"""

from __future__ import annotations

import json
import os
import sys
import time

from console.adapters import calls, escalation, gate
from console.adapters.calls import HookInputError, Refused

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from typing import IO, Any

WRITE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
READ_TOOLS = ("Read", "Glob", "Grep", "NotebookRead", "LS")
SUPERVISED_TOOLS = ("Bash", *WRITE_TOOLS, *READ_TOOLS)
MCP_PREFIX = "mcp__"  # mcp__<server>__<tool>: a tool an MCP server runs
DEFAULT_TIMEOUT_S = 55.0  # below Claude Code's default 60 s hook timeout
AGENT = "claude-code"


def operation_for(
    hook: dict[str, Any], env: dict[str, str] | None = None, state_dir: str | None = None
) -> dict[str, Any] | None:
    """The operation a tool call amounts to, or None for tools the console leaves to Claude Code.

    Raises :class:`Refused` for a call the hook denies by itself (see the module docstring).
    """
    env = dict(os.environ) if env is None else env
    tool = calls.field(hook, "tool_name", str)
    tool_input = calls.field(hook, "tool_input", dict)
    cwd = calls.field(hook, "cwd", str)
    if tool not in SUPERVISED_TOOLS and not tool.startswith(MCP_PREFIX):
        return None
    if not cwd.startswith("/"):
        raise HookInputError("hook input's cwd is not an absolute path")
    if tool in READ_TOOLS:
        from console.adapters.claude_code.reads import check_read

        check_read(tool, tool_input, cwd, env, state_dir)
        return None
    session = calls.text_or_empty(hook, "session_id")
    project = env.get("CLAUDE_PROJECT_DIR") or ""
    where = {"agent": AGENT, "cwd": cwd, "project": project, "session": session}
    if tool == "Bash":
        return _bash_operation(where, tool_input)
    if tool.startswith(MCP_PREFIX):
        server, _, name = tool[len(MCP_PREFIX) :].partition("__")
        return calls.mcp_operation(tool=tool, server=server, name=name, tool_input=tool_input, **where)
    path = calls.resolve_path(calls.field(tool_input, WRITE_TOOLS[tool], str), cwd)
    calls.check_private(path, state_dir)
    content = _resulting_content(tool, tool_input, path)
    fields = {k: v for k, v in sorted(tool_input.items()) if k not in ("file_path", "notebook_path")}
    return calls.write_operation(
        tool=tool,
        path=path,
        content=None if content is None else content.encode("utf-8", "surrogatepass"),
        edit=fields,
        state_dir=state_dir,
        **where,
    )


# Claude Code's Bash tool: 2 minutes by default, 10 at most (its `timeout` input, in ms).
BASH_DEFAULT_TIMEOUT_MS = 120_000
BASH_MAX_TIMEOUT_MS = 600_000
# Claude Code's own timeout for the rewritten command stays this far above the
# sandbox's, so the sandbox's timeout (recorded, exit 124) is the one that fires.
BASH_TIMEOUT_MARGIN_MS = 15_000


def _bash_operation(where: dict[str, Any], tool_input: dict[str, Any]) -> dict[str, Any]:
    command = calls.field(tool_input, "command", str)
    description = tool_input.get("description")
    requested = tool_input.get("timeout")
    timeout_ms = BASH_DEFAULT_TIMEOUT_MS
    if isinstance(requested, int) and not isinstance(requested, bool) and requested > 0:
        timeout_ms = min(requested, BASH_MAX_TIMEOUT_MS - BASH_TIMEOUT_MARGIN_MS)
    return calls.shell_operation(
        tool="Bash",
        command=command,
        justification=description if isinstance(description, str) else "",
        timeout_ms=timeout_ms,
        unsandboxed=tool_input.get(escalation.UNSANDBOXED_INPUT) is True,
        **where,
    )


def _rewritten(tool_input: dict[str, Any], operation: dict[str, Any], command: str) -> dict[str, Any]:
    """The Bash call Claude Code runs instead: the daemon's command for the held request."""
    updated = {k: v for k, v in tool_input.items() if k != escalation.UNSANDBOXED_INPUT}
    updated["command"] = command
    updated["timeout"] = min(BASH_MAX_TIMEOUT_MS, operation["timeout_ms"] + BASH_TIMEOUT_MARGIN_MS)
    return updated


# How much of a file the hook reads to compute an Edit's result.
MAX_EDIT_FILE_BYTES = 1 << 20


def _resulting_content(tool: str, tool_input: dict[str, Any], path: str) -> str | None:
    if tool == "Write":
        content = tool_input.get("content")
        return content if isinstance(content, str) else None
    if tool not in ("Edit", "MultiEdit"):
        return None  # NotebookEdit: bound to the edit's fields
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_EDIT_FILE_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_EDIT_FILE_BYTES:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    edits = tool_input.get("edits") if tool == "MultiEdit" else [tool_input]
    if not isinstance(edits, list):
        return None
    for edit in edits:
        if not isinstance(edit, dict):
            return None
        old, new = edit.get("old_string"), edit.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str) or not old or old not in text:
            return None
        text = text.replace(old, new) if edit.get("replace_all") is True else text.replace(old, new, 1)
    return text


# ---------------------------------------------------------------------------------------
# Answers


def _output(decision: str, reason: str, updated_input: dict[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }
    if updated_input is not None:
        answer["updatedInput"] = updated_input
    return {"hookSpecificOutput": answer}


# PreToolUse runs before every supervised call (and in -p mode); PermissionRequest runs
# when Claude Code would show its permission dialog (interactive sessions only): the same
# console decision answers both, each in its own JSON shape.
ANSWERED_EVENTS = ("PreToolUse", "PermissionRequest")


def _permission_output(
    decision: str, reason: str, updated_input: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Claude Code's PermissionRequest answer: ``decision.behavior`` allow or deny."""
    verdict: dict[str, Any] = {"behavior": "allow" if decision == "allow" else "deny"}
    if verdict["behavior"] == "deny":
        verdict["message"] = reason
    elif updated_input is not None:
        verdict["updatedInput"] = updated_input
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": verdict}}


def decide(
    hook_text: str, *, state_dir: str | None, timeout_s: float, started: float | None = None
) -> dict[str, Any] | None:
    """Claude Code's answer for one hook call, or None for "no answer" (not ours to judge).

    ``started`` (a ``time.monotonic()`` value, default now) is when the hook began: the
    whole call ends by ``started + timeout_s + gate.ANSWER_GRACE_S``.
    """
    started = time.monotonic() if started is None else started
    deadline = gate.deadline_for(started, timeout_s)
    try:
        hook = calls.load_input(hook_text)
        event = hook.get("hook_event_name", "PreToolUse")
        if event in ("Notification", "Stop", "UserPromptSubmit"):  # attention: informs, never answers
            from console.adapters import attention

            attention.report(hook, state_dir=state_dir)
            return None
        if event not in ANSWERED_EVENTS:
            return None
        output = _permission_output if event == "PermissionRequest" else _output
        operation = operation_for(hook, state_dir=state_dir)
    except HookInputError as exc:
        return _output("deny", f"agent-console could not read the hook input: {exc}")
    except Refused as exc:
        return output("deny", f"denied by agent-console: {exc}")
    if operation is None:
        return None
    bash = operation["tool"] == "claude-code:Bash"
    if (
        event == "PermissionRequest"
        and bash
        and gate.issued(hook["tool_input"]["command"], state_dir=state_dir, deadline=deadline, client=CLIENT)
    ):
        # The dialog for the daemon's own rewrite, issued to this very agent: it runs
        # only what the operator's console allowed. Anything else, however much it looks
        # like one, is an ordinary request (below).
        return output("allow", "approved by agent-console (the held request)")
    answer = gate.ask(operation, state_dir=state_dir, deadline=deadline, client=CLIENT)
    if not answer.allow:
        return output("deny", answer.reason)
    updated = _rewritten(hook["tool_input"], operation, answer.command) if answer.command else None
    return output("allow", answer.reason, updated)


CLIENT = "claude-code-hook"


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
        return 2  # Claude Code treats exit 2 from PreToolUse as a block
    return 0


if __name__ == "__main__":
    raise SystemExit(run_hook(sys.stdin, sys.stdout, state_dir=None))
