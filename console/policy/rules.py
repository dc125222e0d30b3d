"""Rules: an approval broader than one fingerprint, where it is safe.

A grant allows one fingerprint. In ``approval = "untrusted"`` that means a question for
every ``npm test -- --watch`` and ``git status -s`` the agent runs, so operators asked
for what Claude Code calls ``Bash(npm test:*)``: a command prefix. A rule is that, held
to what cannot widen into something else:

- it names the words a command starts with (``npm test``), matched word by word, never as
  a substring: ``npm testx`` is not ``npm test``;
- it covers only commands whose words are plain (a process's argv, or a ``sh -c`` script
  of plain words only: no quotes, operators, substitutions, redirections or globs), so
  ``npm test; curl … | sh`` is not "npm test followed by something";
- it covers only requests within the sandbox ceiling: never an escalation (network, a
  write outside, a protected path, a new workspace, an environment override,
  ``unrestricted``), never content the fingerprint does not bind;
- its first word is a program, not an interpreter or a launcher (``bash``, ``python``,
  ``env``, ``xargs``…) that would run whatever follows;
- it is scoped to one workspace and one agent identity, expires and is revoked like a
  grant (it is stored as one: scope ``rule``, its fingerprint column the rule's key).
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from console.contract.operation import Operation
from console.policy.grants import Effect, Grant, GrantScope

RULE_PREFIX = "rule:"
MAX_WORDS = 16
# A word a rule can see through: nothing the shell would expand, split, glob or redirect.
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"})
# First words that run what follows them (or a string) rather than being the program.
LAUNCHERS = _SHELLS | frozenset(
    {
        "python",
        "python3",
        "perl",
        "ruby",
        "node",
        "php",
        "lua",
        "awk",
        "gawk",
        "env",
        "xargs",
        "sudo",
        "doas",
        "nice",
        "nohup",
        "timeout",
        "exec",
        "command",
        "builtin",
        "eval",
        "source",
        "time",
        "strace",
        "watch",
        "ssh",
        "docker",
        "podman",
        "kubectl",
        "npx",
        "pnpx",
        "bunx",
        "uvx",
        "pipx",
    }
)


@dataclass(frozen=True, slots=True)
class Rule:
    """The words a command starts with, in one workspace."""

    words: tuple[str, ...]
    workspace_root: str

    def key(self) -> str:
        """What the grants table keys it by (its fingerprint column)."""
        return RULE_PREFIX + json.dumps(
            {"words": list(self.words), "workspace_root": self.workspace_root},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
        )

    def describe(self) -> str:
        return f"{' '.join(self.words)} … in {self.workspace_root}"


def rule_of(key: str) -> Rule | None:
    """The rule a grant's key names, or None for a grant of one fingerprint."""
    if not key.startswith(RULE_PREFIX):
        return None
    try:
        data = json.loads(key[len(RULE_PREFIX) :])
        words = tuple(str(w) for w in data["words"])
        root = str(data["workspace_root"])
    except (ValueError, KeyError, TypeError):
        return None
    return Rule(words, root) if words and root.startswith("/") else None


def command_words(op: Operation) -> tuple[str, ...] | None:
    """The words a rule matches: the program's name and its arguments, for a process; the
    words of a ``sh -c`` script made of plain words only; None for anything else."""
    return argv_words(op.argv)


def argv_words(argv: Sequence[str]) -> tuple[str, ...] | None:
    """:func:`command_words` of an argv (as a client sees a request)."""
    if not argv:
        return None
    name = posixpath.basename(argv[0])
    if name in _SHELLS and len(argv) == 3 and argv[1] == "-c":
        script = argv[2].strip()
        words = tuple(script.split(" "))
        if not script or any(not _PLAIN_WORD.fullmatch(w) for w in words):
            return None
        return words
    if name in _SHELLS:
        return None
    return (name, *argv[1:])


def suggested(argv: Sequence[str]) -> str:
    """The words a console offers for a rule: the program and its subcommand (``npm test``,
    ``git status``), or the program alone when an option comes first (its value could be
    taken for a subcommand); "" when no rule can cover the command."""
    words = argv_words(argv)
    if not words or words[0] in LAUNCHERS:
        return ""
    if len(words) > 1 and not words[1].startswith("-"):
        return f"{words[0]} {words[1]}"
    return words[0]


def refusal(op: Operation, escalations: Sequence[object], words: Sequence[str]) -> str | None:
    """Why a rule of ``words`` cannot be made from (or cover) ``op``; None when it can."""
    if not words or len(words) > MAX_WORDS:
        return f"a rule names 1 to {MAX_WORDS} words a command starts with, e.g. npm test"
    if escalations:
        return (
            "a rule covers only requests within the sandbox ceiling; this one asks for more: approve it once"
        )
    if op.unbound:
        return "this request runs content its fingerprint does not bind; approve it once"
    found = command_words(op)
    if found is None:
        return (
            "a rule covers only plain commands (no quotes, operators, substitutions or redirections); "
            "approve this one once"
        )
    if tuple(found[: len(words)]) != tuple(words):
        return f"the command starts with {' '.join(found[: len(words)])!r}, not {' '.join(words)!r}"
    if words[0] in LAUNCHERS:
        return f"{words[0]} runs whatever follows it: a rule must name the program itself"
    return None


def covers(rule: Rule, op: Operation) -> bool:
    """Whether ``rule`` covers ``op``'s words in its workspace (the ceiling is the caller's)."""
    if op.workspace_root != rule.workspace_root or op.unbound:
        return False
    found = command_words(op)
    return found is not None and found[: len(rule.words)] == rule.words


def matching_rule(grants: Iterable[Grant], op: Operation, now: float) -> Grant | None:
    """The active allow rule of ``op``'s agent (``op.session_id``) that covers ``op``."""
    for g in grants:
        if g.scope is not GrantScope.RULE or g.effect is not Effect.ALLOW or g.ended(now):
            continue
        if not op.session_id or g.session_id != op.session_id:
            continue
        rule = rule_of(g.fingerprint)
        if rule is not None and covers(rule, op):
            return g
    return None
