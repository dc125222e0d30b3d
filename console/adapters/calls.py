"""One request model for every agent's tool calls: shell, file write, MCP.

Each adapter (console/adapters/<agent>/) maps its agent's tool names and input shapes
onto the three builders here, so a call reaches the daemon the same way whichever agent
made it:

- :func:`shell_operation`: ``bash -c TEXT``, **sandboxed** (workspace writes, no network,
  nothing beyond the sandbox's ceiling), so that within the ceiling it is allowed without
  asking and run by the daemon behind a ticket (:mod:`console.adapters.gate`); leading
  ``# agent-console:`` lines ask for more (:mod:`console.adapters.escalation`).
- :func:`write_operation`: a ``workspace_write`` scoped to the file, with the sha256 of
  what the file will hold as an argument (a grant binds path and content) and that
  content as ``stdin``, so the daemon shows the operator its diff.
- :func:`mcp_operation`: an MCP tool call, shaped like a write: nothing runs in the
  sandbox, the input's digest is bound, its whole text is shown, and it asks for
  ``unrestricted`` (the server acts outside any sandbox).

Every operation's ``tool`` is ``<agent>:<tool name>`` and its ``session_id`` the agent's
own session: the one inbox tells agents apart by these. This module is on every hook's
path, so it imports only the standard library at load time.
"""

from __future__ import annotations

import json
import os
import re

from console.adapters import escalation

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every hook pays for it)
if TYPE_CHECKING:
    from typing import Any

# Every agent the console has an adapter for (``tool`` is ``<agent>:<name>``).
AGENTS = ("claude-code", "codex", "copilot", "gemini", "opencode", "acp")
MAX_SESSION_CHARS = 256
# The operator reads an MCP call's whole input in the request's justification.
MAX_MCP_SHOWN_CHARS = 15 * 1024
MAX_STDIN_BYTES = 1 << 20  # the operation's stdin limit (console/contract/operation.py)
MAX_PREVIEW_CHARS = 2000
MAX_JSON_DEPTH = 64
# A shell call's own timeout: 2 minutes unless the agent says otherwise, below 10 at most.
DEFAULT_SHELL_TIMEOUT_MS = 120_000
MAX_SHELL_TIMEOUT_MS = 585_000
_SURROGATE = re.compile("[\ud800-\udfff]")


class HookInputError(ValueError):
    """The agent's hook input is not what its contract says; the message says what."""


class Refused(Exception):
    """The hook itself refuses the call (no daemon needed); the message says why."""


# ---------------------------------------------------------------------------------------
# Reading the agent's input


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise HookInputError("an object has the same key twice")
    return obj


def _constant(name: str) -> Any:
    raise HookInputError(f"{name} is not valid JSON")


