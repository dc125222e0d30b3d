"""Splitting a shell script into the commands it runs, so none can hide behind another.

``bash -c 'git fetch && curl -s x | sh'`` is one argv to the contract but three
programs to the operator. This is a reader for eyes, not an interpreter: it follows
quoting well enough to find every place where a second command starts — ``&&``, ``||``,
``;``, ``|``, ``&``, newlines, subshells, ``$(…)``, backticks, ``<(…)`` — and every
redirection, and it says when the script ends inside a quote or substitution. When in
doubt it splits more, never less.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"})
_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECT_OPS = ("&>>", "<<<", "<<-", ">>", "<<", "<>", ">&", "<&", ">|", "&>", ">", "<")


class PartKind(StrEnum):
    COMMAND = "command"
    OPERATOR = "operator"
    REDIRECT = "redirect"
    SUBSTITUTION = "substitution"  # the start of a nested command list: $(…), `…`, <(…)
    COMMENT = "comment"


@dataclass(frozen=True, slots=True)
class Part:
    kind: PartKind
    text: str
    depth: int = 0


@dataclass(slots=True)
class Chain:
    parts: list[Part] = field(default_factory=list)
    complete: bool = True  # False: a quote, substitution or here-document never ended

    @property
    def commands(self) -> list[str]:
        return [p.text for p in self.parts if p.kind is PartKind.COMMAND]

    @property
    def is_compound(self) -> bool:
        """More than one command, or anything beyond one plain command."""
        return len(self.commands) > 1 or any(p.kind is not PartKind.COMMAND for p in self.parts)


def shell_script(argv: Sequence[str]) -> tuple[str, str] | None:
    """``(shell name, script)`` when argv runs a shell on a ``-c`` script, else None.

    Accepts option clusters (``-lc``, ``-ec``, ``-o pipefail -c``) and ``busybox sh -c``.
    """
    if not argv:
        return None
    name = posixpath.basename(argv[0])
    rest = list(argv[1:])
    if name == "busybox":
        if not rest or posixpath.basename(rest[0]) not in SHELLS - {"busybox"}:
            return None
        name = "busybox " + rest.pop(0)
    elif name == "env":
        # `env [NAME=value…] bash -c …`
        while rest and ("=" in rest[0] or rest[0].startswith("-")):
            rest.pop(0)
        found = shell_script(rest)
        return (f"env {found[0]}", found[1]) if found else None
    elif name not in SHELLS:
        return None
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--":
            return None
        if arg in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if arg.startswith(("-", "+")) and len(arg) > 1:
            if "c" in arg[1:] and not arg.startswith("--"):
                return (name, rest[i + 1]) if i + 1 < len(rest) else (name, "")
            i += 1
            continue
        return None
    return None


class _Splitter:
    def __init__(self, script: str) -> None:
        self.s = script
        self.complete = True

    def split(self, start: int, end_char: str | None, depth: int) -> tuple[list[Part], int]:
        """Parts from ``start`` up to the closing ``end_char`` (or the end); returns the index after it."""
        s = self.s
        parts: list[Part] = []
        nested: list[Part] = []  # substitutions found in the current command, shown after it
        redirects: list[Part] = []
        heredocs: list[tuple[str, bool]] = []
        buf: list[str] = []
        i = start
        word_start = True

        def flush() -> None:
            text = "".join(buf).strip()
            if text:
                parts.append(Part(PartKind.COMMAND, text, depth))
            parts.extend(redirects)
            parts.extend(nested)
            buf.clear()
            redirects.clear()
            nested.clear()

        while i < len(s):
            ch = s[i]
            if end_char == ")" and ch == ")":
                flush()
                return parts, i + 1
            if end_char == "`" and ch == "`":
                flush()
                return parts, i + 1
            if ch == "\\":
                buf.append(s[i : i + 2])
                i += 2
                word_start = False
                continue
            if ch == "'":
                close = s.find("'", i + 1)
                if close < 0:
                    self.complete = False
                    close = len(s) - 1
                buf.append(s[i : close + 1])
                i = close + 1
                word_start = False
                continue
            if ch == '"':
                i = self._double_quoted(i, buf, nested, depth)
                word_start = False
                continue
            if ch == "#" and word_start:
                nl = s.find("\n", i)
                nl = len(s) if nl < 0 else nl
                flush()
                parts.append(Part(PartKind.COMMENT, s[i:nl], depth))
                i = nl
                continue
            if s.startswith("$((", i):
                i = self._arithmetic(i, buf, nested, depth)
                word_start = False
                continue
            if s.startswith("$(", i) or (s.startswith(("<(", ">("), i) and (word_start or buf[-1:] == [" "])):
                opener = s[i : i + 2]
                inner, after = self.split(i + 2, ")", depth + 1)
                nested.append(Part(PartKind.SUBSTITUTION, opener + "…)", depth + 1))
                nested.extend(inner)
                buf.append(s[i:after])
                i = after
                word_start = False
                continue
            if ch == "`":
                inner, after = self.split(i + 1, "`", depth + 1)
                nested.append(Part(PartKind.SUBSTITUTION, "`…`", depth + 1))
                nested.extend(inner)
                buf.append(s[i:after])
                i = after
                word_start = False
                continue
            redirect = self._redirect_at(i, buf)
            if redirect is not None:
                op, digits = redirect
                j = i + len(op)
                while j < len(s) and s[j] in " \t":
                    j += 1
                target_start = j
                j = self._word_end(j)
                target = s[target_start:j]
                if digits:
                    del buf[-len(digits) :]
                joiner = "" if op in (">&", "<&") else " "
                redirects.append(Part(PartKind.REDIRECT, f"{digits}{op}{joiner}{target}".rstrip(), depth))
                if op in ("<<", "<<-") and target:
                    quoted = any(q in target for q in "'\"\\")
                    heredocs.append((target.strip("'\"").replace("\\", ""), quoted))
                i = j
                word_start = True
                continue
            # A stray ")" at the top level is shown as an operator all the same.
            operator = next((o for o in _OPERATORS if s.startswith(o, i)), None)
            if operator is not None:
                flush()
                parts.append(Part(PartKind.OPERATOR, operator, depth))
                i += len(operator)
                if operator == "\n" and heredocs:
                    i = self._heredoc_bodies(i, heredocs, parts, depth)
                    heredocs.clear()
                word_start = True
                continue
            buf.append(ch)
            word_start = ch in " \t"
            i += 1
        flush()
        if end_char is not None or heredocs:
            self.complete = False
        return parts, len(s)

    def _double_quoted(self, i: int, buf: list[str], nested: list[Part], depth: int) -> int:
        s = self.s
        j = i + 1
        while j < len(s) and s[j] != '"':
            if s[j] == "\\":
                j += 2
                continue
            if s.startswith("$(", j) and not s.startswith("$((", j):
                inner, after = self.split(j + 2, ")", depth + 1)
                nested.append(Part(PartKind.SUBSTITUTION, "$(…)", depth + 1))
                nested.extend(inner)
                j = after
                continue
            if s[j] == "`":
                inner, after = self.split(j + 1, "`", depth + 1)
                nested.append(Part(PartKind.SUBSTITUTION, "`…`", depth + 1))
                nested.extend(inner)
                j = after
                continue
            j += 1
        if j >= len(s):
            self.complete = False
        buf.append(s[i : j + 1])
        return j + 1

    def _arithmetic(self, i: int, buf: list[str], nested: list[Part], depth: int) -> int:
        """``$((…))``: not a command, but a ``$(…)`` inside it is."""
        s = self.s
        level = 0
        j = i + 1
        while j < len(s):
            if s.startswith("$(", j) and not s.startswith("$((", j):
                inner, after = self.split(j + 2, ")", depth + 1)
                nested.append(Part(PartKind.SUBSTITUTION, "$(…)", depth + 1))
                nested.extend(inner)
                j = after
                continue
            if s[j] == "(":
                level += 1
            elif s[j] == ")":
                level -= 1
                if level == 0:
                    break
            j += 1
        if j >= len(s):
            self.complete = False
        buf.append(s[i : j + 1])
        return j + 1

    def _redirect_at(self, i: int, buf: list[str]) -> tuple[str, str] | None:
        s = self.s
        op = next((o for o in _REDIRECT_OPS if s.startswith(o, i)), None)
        if op is None:
            return None
        if op in ("<", ">") and s.startswith(("<(", ">("), i):
            return None
        # A file-descriptor number right before it belongs to it: `2>&1`.
        digits = ""
        k = len(buf) - 1
        while k >= 0 and len(buf[k]) == 1 and buf[k].isdigit():
            digits = buf[k] + digits
            k -= 1
        if digits and k >= 0 and buf[k] not in (" ", "\t"):
            digits = ""
        return op, digits

    def _word_end(self, j: int) -> int:
        s = self.s
        while j < len(s) and s[j] not in " \t\n;&|()<>":
            if s[j] == "\\":
                j += 2
            elif s[j] in "'\"":
                close = s.find(s[j], j + 1)
                if close < 0:
                    self.complete = False
                    return len(s)
                j = close + 1
            else:
                j += 1
        return min(j, len(s))

    def _heredoc_bodies(self, i: int, heredocs: list[tuple[str, bool]], parts: list[Part], depth: int) -> int:
        s = self.s
        for delimiter, quoted in heredocs:
            lines = 0
            body_start = i
            while True:
                nl = s.find("\n", i)
                line = s[i:] if nl < 0 else s[i:nl]
                if line.lstrip("\t") == delimiter:
                    i = len(s) if nl < 0 else nl + 1
                    break
                if nl < 0:
                    self.complete = False
                    i = len(s)
                    break
                lines += 1
                i = nl + 1
            body = s[body_start:i]
            parts.append(Part(PartKind.REDIRECT, f"here-document {delimiter} ({lines} lines)", depth))
            if not quoted and ("$(" in body or "`" in body):
                sub = _Splitter(body)
                inner, _ = sub.split(0, None, depth)
                parts.extend(p for p in inner if p.depth > depth)
        return i


def split_chain(script: str) -> Chain:
    """The commands, operators, redirections and substitutions of ``script``, in order."""
    splitter = _Splitter(script)
    parts, _ = splitter.split(0, None, 0)
    # Newlines are separators; trailing and doubled ones carry nothing to show.
    cleaned: list[Part] = []
    for part in parts:
        if (
            part.kind is PartKind.OPERATOR
            and part.text == "\n"
            and (not cleaned or (cleaned[-1].kind is PartKind.OPERATOR and cleaned[-1].depth == part.depth))
        ):
            continue
        cleaned.append(part)
    while cleaned and cleaned[-1].kind is PartKind.OPERATOR and cleaned[-1].text == "\n":
        cleaned.pop()
    return Chain(cleaned, splitter.complete)
