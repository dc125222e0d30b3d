"""Agents' own settings in the operator's home: protected wherever a write lands.

In a workspace, agents' settings (``.claude/``, ``.mcp.json``, ``.codex/`` …) are in the
protected set (console/policy/protected_set.py). The same files in the home are the
user-level settings of every project: ``~/.claude/settings.json`` with
``disableAllHooks`` switches this console off for all of them, ``~/.claude.json`` and the
MCP entries of the others start programs. A write there is an escalation of its own,
``protected_metadata``, which the console approves only with the typed word.
"""

from __future__ import annotations

import os
from functools import lru_cache

# Relative to a home directory: each a file or a directory (everything inside it).
HOME_AGENT_SETTINGS: tuple[tuple[str, str], ...] = (
    (".claude", "Claude Code's user settings, hooks, commands, agents and credentials"),
    (".claude.json", "Claude Code's user MCP servers and project settings"),
    (".mcp.json", "MCP servers: commands an agent starts"),
    (".codex", "Codex settings, rules and MCP servers"),
    (".gemini", "Gemini CLI settings, tool permissions and MCP servers"),
    (".cursor", "Cursor settings, rules and MCP servers"),
    (".config/opencode", "opencode settings and MCP servers"),
    (".config/claude", "Claude Code settings (XDG location)"),
    (".config/github-copilot", "Copilot settings"),
    (".copilot", "Copilot CLI settings and MCP servers"),
    (".aider.conf.yml", "aider settings"),
)


@lru_cache(maxsize=8)
def _homes(home: str) -> tuple[str, ...]:
    found = {os.path.normpath(home)} if home.startswith("/") else set()
    found |= {os.path.realpath(h) for h in found}
    return tuple(h for h in found if h != "/")


def agent_settings(path: str, home: str | None = None) -> str:
    """What agent's settings ``path`` (canonical) is, or ``""`` when it is none."""
    home = os.environ.get("HOME", "") if home is None else home
    for root in _homes(home or os.path.expanduser("~")):
        if not path.startswith(root.rstrip("/") + "/"):
            continue
        rel = path[len(root.rstrip("/")) + 1 :]
        for name, why in HOME_AGENT_SETTINGS:
            if rel == name or rel.startswith(name + "/"):
                return why
    return ""
