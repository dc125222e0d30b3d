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
(:mod:`console.adapters.claude_code_reads`): one that reaches agent-console's state, the
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
covered by the installed command's `` || exit 2`` (see :mod:`console.adapters.claude_code_install`).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from typing import IO, Any

from console.adapters import escalation
from console.adapters.claude_code_reads import Refused, check_private, check_read

WRITE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
READ_TOOLS = ("Read", "Glob", "Grep", "NotebookRead", "LS")
SUPERVISED_TOOLS = ("Bash", *WRITE_TOOLS, *READ_TOOLS)
MCP_PREFIX = "mcp__"  # mcp__<server>__<tool>: a tool an MCP server runs
# The operator reads an MCP call's whole input in the request's justification.
MAX_MCP_SHOWN_CHARS = 15 * 1024
DEFAULT_TIMEOUT_S = 55.0  # below Claude Code's default 60 s hook timeout
# How long after --timeout the hook still waits for the daemon's approval_timeout deny
# (which the daemon records); past it the hook denies by itself. Keeps the whole hook
# within --timeout + 1 s of its start.
ANSWER_GRACE_S = 0.5


class HookInputError(ValueError):
    pass


def _field(data: dict[str, Any], name: str, kind: type) -> Any:
    value = data.get(name)
    if not isinstance(value, kind):
        raise HookInputError(f"hook input lacks {name} ({kind.__name__})")
    return value


