"""The default protected set: every path the console keeps read-only, and why.

One list, used by everything that decides about protected paths: the policy (a write
there is an escalation, `protected_metadata`), the sandbox (bound read-only over the
writable workspace), the watcher (a change there is a tripwire) and the Claude Code hook
(a Write there goes to the operator). ``docs/policy.md`` is tested against it.

What belongs here: files whose content makes *something else* run code or widen what
an agent may do — git (config, hooks, attributes, submodules, worktrees), agent and
editor settings, CI definitions, shell-entry hooks — and secrets. The test for each
entry is "a sandboxed, auto-allowed write here lets the next plain command of the
operator, their editor, CI or the agent's own supervisor run the agent's code".

Deliberately not here: ``.git/objects``, ``.git/refs``, ``.git/index``, ``HEAD`` and the
rest of git's working state (a sandboxed ``git commit`` must work; none of them makes
git run anything), and instruction files such as ``CLAUDE.md``/``AGENTS.md`` (they
are prompt text an agent already follows and edits, not permissions; the settings
that do change permissions live in ``.claude/`` and are protected).

Patterns follow console/policy/patterns.py: without ``/`` a name at any depth, with
``/`` anchored at the workspace root, ``**/`` any number of directories (so the git
entries cover nested repositories too). Two rules cannot be patterns and are applied by
:class:`~console.policy.patterns.ProtectedPaths` and the sandbox themselves:

- a ``.git`` that is a file (a *gitfile*: ``gitdir: <path>``, as in a linked worktree or
  a submodule) is protected wherever it is: rewriting it points git at a directory with
  its own config and hooks;
- the directories that the repository's git config names as ``core.hooksPath`` and the
  files it includes (``include.path``, ``includeIf.*.path``), when they lie in the
  workspace, are protected for that workspace (read when a command is prepared).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProtectedEntry:
    pattern: str
    why: str
    group: str


_GIT_DIR_WHY = {
    "config": "core.fsmonitor, core.hooksPath, core.sshCommand, aliases and filter drivers: "
    "the next git command runs what it names",
    "config.worktree": "per-worktree config (extensions.worktreeConfig): the same powers as config",
    "commondir": "redirects where git reads config and hooks from",
    "hooks/**": "hooks run on commit, merge, checkout, push",
    "info/attributes": "selects filter, diff and merge drivers for every path",
}

ENTRIES: tuple[ProtectedEntry, ...] = (
    # git, in every repository of the workspace (the root one and nested ones)
    *(ProtectedEntry(f".git/{name}", why, "git") for name, why in _GIT_DIR_WHY.items()),
    *(
        ProtectedEntry(f"**/.git/{name}", f"the same in a nested repository: {why}", "git")
        for name, why in _GIT_DIR_WHY.items()
    ),
    *(
        ProtectedEntry(f"**/.git/modules/**/{name}", f"a submodule's git dir: {why}", "git")
        for name, why in _GIT_DIR_WHY.items()
    ),
    ProtectedEntry("**/.git/worktrees/*/config", "a linked worktree's config", "git"),
    ProtectedEntry("**/.git/worktrees/*/config.worktree", "a linked worktree's own config", "git"),
    ProtectedEntry(
        "**/.git/worktrees/*/commondir", "a linked worktree's pointer to the shared git dir", "git"
    ),
    ProtectedEntry("**/.git/worktrees/*/gitdir", "a linked worktree's pointer back to its checkout", "git"),
    ProtectedEntry("**/.git/worktrees/*/hooks/**", "hooks of a linked worktree", "git"),
    ProtectedEntry(".gitattributes", "selects filter, diff and merge drivers (run by git)", "git"),
    ProtectedEntry(".gitmodules", "submodule URLs and `update = !command`", "git"),
    # agents and editors
    ProtectedEntry(
        "**/.claude/**",
        "Claude Code settings: hooks, permissions, disableAllHooks (can switch this console off)",
        "agent",
    ),
    ProtectedEntry(".mcp.json", "project MCP servers: commands an agent starts", "agent"),
    ProtectedEntry("**/.codex/**", "Codex settings and rules", "agent"),
    ProtectedEntry("**/.gemini/**", "Gemini CLI settings, tool permissions and MCP servers", "agent"),
    ProtectedEntry("**/.cursor/**", "Cursor settings, rules and MCP servers", "agent"),
    ProtectedEntry("**/.vscode/tasks.json", "VS Code tasks, some run when the folder opens", "editor"),
    ProtectedEntry(
        "**/.vscode/settings.json", "VS Code settings: interpreters, terminal profiles, tools", "editor"
    ),
    ProtectedEntry("**/.vscode/launch.json", "programs VS Code starts when debugging", "editor"),
    # hooks that run when the operator does something ordinary
    ProtectedEntry(".husky/**", "husky's git hooks (core.hooksPath = .husky/_)", "hooks"),
    ProtectedEntry(".pre-commit-config.yaml", "commands pre-commit runs on every commit", "hooks"),
    ProtectedEntry(".envrc", "direnv runs it on `cd` into the directory", "hooks"),
    # CI: runs with the repository's secrets
    ProtectedEntry(".github/workflows/**", "GitHub Actions workflows (run with repository secrets)", "ci"),
    ProtectedEntry(".gitlab-ci.yml", "the GitLab CI pipeline (runs with project secrets)", "ci"),
    # secrets
    ProtectedEntry(".env", "secrets", "secrets"),
    ProtectedEntry(".env.*", "secrets", "secrets"),
    ProtectedEntry("**/*.pem", "keys and certificates", "secrets"),
    ProtectedEntry("**/id_rsa*", "ssh keys", "secrets"),
    ProtectedEntry("**/id_ed25519*", "ssh keys", "secrets"),
)

GITFILE = ProtectedEntry(
    ".git",
    "a gitfile (`gitdir: …`) points git at another git dir with its own config and hooks",
    "git",
)
GIT_CONFIG_TARGETS_WHY = "named by the repository's git config (core.hooksPath, include.path)"

DEFAULT_PROTECTED: tuple[str, ...] = tuple(e.pattern for e in ENTRIES)

_WHY = {e.pattern: e.why for e in ENTRIES}


def why(pattern: str) -> str:
    """Why a default pattern is protected ("" for a pattern the operator added)."""
    if pattern == GITFILE.pattern:
        return GITFILE.why
    return _WHY.get(pattern, "")
