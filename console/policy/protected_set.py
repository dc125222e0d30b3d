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

Deliberately not here: ``.git/objects`` (but for its ``info/alternates``), ``.git/refs``,
``.git/index``, ``HEAD`` and the rest of git's working state (a sandboxed ``git commit``
must work; none of them makes git run anything), and the project's own build files
(``package.json``, ``Makefile``, ``pyproject.toml``): running them is what the operator
does knowingly when they build the project.

Patterns follow console/policy/patterns.py: without ``/`` a name at any depth, with
``/`` (a leading one included) anchored at the workspace root, ``**/`` any number of
directories (so the git entries cover nested repositories too). Three rules cannot be
patterns and are applied by :class:`~console.policy.patterns.ProtectedPaths`, the watcher
and the sandbox themselves:

- a ``.git`` that is a file (a *gitfile*: ``gitdir: <path>``, as in a linked worktree or
  a submodule) is protected wherever it is: rewriting it points git at a directory with
  its own config and hooks;
- the directories that the repository's git config names as ``core.hooksPath`` and the
  files it includes (``include.path``, ``includeIf.*.path``), when they lie in the
  workspace, are protected for that workspace (read when a command is prepared);
- a directory of any name that *is* a git repository by its shape (``HEAD``,
  ``objects/`` and ``refs/``, or a ``config`` with ``core.*``/``include.*``): git takes
  it for a bare repository when the operator runs a command in or below it, so its git
  files are protected like ``.git``'s (console/policy/repository.py).
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
    "objects/info/alternates": "makes git read objects from another directory: what it checks out "
    "and runs can come from outside the repository",
}

# Files that tools the operator runs (CI, editors, package managers, linters, test
# runners, the next agent) read as code or as instructions. Kept apart so that each
# group reads as one reason.
TOOL_ENTRIES: tuple[ProtectedEntry, ...] = (
    # CI, beyond the workflows themselves
    ProtectedEntry(
        ".github/actions/**/action.yml", "actions the workflows run (with repository secrets)", "ci"
    ),
    ProtectedEntry(
        ".github/actions/**/action.yaml", "actions the workflows run (with repository secrets)", "ci"
    ),
    # editors and IDEs
    ProtectedEntry(
        "*.code-workspace", "a VS Code workspace: tasks, launch configurations and settings", "editor"
    ),
    ProtectedEntry(
        ".devcontainer/**",
        "dev container definitions: initializeCommand runs on the host when the container is built",
        "editor",
    ),
    ProtectedEntry(
        ".devcontainer.json",
        "a dev container definition: initializeCommand runs on the host",
        "editor",
    ),
    ProtectedEntry(
        ".idea/**", "JetBrains project: run configurations, external tools, startup tasks", "editor"
    ),
    # package managers and toolchains
    ProtectedEntry(".yarnrc.yml", "yarn's settings: yarnPath and plugins are JavaScript yarn runs", "tools"),
    ProtectedEntry(".yarnrc", "yarn 1's settings: yarn-path names the program yarn runs", "tools"),
    ProtectedEntry(
        ".npmrc", "npm's settings: script-shell, node-options, git name programs npm runs", "tools"
    ),
    ProtectedEntry(
        "**/.cargo/config.toml", "cargo's settings: rustc-wrapper, runners and aliases run programs", "tools"
    ),
    ProtectedEntry("**/.cargo/config", "cargo's settings (old name): the same powers", "tools"),
    ProtectedEntry(
        "rust-toolchain.toml", "rustup runs the toolchain it names (a path can be any program)", "tools"
    ),
    ProtectedEntry(
        "rust-toolchain", "rustup runs the toolchain it names (a path can be any program)", "tools"
    ),
    ProtectedEntry("mise.toml", "mise: tasks, hooks and env scripts run on cd and on demand", "tools"),
    ProtectedEntry(".mise.toml", "mise: tasks, hooks and env scripts run on cd and on demand", "tools"),
    ProtectedEntry(
        ".tool-versions", "asdf and mise install and run the tools (and plugins) it names", "tools"
    ),
    # linters and test runners
    ProtectedEntry("eslint.config.*", "ESLint's config is JavaScript that eslint runs", "tools"),
    ProtectedEntry(".eslintrc*", "ESLint's legacy config: JavaScript, or plugins it loads", "tools"),
    ProtectedEntry(".pylintrc", "pylint's init-hook and load-plugins run Python", "tools"),
    ProtectedEntry("/conftest.py", "pytest imports it on every run in the workspace", "tools"),
    # the next agent
    ProtectedEntry(
        ".aider.conf.yml", "aider's settings: lint-cmd, test-cmd and other commands it runs", "agent"
    ),
    ProtectedEntry("CLAUDE.md", "instructions Claude Code reads as its operator's", "instructions"),
    ProtectedEntry("CLAUDE.local.md", "instructions Claude Code reads as its operator's", "instructions"),
    ProtectedEntry(
        "AGENTS.md", "instructions Codex and other agents read as their operator's", "instructions"
    ),
    ProtectedEntry("GEMINI.md", "instructions Gemini CLI reads as its operator's", "instructions"),
)

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
    *TOOL_ENTRIES,
)

GITFILE = ProtectedEntry(
    ".git",
    "a gitfile (`gitdir: …`) points git at another git dir with its own config and hooks",
    "git",
)
GIT_CONFIG_TARGETS_WHY = "named by the repository's git config (core.hooksPath, include.path)"
REPOSITORY = ProtectedEntry(
    "(a git repository by shape)",
    "a directory with HEAD, objects/ and refs/, or a config with core.* or include.*, is a repository "
    "to git wherever it is: its config, hooks, commondir, config.worktree, info/attributes and "
    "objects/info/alternates",
    "git",
)

DEFAULT_PROTECTED: tuple[str, ...] = tuple(e.pattern for e in ENTRIES)

_WHY = {e.pattern: e.why for e in ENTRIES}


def why(pattern: str) -> str:
    """Why a default pattern is protected ("" for a pattern the operator added)."""
    if pattern == GITFILE.pattern:
        return GITFILE.why
    if pattern == REPOSITORY.pattern:
        return REPOSITORY.why
    return _WHY.get(pattern, "")