def _within(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/") or root == "/"


def _real(path: str) -> str:
    return os.path.realpath(path)


def _home() -> str:
    return _real(os.path.expanduser("~"))


def _workspace_for(cwd: str, env: dict[str, str]) -> tuple[str, bool]:
    """The workspace root and whether the hook's cwd lies outside the project.

    ``CLAUDE_PROJECT_DIR`` names the project. Without it the cwd is the workspace — but
    never the home directory, one of its ancestors or ``/``: that would make every
    dotfile (``~/.bashrc``) an in-workspace write.
    """
    project = env.get("CLAUDE_PROJECT_DIR") or ""
    workspace = project or cwd
    if not workspace.startswith("/"):
        raise Refused(f"the workspace {workspace!r} is not an absolute path")
    _refuse_home(workspace, "CLAUDE_PROJECT_DIR" if project else "the cwd")
    outside = bool(project) and not _within(_real(cwd), _real(workspace))
    if outside:
        _refuse_home(cwd, "the cwd")
    return workspace, outside


def _refuse_home(path: str, what: str) -> None:
    real = _real(path)
    if real == "/" or _within(_home(), real):
        raise Refused(
            f"{what} is {real}, which holds your home directory: it cannot be a workspace. "
            "Run Claude Code inside a project directory"
        )


def operation_for(
    hook: dict[str, Any], env: dict[str, str] | None = None, state_dir: str | None = None
) -> dict[str, Any] | None:
    """The operation a tool call amounts to, or None for tools the console leaves to Claude Code.

    Raises :class:`Refused` for a call the hook denies by itself (see the module docstring).
    """
    env = dict(os.environ) if env is None else env
    tool = _field(hook, "tool_name", str)
    tool_input = _field(hook, "tool_input", dict)
    cwd = _field(hook, "cwd", str)
    if tool not in SUPERVISED_TOOLS and not tool.startswith(MCP_PREFIX):
        return None
    if not cwd.startswith("/"):
        raise HookInputError("hook input's cwd is not an absolute path")
    if tool in READ_TOOLS:
        check_read(tool, tool_input, cwd, env, state_dir)
        return None
    raw_session = hook.get("session_id")
    session = raw_session if isinstance(raw_session, str) else ""
    workspace, outside = _workspace_for(cwd, env)
    base = {
        "origin": "hook",
        "workspace_root": workspace,
        "cwd": ".",
        "session_id": session[:256],
        "tool": f"claude-code:{tool}",
    }
    if tool == "Bash":
        return _bash_operation(base, tool_input, cwd, workspace, outside)
    if tool.startswith(MCP_PREFIX):
        return _mcp_operation(base, tool, tool_input)
    path = _field(tool_input, WRITE_TOOLS[tool], str)
    if not path.startswith("/"):
        path = os.path.join(cwd, path)
    path = os.path.normpath(path)
    real = _real(path)
    if real != path:  # a symlink (or a `..` through one): the operator sees where it lands
        path = real
    check_private(path, state_dir)
    digest, preview, content = content_binding(tool, tool_input, path)
    op = {
        **base,
        "kind": "process",
        # Claude Code performs the write; `true` stands for "nothing else runs". The
        # content's hash is an argument, so it is part of the fingerprint: a grant for
        # one content does not allow another content at the same path.
        "executable": "true",
        "args": [path, f"sha256:{digest}"],
        "capabilities": [{"kind": "workspace_write", "scope": path}],
        "justification": f"{tool} {path}\n{preview}",
    }
    if content is not None and len(content) <= MAX_STDIN_BYTES:
        # What the file will hold, for the daemon to show as a diff (console/daemon/proposed.py).
        op["stdin"] = base64.b64encode(content).decode("ascii")
    return op


def _mcp_operation(base: dict[str, Any], tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """An MCP tool call, for the operator to decide: Claude Code calls the server itself,
    so nothing runs in the sandbox (``true``). The server acts outside any sandbox with
    the operator's powers, so the call asks for ``unrestricted``; the input's digest is an
    argument (a grant binds this exact input), its text is the justification (shown in
    full, escaped) and its bytes the stdin."""
    import hashlib

    data = json.dumps(tool_input, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    raw = data.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(raw).hexdigest()
    server, _, name = tool[len(MCP_PREFIX) :].partition("__")
    shown = json.dumps(tool_input, sort_keys=True, ensure_ascii=False, indent=2)
    if len(shown) > MAX_MCP_SHOWN_CHARS or len(raw) > MAX_STDIN_BYTES:
        raise Refused(
            f"the input of {tool} is {len(shown)} characters, more than the operator can be shown "
            f"({MAX_MCP_SHOWN_CHARS}); make the call smaller"
        )
    return {
        **base,
        "kind": "process",
        "executable": "true",
        "args": [f"sha256:{digest}"],
        "capabilities": [{"kind": "unrestricted"}],
        "justification": f"MCP server {server!r}, tool {name!r} (sha256 {digest[:16]}, {len(raw)} bytes):\n{shown}",
        "stdin": base64.b64encode(raw).decode("ascii"),
    }


# Claude Code's Bash tool: 2 minutes by default, 10 at most (its `timeout` input, in ms).
BASH_DEFAULT_TIMEOUT_MS = 120_000
BASH_MAX_TIMEOUT_MS = 600_000
# Claude Code's own timeout for the rewritten command stays this far above the
# sandbox's, so the sandbox's timeout (recorded, exit 124) is the one that fires.
BASH_TIMEOUT_MARGIN_MS = 15_000


def _bash_operation(
    base: dict[str, Any], tool_input: dict[str, Any], cwd: str, workspace: str, outside: bool
) -> dict[str, Any]:
    command = _field(tool_input, "command", str)
    description = tool_input.get("description")
    justification = description if isinstance(description, str) else ""
    op: dict[str, Any] = {**base, "kind": "shell", "executable": "bash", "args": ["-c", command]}
    if outside:
        # The command runs where Claude is, not in the project: the operator sees
        # that place as the workspace (the daemon judges it as one), said plainly.
        op["workspace_root"] = cwd
        justification = f"[cwd {cwd} is outside the project {workspace}] {justification}"
    else:
        op["cwd"] = cwd  # absolute: the daemon resolves it and keeps it inside the workspace
    requested = tool_input.get("timeout")
    timeout_ms = BASH_DEFAULT_TIMEOUT_MS
    if isinstance(requested, int) and not isinstance(requested, bool) and requested > 0:
        timeout_ms = min(requested, BASH_MAX_TIMEOUT_MS)
    op["timeout_ms"] = max(1000, min(timeout_ms, BASH_MAX_TIMEOUT_MS - BASH_TIMEOUT_MARGIN_MS))
    op["justification"] = justification
    op["workspace_access"] = "write"
    if tool_input.get(escalation.UNSANDBOXED_INPUT) is True:
        op["network"] = "any"
        op["capabilities"] = [{"kind": "unrestricted"}]
        return op
    try:
        wanted = escalation.parse(command, cwd)
    except escalation.EscalationError as exc:
        raise Refused(str(exc)) from None
    op["network"] = "any" if wanted.network else "none"
    op["write_dirs"] = wanted.write_dirs
    return op


def _rewritten(tool_input: dict[str, Any], operation: dict[str, Any], command: str) -> dict[str, Any]:
    """The Bash call Claude Code runs instead: the daemon's command for the held request."""
    updated = {k: v for k, v in tool_input.items() if k != escalation.UNSANDBOXED_INPUT}
    updated["command"] = command
    updated["timeout"] = min(BASH_MAX_TIMEOUT_MS, operation["timeout_ms"] + BASH_TIMEOUT_MARGIN_MS)
    return updated


# How much of a file the hook reads to compute an Edit's result, and how much of the new
# content the operator is shown (the justification is display-only, escaped by the TUI).
MAX_EDIT_FILE_BYTES = 1 << 20
MAX_PREVIEW_CHARS = 2000
MAX_STDIN_BYTES = 1 << 20  # the operation's stdin limit (console/contract/operation.py)


def content_binding(tool: str, tool_input: dict[str, Any], path: str) -> tuple[str, str, bytes | None]:
    """(sha256 of what the file will hold — or, when that cannot be computed, of the edit
    itself —, a bounded summary for the operator, and the new content when known)."""
    import hashlib

    result = _resulting_content(tool, tool_input, path)
    if result is not None:
        data = result.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()
        return digest, f"new content, sha256 {digest[:16]}, {len(data)} bytes (the diff is shown below)", data
    what = "edit (the file's result could not be computed)"
    fields = {k: v for k, v in sorted(tool_input.items()) if k not in ("file_path", "notebook_path")}
    data = json.dumps(fields, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    result = json.dumps(fields, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(data).hexdigest()
    shown = result[:MAX_PREVIEW_CHARS] + ("…" if len(result) > MAX_PREVIEW_CHARS else "")
    return digest, f"{what}, sha256 {digest[:16]}, {len(data)} bytes:\n{shown}", None


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
    whole call ends by ``started + timeout_s + ANSWER_GRACE_S``.
    """
    from console.client import Client, DaemonUnreachable, RPCError
    from console.contract import strictjson
    from console.protocol.procs import agent_process_pid

    started = time.monotonic() if started is None else started
    deadline = started + timeout_s + ANSWER_GRACE_S
    try:
        hook = strictjson.loads(hook_text)
        if not isinstance(hook, dict):
            raise HookInputError("hook input is not a JSON object")
        event = hook.get("hook_event_name", "PreToolUse")
        if event in ("Notification", "Stop", "UserPromptSubmit"):  # attention: informs, never answers
            from console.adapters import claude_code_attention

            claude_code_attention.report(hook, state_dir=state_dir)
            return None
        if event not in ANSWERED_EVENTS:
            return None
        output = _permission_output if event == "PermissionRequest" else _output
        operation = operation_for(hook, state_dir=state_dir)
    except (strictjson.StrictJSONError, HookInputError) as exc:
        return _output("deny", f"agent-console could not read the hook input: {exc}")
    except Refused as exc:
        return output("deny", f"denied by agent-console: {exc}")
    if operation is None:
        return None
    bash = operation["tool"] == "claude-code:Bash"
    try:
        with Client.connect(
            state_dir,
            role="agent",
            client="claude-code-hook",
            deadline=deadline,
            agent_pid=agent_process_pid(),  # the claude process: its calls are one agent
            per_call=True,
        ) as client:
            if event == "PermissionRequest" and bash and _issued(client, hook["tool_input"]["command"]):
                # The dialog for the daemon's own rewrite, issued to this very agent: it
                # runs only what the operator's console allowed. Anything else, however
                # much it looks like one, is an ordinary request (below).
                return output("allow", "approved by agent-console (the held request)")
            wait_s = max(0.05, deadline - ANSWER_GRACE_S - time.monotonic())
            command = None
            if bash:
                held = client.call("operation.hold", {"operation": operation, "timeout_s": wait_s})
                answer, command = held["decision"], held["command"]
            else:
                answer = client.submit(operation, timeout_s=wait_s)
    except DaemonUnreachable as exc:
        return output("deny", f"agent-console is unreachable, so nothing is allowed: {exc}")
    except RPCError as exc:
        return output("deny", f"agent-console refused the request: {_one_line(exc.message)}")
    if answer.get("verdict") == "allow" and bash and not command:
        # Never an allow without the rewrite: Claude Code would run the command itself.
        return output("deny", "agent-console allowed the command but held no ticket for it; denying")
    if answer.get("verdict") == "allow":
        note = answer.get("note") or ""
        how = "; it runs in agent-console's sandbox" if command and "capabilities" not in operation else ""
        updated = _rewritten(hook["tool_input"], operation, command) if command else None
        return output(
            "allow",
            f"approved by agent-console ({answer.get('source')})" + (f": {note}" if note else "") + how,
            updated,
        )
    reason = answer.get("reason") or "denied"
    note = answer.get("note") or ""
    return output("deny", f"denied by agent-console: {reason}" + (f" — {note}" if note else ""))


def _issued(client: Any, command: str) -> bool:
    """Whether the daemon issued exactly ``command`` for a ticket of this agent."""
    from console.protocol.requests import MAX_HELD_COMMAND

    if len(command) > MAX_HELD_COMMAND:
        return False  # longer than anything the daemon issues
    return bool(client.call("operation.held", {"command": command})["held"])


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:500]


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
