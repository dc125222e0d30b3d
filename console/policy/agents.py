"""Agent CLIs the console knows: their own state, the files that keep their hook, their API.

``agent-console run -- claude`` (and any confined session) runs the agent in the
sandbox. What it must still write is its own state, nothing else of the home; what it
must not write inside that state is the file that configures its hook (a rogue agent
would switch off the console's hook for its next start); the domains it must reach are
its model API's. Each is known per agent here and can be changed in the policy:

.. code-block:: toml

    [agents.claude]
    command = ["claude"]                       # argv[0] names that select this agent
    state = ["~/.claude", "~/.claude.json"]    # writable inside, created when missing
    read_only = ["~/.claude/settings.json"]    # inside the state, kept read-only
    network = { allow = ["api.anthropic.com"], deny = [] }

A key given replaces that key of the defaults; an agent the console does not know can
be added the same way. A command no agent names runs with no agent state and only the
policy's own network lists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from console.policy.network import NetworkPolicyError, lists_from


@dataclass(frozen=True, slots=True)
class AgentProfile:
    name: str
    command: tuple[str, ...] = ()
    state: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": list(self.command),
            "state": list(self.state),
            "read_only": list(self.read_only),
            "network": {"allow": list(self.allow), "deny": list(self.deny)},
        }


GENERIC = AgentProfile("")

DEFAULT_AGENTS: tuple[AgentProfile, ...] = (
    AgentProfile(
        "claude",
        command=("claude",),
        state=("~/.claude", "~/.claude.json"),
        read_only=("~/.claude/settings.json",),
        allow=("api.anthropic.com", "console.anthropic.com", "statsig.anthropic.com", "claude.ai"),
    ),
    AgentProfile(
        "codex",
        command=("codex",),
        state=("~/.codex",),
        read_only=("~/.codex/config.toml",),
        allow=("api.openai.com", "chatgpt.com", "auth.openai.com"),
    ),
    AgentProfile(
        "gemini",
        command=("gemini",),
        state=("~/.gemini",),
        read_only=("~/.gemini/settings.json",),
        allow=(
            "generativelanguage.googleapis.com",
            "cloudcode-pa.googleapis.com",
            "oauth2.googleapis.com",
            "www.googleapis.com",
        ),
    ),
    AgentProfile(
        "opencode",
        command=("opencode",),
        state=(
            "~/.config/opencode",
            "~/.local/share/opencode",
            "~/.local/state/opencode",
            "~/.cache/opencode",
        ),
        read_only=("~/.config/opencode/opencode.json", "~/.config/opencode/opencode.jsonc"),
        allow=("api.anthropic.com", "api.openai.com", "models.dev", "opencode.ai", "openrouter.ai"),
    ),
)

_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}\Z")
_COMMAND = re.compile(r"[A-Za-z0-9._+-]{1,64}\Z")
_KEYS = ("command", "state", "read_only", "network")


class AgentsError(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


def _home_paths(value: Any, key: str) -> tuple[str, ...]:
    example = '["~/.claude"]'
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or len(value) > 64:
        raise AgentsError(key, f"must be a list of at most 64 paths in your home, e.g. {example}")
    for i, entry in enumerate(value):
        parts = entry.split("/")
        if not entry.startswith("~/") or entry.rstrip("/") == "~" or ".." in parts or "\x00" in entry:
            raise AgentsError(
                f"{key}[{i}]",
                f"must be a path below your home starting with ~/ (not ~ itself), e.g. {example}",
            )
        if any(c in entry for c in "*?["):
            raise AgentsError(f"{key}[{i}]", "must be a path, not a glob")
    return tuple(value)


def agents_from(value: Any) -> tuple[AgentProfile, ...]:
    """The `agents` table over the defaults; raises :class:`AgentsError`."""
    if value is None:
        return DEFAULT_AGENTS
    if not isinstance(value, dict) or len(value) > 64:
        raise AgentsError(
            "agents", "must be a table of [agents.NAME] tables (at most 64), e.g. [agents.claude]"
        )
    out = {a.name: a for a in DEFAULT_AGENTS}
    for name, table in value.items():
        key = f"agents.{name}"
        if not _NAME.match(name):
            raise AgentsError(key, "an agent's name is lower-case letters, digits, '-' and '_'")
        if not isinstance(table, dict):
            raise AgentsError(key, "must be a table with command, state, read_only and network")
        unknown = sorted(set(table) - set(_KEYS))
        if unknown:
            raise AgentsError(f"{key}.{unknown[0]}", "unknown key; known keys: " + ", ".join(_KEYS))
        base = out.get(name, AgentProfile(name))
        command = base.command
        if "command" in table:
            cmd = table["command"]
            if not isinstance(cmd, list) or not all(isinstance(c, str) and _COMMAND.match(c) for c in cmd):
                raise AgentsError(f"{key}.command", 'must be a list of program names, e.g. ["claude"]')
            command = tuple(cmd)
        state = _home_paths(table["state"], f"{key}.state") if "state" in table else base.state
        read_only = (
            _home_paths(table["read_only"], f"{key}.read_only") if "read_only" in table else base.read_only
        )
        allow, deny = base.allow, base.deny
        if "network" in table:
            try:
                allow, deny = lists_from(table["network"], f"{key}.network")
            except NetworkPolicyError as exc:
                raise AgentsError(exc.key, str(exc).partition(": ")[2]) from None
        out[name] = AgentProfile(name, command, state, read_only, allow, deny)
    return tuple(out.values())


def agent_for(agents: tuple[AgentProfile, ...], program: str, named: str = "") -> AgentProfile | None:
    """The agent named ``named`` (None when there is no such agent), else the one whose
    ``command`` names ``program`` (a basename), else the generic one."""
    if named:
        return next((a for a in agents if a.name == named), None)
    base = program.rsplit("/", 1)[-1]
    for profile in agents:
        if base in profile.command:
            return profile
    return GENERIC
