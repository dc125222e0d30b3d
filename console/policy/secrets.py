"""The secret set: what no agent may read, in one definition.

Two places enforce it: the sandbox hides these paths from every command it runs (on top
of the home directories it covers anyway, so a policy ``readable`` that shows part of a
home never shows a secret in it; console/sandbox/plan.py), and the Claude Code hook
refuses a Read, Glob, Grep or LS that reaches one (console/adapters/claude_code/reads.py).
The console's own state and runtime directories belong to the set too; they are the
caller's to add (their place depends on ``--state-dir``).

Three kinds of entry:

- :data:`HOME` paths, relative to a home directory (every home the hook knows of, the
  daemon's ``$HOME`` for the sandbox): keys, cloud and registry credentials, agents'
  login tokens, shell history;
- :data:`SYSTEM` paths: the host's password hashes and host keys;
- :data:`NAMES`: file names that are secrets wherever they lie (private keys of every
  kind, ``.env`` files). The hook refuses them anywhere; in a workspace the sandbox
  leaves them readable (the project's own commands need its ``.env``) and keeps them
  read-only as protected paths (console/policy/protected_set.py takes them from here).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Secret:
    pattern: str  # a path (HOME: relative to the home, SYSTEM: absolute) or a name glob (NAMES)
    why: str


HOME: tuple[Secret, ...] = (
    Secret(".ssh", "ssh keys of every type, and which hosts they open"),
    Secret(".gnupg", "GPG private keys"),
    Secret(".aws", "AWS credentials and SSO tokens"),
    Secret(".azure", "Azure CLI tokens"),
    Secret(".config/gcloud", "Google Cloud credentials"),
    Secret(".oci", "Oracle Cloud keys"),
    Secret(".kube", "Kubernetes cluster credentials"),
    Secret(".docker/config.json", "container registry logins"),
    Secret(".npmrc", "npm registry tokens"),
    Secret(".yarnrc.yml", "yarn registry tokens (npmAuthToken)"),
    Secret(".pypirc", "PyPI upload tokens"),
    Secret(".gem/credentials", "RubyGems API keys"),
    Secret(".cargo/credentials", "crates.io tokens"),
    Secret(".cargo/credentials.toml", "crates.io tokens"),
    Secret(".m2/settings.xml", "Maven repository passwords"),
    Secret(".gradle/gradle.properties", "Gradle repository passwords and signing keys"),
    Secret(".terraform.d/credentials.tfrc.json", "Terraform Cloud tokens"),
    Secret(".vault-token", "a HashiCorp Vault token"),
    Secret(".netrc", "passwords for hosts (curl, git, pip)"),
    Secret(".git-credentials", "git's stored passwords and tokens"),
    Secret(".config/git/credentials", "git's stored passwords and tokens"),
    Secret(".config/gh/hosts.yml", "the GitHub CLI's token"),
    Secret(".config/hub", "the hub CLI's token"),
    Secret(".password-store", "pass's password store"),
    Secret(".local/share/keyrings", "the desktop keyring"),
    Secret(".claude/.credentials.json", "Claude Code's login token"),
    Secret(".codex/auth.json", "Codex's login token"),
    Secret(".gemini/oauth_creds.json", "Gemini CLI's login token"),
    Secret(".local/share/opencode/auth.json", "opencode's provider keys"),
    Secret(".bash_history", "shell history: passwords typed on command lines"),
    Secret(".zsh_history", "shell history: passwords typed on command lines"),
)

SYSTEM: tuple[Secret, ...] = (
    Secret("/etc/shadow", "the host's password hashes"),
    Secret("/etc/shadow-", "a backup of the host's password hashes"),
    Secret("/etc/gshadow", "group password hashes"),
    Secret("/etc/gshadow-", "a backup of group password hashes"),
    Secret("/etc/ssh/ssh_host_*_key", "the host's ssh private keys"),
)

# ssh-keygen's default names, for every key type it makes.
_SSH_KEY_TYPES = ("rsa", "dsa", "ecdsa", "ecdsa_sk", "ed25519", "ed25519_sk", "xmss")

NAMES: tuple[Secret, ...] = (
    Secret(".env", "secrets"),
    Secret(".env.*", "secrets"),
    Secret("*.pem", "keys and certificates"),
    Secret("*.key", "private keys"),
    Secret("*.p12", "key stores"),
    Secret("*.pfx", "key stores"),
    *(Secret(f"id_{kind}*", "ssh keys") for kind in _SSH_KEY_TYPES),
)


def hidden_patterns() -> tuple[str, ...]:
    """The set as the sandbox's ``hidden`` globs (``~`` is the home): HOME and SYSTEM."""
    return (*(f"~/{s.pattern}" for s in HOME), *(s.pattern for s in SYSTEM))


def within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _glob_match(path: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(path, pattern)


def secret_at(path: str, homes: tuple[str, ...]) -> Secret | None:
    """The entry of the set that ``path`` (absolute, normalised) is, or lies inside."""
    for home in homes:
        if not within(path, home) or path == home:
            continue
        rel = path[len(home.rstrip("/")) + 1 :]
        for s in HOME:
            if rel == s.pattern or rel.startswith(s.pattern + "/"):
                return s
    for s in SYSTEM:
        if _glob_match(path, s.pattern) or any(within(path, p) for p in _literal(s.pattern)):
            return s
    name = posixpath.basename(path)
    for s in NAMES:
        if _glob_match(name, s.pattern):
            return s
    return None


def _literal(pattern: str) -> tuple[str, ...]:
    return () if re.search(r"[*?\[]", pattern) else (pattern,)


def secrets_under(root: str, homes: tuple[str, ...]) -> list[str]:
    """The HOME and SYSTEM entries that lie under ``root`` (absolute, normalised), as
    absolute paths or globs: what a search from ``root`` would reach."""
    found: list[str] = []
    for home in homes:
        for s in HOME:
            target = posixpath.join(home, s.pattern)
            if within(target, root):
                found.append(target)
    found += [s.pattern for s in SYSTEM if within(s.pattern.split("*", 1)[0].rstrip("/") or "/", root)]
    return found