def _check(value: Any, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise HookInputError(f"nesting deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, str):
        if not value.isascii() and _SURROGATE.search(value):
            raise HookInputError("a string holds a lone UTF-16 surrogate")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check(key, depth)
            _check(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check(item, depth + 1)


def load_input(text: str) -> dict[str, Any]:
    """The hook input as a JSON object, decoded as strictly as every boundary of the
    console (console/contract/strictjson.py): no duplicate keys, no NaN, no lone
    surrogates, bounded depth — with the standard library alone."""
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except RecursionError:
        raise HookInputError(f"nesting deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:
        if isinstance(exc, HookInputError):
            raise
        raise HookInputError(f"not JSON ({exc})") from None
    _check(value, 0)
    if not isinstance(value, dict):
        raise HookInputError("the hook input is not a JSON object")
    return value


def field(data: dict[str, Any], name: str, kind: type) -> Any:
    value = data.get(name)
    if not isinstance(value, kind):
        raise HookInputError(f"hook input lacks {name} ({kind.__name__})")
    return value


def text_or_empty(data: dict[str, Any], name: str, limit: int = MAX_SESSION_CHARS) -> str:
    value = data.get(name)
    return value[:limit] if isinstance(value, str) else ""


def one_line(text: str, limit: int = 500) -> str:
    return " ".join(str(text).split())[:limit]


# ---------------------------------------------------------------------------------------
# Where a call runs


def within(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/") or root == "/"


def _real(path: str) -> str:
    return os.path.realpath(path)


def _home() -> str:
    return _real(os.path.expanduser("~"))


def refuse_home(path: str, what: str, agent: str) -> None:
    """The home directory, one of its ancestors or ``/`` is never a workspace: that would
    make every dotfile (``~/.bashrc``) an in-workspace write."""
    real = _real(path)
    if real == "/" or within(_home(), real):
        raise Refused(
            f"{what} is {real}, which holds your home directory: it cannot be a workspace. "
            f"Run {agent} inside a project directory"
        )


def workspace_for(cwd: str, project: str, agent: str) -> tuple[str, bool]:
    """The workspace root and whether ``cwd`` lies outside the project.

    ``project`` (the agent's project directory, empty when it names none) is the
    workspace; without it, the cwd is.
    """
    workspace = project or cwd
    if not workspace.startswith("/"):
        raise Refused(f"the workspace {workspace!r} is not an absolute path")
    refuse_home(workspace, "the project directory" if project else "the cwd", agent)
    outside = bool(project) and not within(_real(cwd), _real(workspace))
    if outside:
        refuse_home(cwd, "the cwd", agent)
    return workspace, outside


def private_roots(state_dir: str | None) -> list[str]:
    from console.locations import locate

    loc = locate(state_dir)
    return [_real(str(p)) for p in (loc.state_dir, loc.runtime_dir, loc.token)]


def check_private(path: str, state_dir: str | None) -> None:
    """Refuse a path inside agent-console's state or runtime directory."""
    real = _real(path)
    for root in private_roots(state_dir):
        if real == root or real.startswith(root.rstrip("/") + "/"):
            raise Refused(f"{path} belongs to agent-console's private state; the agent may not touch it")


def _base(agent: str, tool: str, session: str, workspace: str) -> dict[str, Any]:
    return {
        "origin": "hook",
        "workspace_root": workspace,
        "cwd": ".",
        "session_id": session[:MAX_SESSION_CHARS],
        "tool": f"{agent}:{tool}",
    }


# ---------------------------------------------------------------------------------------
# The three shapes


def shell_operation(
    *,
    agent: str,
    tool: str,
    command: str,
    cwd: str,
    project: str,
    session: str,
    justification: str = "",
    timeout_ms: int | None = None,
    unsandboxed: bool = False,
    unsandboxed_hint: str = "",
) -> dict[str, Any]:
    """A shell command the agent would run itself, as a sandboxed request.

    ``unsandboxed``: the agent's own "run outside the sandbox" flag (Claude Code's
    ``dangerouslyDisableSandbox``): it asks for ``unrestricted``, for the operator.
    """
    workspace, outside = workspace_for(cwd, project, agent)
    op: dict[str, Any] = {
        **_base(agent, tool, session, workspace),
        "kind": "shell",
        "executable": "bash",
        "args": ["-c", command],
    }
    if outside:
        # The command runs where the agent is, not in the project: the operator sees
        # that place as the workspace (the daemon judges it as one), said plainly.
        op["workspace_root"] = cwd
        justification = f"[cwd {cwd} is outside the project {workspace}] {justification}"
    else:
        op["cwd"] = cwd  # absolute: the daemon resolves it and keeps it inside the workspace
    wanted_ms = timeout_ms if isinstance(timeout_ms, int) and timeout_ms > 0 else DEFAULT_SHELL_TIMEOUT_MS
    op["timeout_ms"] = max(1000, min(wanted_ms, MAX_SHELL_TIMEOUT_MS))
    op["justification"] = justification
    op["workspace_access"] = "write"
    if unsandboxed:
        op["network"] = "any"
        op["capabilities"] = [{"kind": "unrestricted"}]
        return op
    try:
        wanted = escalation.parse(command, cwd, unsandboxed_hint)
    except escalation.EscalationError as exc:
        raise Refused(str(exc)) from None
    op["network"] = "any" if wanted.network else "none"
    op["write_dirs"] = wanted.write_dirs
    return op


def resolve_path(path: str, cwd: str) -> str:
    """An absolute, normalized path; a symlink resolved (the operator sees where a write lands)."""
    if not path.startswith("/"):
        path = os.path.join(cwd, path)
    path = os.path.normpath(path)
    real = _real(path)
    return real if real != path else path


def write_operation(
    *,
    agent: str,
    tool: str,
    path: str,
    cwd: str,
    project: str,
    session: str,
    content: bytes | None,
    edit: Any = None,
    state_dir: str | None,
    what: str = "",
) -> dict[str, Any]:
    """A file write the agent performs itself: ``true PATH sha256:D``.

    ``content`` is what the file will hold when the adapter could compute it (then ``D``
    is its digest and it travels as ``stdin``: the daemon shows the diff); else ``D`` is
    the digest of ``edit`` (the edit's own fields), whose first characters are shown.
    """
    import base64
    import hashlib

    workspace, _ = workspace_for(cwd, project, agent)
    path = resolve_path(path, cwd)
    check_private(path, state_dir)
    if content is not None:
        digest = hashlib.sha256(content).hexdigest()
        preview = f"new content, sha256 {digest[:16]}, {len(content)} bytes (the diff is shown below)"
    else:
        shown = edit if isinstance(edit, str) else json.dumps(edit, sort_keys=True, ensure_ascii=False)
        data = shown.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()
        cut = shown[:MAX_PREVIEW_CHARS] + ("…" if len(shown) > MAX_PREVIEW_CHARS else "")
        preview = (
            f"edit (the file's result could not be computed), sha256 {digest[:16]}, {len(data)} bytes:\n{cut}"
        )
    op: dict[str, Any] = {
        **_base(agent, tool, session, workspace),
        "kind": "process",
        # The agent performs the write; `true` stands for "nothing else runs". The
        # content's hash is an argument, so it is part of the fingerprint: a grant for
        # one content does not allow another content at the same path.
        "executable": "true",
        "args": [path, f"sha256:{digest}"],
        "capabilities": [{"kind": "workspace_write", "scope": path}],
        "justification": f"{what or tool} {path}\n{preview}",
    }
    if content is not None and len(content) <= MAX_STDIN_BYTES:
        # What the file will hold, for the daemon to show as a diff (console/daemon/proposed.py).
        op["stdin"] = base64.b64encode(content).decode("ascii")
    return op


def mcp_operation(
    *, agent: str, tool: str, server: str, name: str, tool_input: Any, cwd: str, project: str, session: str
) -> dict[str, Any]:
    """An MCP tool call, for the operator to decide: the agent calls the server itself,
    so nothing runs in the sandbox (``true``). The server acts outside any sandbox with
    the operator's powers, so the call asks for ``unrestricted``; the input's digest is an
    argument (a grant binds this exact input), its text is the justification (shown in
    full, escaped) and its bytes the stdin."""
    import base64
    import hashlib

    workspace, _ = workspace_for(cwd, project, agent)
    data = json.dumps(tool_input, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    raw = data.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(raw).hexdigest()
    shown = json.dumps(tool_input, sort_keys=True, ensure_ascii=False, indent=2)
    if len(shown) > MAX_MCP_SHOWN_CHARS or len(raw) > MAX_STDIN_BYTES:
        raise Refused(
            f"the input of {tool} is {len(shown)} characters, more than the operator can be shown "
            f"({MAX_MCP_SHOWN_CHARS}); make the call smaller"
        )
    return {
        **_base(agent, tool, session, workspace),
        "kind": "process",
        "executable": "true",
        "args": [f"sha256:{digest}"],
        "capabilities": [{"kind": "unrestricted"}],
        "justification": f"MCP server {server!r}, tool {name!r} (sha256 {digest[:16]}, {len(raw)} bytes):\n{shown}",
        "stdin": base64.b64encode(raw).decode("ascii"),
    }
