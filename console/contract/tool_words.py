"""A tool call in the tool's own words: ``Write .env (+12 −3)``, ``github.create_issue(…)``.

Tools that are not commands reach the daemon dressed as one: Claude Code's
Write/Edit/MultiEdit/NotebookEdit as ``true PATH sha256:D`` (the write is Claude Code's
own, the digest binds the content), an MCP tool as the hook submits it. Shown as a
command line, the operator read ``/usr/bin/true /w/.env sha256:9f2c…`` and had to work
out that it meant "write .env". Every place that shows a request — the queue, the detail,
the history, ``agent-console pending`` and ``history`` — names it from here, so they all
say the same words; the argv stays what the fingerprint binds and is still shown.

Pure and total: any input gives words or None (a command: its command line is its words).
"""

from __future__ import annotations

import json
import posixpath
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

# Tools whose operation is `true PATH sha256:DIGEST` (console/adapters/claude_code.py).
FILE_TOOLS = frozenset(
    {"claude-code:Write", "claude-code:Edit", "claude-code:MultiEdit", "claude-code:NotebookEdit"}
)
MCP_PREFIX = "mcp__"
MAX_ARGS_CHARS = 400  # an MCP call's arguments, as written here; the detail has them whole


def diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed by a unified diff (its ``---``/``+++`` header left out)."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def shown_path(path: str, workspace_root: str) -> str:
    """``path`` relative to the workspace when it lies inside, else as it is."""
    root = workspace_root.rstrip("/")
    if root and path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return path


def file_words(
    tool: str,
    argv: Sequence[str],
    workspace_root: str = "",
    *,
    diff: str | None = None,
    new_file: bool = False,
) -> str | None:
    """``Write .env (+12 −3)`` for a file tool's ``true PATH sha256:D``; None otherwise."""
    if tool not in FILE_TOOLS or len(argv) != 3:
        return None
    program, path, digest = argv
    if posixpath.basename(program) != "true" or not digest.startswith("sha256:"):
        return None
    words = f"{tool.split(':', 1)[1]} {shown_path(path, workspace_root)}"
    if diff:
        added, removed = diff_counts(diff)
        words += f" (new, +{added})" if new_file else f" (+{added} \u2212{removed})"
    elif new_file:
        words += " (new)"
    return words


def mcp_name(tool: str) -> tuple[str, str] | None:
    """(server, tool) of ``claude-code:mcp__server__tool`` (or a bare ``mcp__server__tool``)."""
    name = tool.split(":", 1)[1] if ":" in tool else tool
    if not name.startswith(MCP_PREFIX):
        return None
    server, sep, rest = name[len(MCP_PREFIX) :].partition("__")
    if not sep or not server or not rest:
        return None
    return server, rest


def _json_object(text: str) -> Mapping[str, Any] | None:
    """The first JSON object in ``text``: the whole text, or a line of it."""
    for candidate in (text, *text.splitlines()):
        candidate = candidate.strip()
        if not candidate.startswith("{"):
            continue
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def mcp_words(tool: str, *, stdin: bytes = b"", justification: str = "") -> str | None:
    """``server.tool(key="value", n=3)`` for an MCP tool; None for any other tool. The
    arguments come from the call's input (its stdin, else its justification) when that is a
    JSON object; otherwise ``server.tool(…)``."""
    name = mcp_name(tool)
    if name is None:
        return None
    server, call = name
    found = None
    if stdin:
        found = _json_object(stdin[: 1 << 20].decode("utf-8", "replace"))
    if found is None and justification:
        found = _json_object(justification[: 1 << 20])
    if found is None:
        return f"{server}.{call}(\u2026)"
    args = ", ".join(f"{k}={_value(v)}" for k, v in found.items())
    if len(args) > MAX_ARGS_CHARS:
        args = args[: MAX_ARGS_CHARS - 1] + "\u2026"
    return f"{server}.{call}({args})"


def tool_words(
    tool: str,
    argv: Sequence[str],
    *,
    workspace_root: str = "",
    justification: str = "",
    stdin: bytes = b"",
    diff: str | None = None,
    new_file: bool = False,
) -> str | None:
    """The call in its tool's words, or None for a command (its command line says it)."""
    return file_words(tool, argv, workspace_root, diff=diff, new_file=new_file) or mcp_words(
        tool, stdin=stdin, justification=justification
    )


def row_words(row: Mapping[str, Any]) -> str | None:
    """:func:`tool_words` for a history row, which keeps the command line, not the argv."""
    return line_words(
        str(row.get("tool") or ""),
        str(row.get("command") or ""),
        workspace_root=str(row.get("workspace_root") or ""),
        justification=str(row.get("justification") or ""),
    )


def line_words(tool: str, command: str, *, workspace_root: str = "", justification: str = "") -> str | None:
    """:func:`tool_words` for a command line (as the history and a grant keep it)."""
    if tool not in FILE_TOOLS and mcp_name(tool) is None:
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        argv = []
    return tool_words(tool, argv, workspace_root=workspace_root, justification=justification)
