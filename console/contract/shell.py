"""What a ``sh -c`` script runs, read by a tokenizer and cross-checked by real shell parsers.

``bash -c 'git fetch && curl -s x | sh'`` is one argv to the contract but three programs
to the operator. The split shown to the operator comes from a quote-aware tokenizer that
keeps the script's own text; it is then cross-checked, because a hostile script can be
written to be read one way by a tokenizer and another way by bash (a here-document
delimiter quoted mid-word, ``$'\\''``, ``$((cmd); …)`` that looks like arithmetic):

- against bash's own parse when a runner is injected (:data:`BashParse`): bash's
  normalised re-serialisation of the script as a function body, split by the same
  tokenizer; both must name the same commands;
- against bashlex (a port of bash's grammar); every command it finds must be in the split;
- against a list of constructs no static split can represent honestly (``eval``,
  ``source``, aliases, functions, traps, a nested ``sh -c``, ANSI-C strings, …).

Any disagreement, parser failure or such construct makes the split *uncertain*, with the
reasons in :attr:`Chain.uncertain`; the console then warns and shows the raw script. When
in doubt the tokenizer splits more, never less. Pure: no I/O here; running bash is the
injected runner's business.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish"})
# Shells whose grammar bash's parse stands for; the others read some scripts differently.
BASH_LIKE = frozenset({"sh", "bash", "dash", "ash"})
# Programs that run the text they are given as a program: a here-document fed to one is code.
INTERPRETERS = SHELLS | {
    "python",
    "python3",
    "perl",
    "ruby",
    "node",
    "php",
    "lua",
    "tclsh",
    "awk",
    "gawk",
    "osascript",
    "pwsh",
}
# Commands that turn a string into shell code, or change how the rest of the script is read.
RUNS_STRINGS = {
    "eval": "eval runs a string as shell code",
    "source": "source runs another file as part of this script",
    ".": "'.' runs another file as part of this script",
    "alias": "an alias can change what a later command name means",
    "trap": "trap runs a string as shell code later",
    "shopt": "shopt can change how the rest of the script is parsed",
    "enable": "enable can replace a builtin",
    "hash": "hash -p can make a command name run another program",
    "coproc": "coproc runs the command after it in the background",
}
# Wrappers whose next word is the command that actually runs.
WRAPPERS = frozenset(
    {"builtin", "command", "exec", "env", "sudo", "nohup", "nice", "timeout", "xargs", "time", "stdbuf"}
)
# Variables whose value the shell evaluates as code later.
CODE_VARIABLES = frozenset({"PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV", "PS1", "PS0"})
# Variables that decide which program a command name runs.
LOOKUP_VARIABLES = frozenset({"PATH", "BASH_LOADABLES_PATH", "BASHOPTS", "SHELLOPTS"})
_COMPUTED_NAME = re.compile(r"[$`*?'\"\\]|\[.|\{[^}]*(,|\.\.)[^}]*\}")
_ESCAPED_CODE = re.compile(r"\\\$\\?\(|\\`")
RESERVED = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time"}
)
HEADERS = frozenset({"for", "select", "case", "function", "esac", "in"})

_OPERATORS = ("&&", "||", ";;&", ";;", ";&", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECT_OPS = ("&>>", "<<<", "<<-", ">>", "<<", "<>", ">&", "<&", ">|", "&>", ">", "<")
MAX_SPLIT = 32 * 1024  # longer scripts are not split (about 1 s of work): the raw script is what to read
MAX_BASHLEX = 2048  # bashlex takes ~0.15 ms a character; past this it only answers when bash cannot
_SPECIAL = frozenset("\\$'\"#`<>&|;\n()")  # characters where something other than a plain word may start
_EMPTY_PARENS = re.compile(r"\(\s*\)")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")

# (bash's normalised body, or None when bash refused it) — or None when bash could not run.
BashParse = Callable[[str], "BashResult | None"]


@dataclass(frozen=True, slots=True)
class BashResult:
    """What bash made of ``f() { <script> }``: its re-serialised body, or why it refused."""

    body: str | None
    error: str = ""


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
    uncertain: list[str] = field(default_factory=list)  # why the split may not be what runs
    missed: list[str] = field(default_factory=list)  # commands a parser sees that the split lacks

    @property
    def commands(self) -> list[str]:
        return [p.text for p in self.parts if p.kind is PartKind.COMMAND]

    @property
    def certain(self) -> bool:
        return self.complete and not self.uncertain

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


def _ansi_c_end(s: str, i: int) -> int:
    """Index after the closing quote of the ``$'…'`` at ``i`` (backslash escapes its quote)."""
    j = i + 2
    while j < len(s) and s[j] != "'":
        j += 2 if s[j] == "\\" else 1
    return j + 1


def _delimiter(word: str) -> tuple[str, bool, bool]:
    """A here-document delimiter after quote removal: (text, quoted, quoted unusually)."""
    out: list[str] = []
    quoted = False
    j = 0
    while j < len(word):
        ch = word[j]
        if ch == "\\" and j + 1 < len(word):
            out.append(word[j + 1])
            quoted = True
            j += 2
        elif ch in "'\"":
            close = word.find(ch, j + 1)
            close = len(word) if close < 0 else close
            out.append(word[j + 1 : close])
            quoted = True
            j = close + 1
        else:
            out.append(ch)
            j += 1
    text = "".join(out)
    plain = quoted and (
        (len(word) > 1 and word[0] == word[-1] and word[0] in "'\"" and word.count(word[0]) == 2)
        or (word.startswith("\\") and word.count("\\") == 1 and not any(q in word for q in "'\""))
    )
    return text, quoted, (quoted and not plain) or word.startswith("$")


class _Splitter:
    def __init__(self, script: str) -> None:
        self.s = script
        self.complete = True
        self.notes: dict[str, None] = {}  # ordered set of reasons for uncertainty

    def note(self, why: str) -> None:
        self.notes.setdefault(why)

    def split(self, start: int, end_char: str | None, depth: int) -> tuple[list[Part], int]:
        """Parts from ``start`` up to the closing ``end_char`` (or the end); returns the index after it."""
        s = self.s
        parts: list[Part] = []
        nested: list[Part] = []  # substitutions found in the current command, shown after it
        redirects: list[Part] = []
        heredocs: list[tuple[str, bool, bool]] = []
        fed_heredoc = False
        buf: list[str] = []
        i = start
        word_start = True
        subshells = 0  # "(" opened inside this list: its ")" is not the end of a "$(…)"

        def flush() -> None:
            nonlocal fed_heredoc
            text = "".join(buf).strip(" \t")
            if text:
                parts.append(Part(PartKind.COMMAND, text, depth))
                if fed_heredoc and posixpath.basename(command_name(text) or "") in INTERPRETERS | {
                    "source",
                    ".",
                }:
                    self.note("a here-document is fed to an interpreter: its body is a program")
            parts.extend(redirects)
            parts.extend(nested)
            buf.clear()
            redirects.clear()
            nested.clear()
            fed_heredoc = False

        while i < len(s):
            ch = s[i]
            if ch not in _SPECIAL:
                buf.append(ch)
                word_start = ch in " \t"
                i += 1
                continue
            if end_char == ")" and ch == ")" and not subshells:
                flush()
                return parts, i + 1
            if end_char == "`" and ch == "`":
                flush()
                return parts, i + 1
            if ch == "\\":
                if (
                    s.startswith("\n", i + 1)
                    and buf[-1:] not in ([" "], ["\t"], [])
                    and s[i + 2 : i + 3].strip()
                ):
                    self.note("a line continuation joins a word across lines")
                buf.append(s[i : i + 2])
                i += 2
                word_start = False
                continue
            if s.startswith("$'", i):
                self.note("ANSI-C quoting ($'…') decodes escapes a reader cannot see")
                close = _ansi_c_end(s, i)
                if close > len(s):
                    self.complete = False
                buf.append(s[i:close])
                i = close
                word_start = False
                continue
            if ch == "'":
                close = s.find("'", i + 1)
                if close < 0:
                    self.complete = False
                    close = len(s) - 1
                quoted = s[i : close + 1]
                if "$(" in quoted or "`" in quoted:
                    self.note("a quoted string holds shell code, which runs if something evaluates it")
                buf.append(quoted)
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
                i = self._backticks(i, buf, nested, depth)
                word_start = False
                continue
            redirect = self._redirect_at(i, buf)
            if redirect is not None:
                op, digits = redirect
                j = i + len(op)
                while j < len(s) and s[j] in " \t":
                    j += 1
                target_start = j
                j = self._word_end(j, nested, depth)
                target = s[target_start:j]
                if digits:
                    del buf[-len(digits) :]
                joiner = "" if op in (">&", "<&") else " "
                redirects.append(Part(PartKind.REDIRECT, f"{digits}{op}{joiner}{target}".rstrip(), depth))
                if op in ("<<", "<<-") and target:
                    delimiter, literal, odd = _delimiter(target)
                    if odd:
                        self.note("a here-document delimiter is quoted in an unusual way")
                    heredocs.append((delimiter, literal, op == "<<-"))
                    fed_heredoc = True
                i = j
                word_start = True
                continue
            # A stray ")" at the top level is shown as an operator all the same.
            operator = next((o for o in _OPERATORS if s.startswith(o, i)), None)
            if operator is not None:
                if operator == "(" and _EMPTY_PARENS.match(s, i) and "".join(buf).strip():
                    self.note("the script defines a function")
                flush()
                parts.append(Part(PartKind.OPERATOR, operator, depth))
                subshells += {"(": 1, ")": -1 if subshells else 0}.get(operator, 0)
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
            if s.startswith("$((", j):
                j = self._arithmetic(j, [], nested, depth)
                continue
            if s.startswith("$(", j):
                inner, after = self.split(j + 2, ")", depth + 1)
                nested.append(Part(PartKind.SUBSTITUTION, "$(…)", depth + 1))
                nested.extend(inner)
                j = after
                continue
            if s[j] == "`":
                j = self._backticks(j, [], nested, depth)
                continue
            j += 1
        if j >= len(s):
            self.complete = False
        buf.append(s[i : j + 1])
        return j + 1

    def _backticks(self, i: int, buf: list[str], nested: list[Part], depth: int) -> int:
        s = self.s
        close = s.find("`", i + 1)
        if "\\" in (s[i + 1 :] if close < 0 else s[i + 1 : close]):
            self.note("backslashes inside backticks change how the nested command is read")
        inner, after = self.split(i + 1, "`", depth + 1)
        nested.append(Part(PartKind.SUBSTITUTION, "`…`", depth + 1))
        nested.extend(inner)
        buf.append(s[i:after])
        return after

    def _arithmetic(self, i: int, buf: list[str], nested: list[Part], depth: int) -> int:
        """``$((…))``: not a command, but a ``$(…)`` inside it is.

        bash reads ``$((`` as arithmetic only when it closes with ``))``; ``$((a); b)`` is
        a command substitution holding a subshell, and is split as one.
        """
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
                if level == 1 and not s.startswith(")", j + 1):
                    # Not `))`: bash reads a command substitution of a subshell.
                    self.note("'$((' opens a command substitution here, not arithmetic")
                    inner, after = self.split(i + 2, ")", depth + 1)
                    nested.append(Part(PartKind.SUBSTITUTION, "$(…)", depth + 1))
                    nested.extend(inner)
                    buf.append(s[i:after])
                    return after
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

    def _word_end(self, j: int, nested: list[Part], depth: int) -> int:
        """The end of a redirection's target word; substitutions in it are commands too."""
        s = self.s
        scratch: list[str] = []
        while j < len(s) and s[j] not in " \t\n;&|()<>":
            if s[j] == "\\":
                j += 2
            elif s.startswith("$'", j):
                j = _ansi_c_end(s, j)
            elif s.startswith("$((", j):
                j = self._arithmetic(j, scratch, nested, depth)
            elif s.startswith("$(", j):
                inner, j = self.split(j + 2, ")", depth + 1)
                nested.append(Part(PartKind.SUBSTITUTION, "$(…)", depth + 1))
                nested.extend(inner)
            elif s[j] == "`":
                j = self._backticks(j, scratch, nested, depth)
            elif s[j] == '"':
                j = self._double_quoted(j, scratch, nested, depth)
            elif s[j] == "'":
                close = s.find("'", j + 1)
                if close < 0:
                    self.complete = False
                    return len(s)
                j = close + 1
            else:
                j += 1
        return min(j, len(s))

    def _heredoc_bodies(
        self, i: int, heredocs: list[tuple[str, bool, bool]], parts: list[Part], depth: int
    ) -> int:
        s = self.s
        for delimiter, quoted, strip_tabs in heredocs:
            lines = 0
            body_start = i
            while True:
                nl = s.find("\n", i)
                line = s[i:] if nl < 0 else s[i:nl]
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
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
                for why in sub.notes:
                    self.note(why)
        return i


def _words(text: str) -> Iterator[str]:
    """The words of one command's text, quotes kept, split on unquoted blanks."""
    word: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in " \t\n":
            if word:
                yield "".join(word)
                word.clear()
            i += 1
            continue
        if ch == "\\":
            word.append(text[i : i + 2])
            i += 2
            continue
        if text.startswith("$'", i):
            end = _ansi_c_end(text, i)
        elif ch in "'\"`":
            end = text.find(ch, i + 1) + 1 or len(text)
        elif text.startswith("$(", i):
            level, end = 0, i + 1
            while end < len(text):
                level += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
                if level == 0:
                    break
        else:
            end = i + 1
        word.append(text[i:end])
        i = end
    if word:
        yield "".join(word)


def command_name(text: str) -> str | None:
    """The first word of a command's text past assignments and reserved words (None: a loop header)."""
    words = list(_words(text))
    k = 0
    while k < len(words):
        w = words[k]
        if w in HEADERS:
            return None
        if w in RESERVED or _ASSIGNMENT.match(w):
            k += 1
            continue
        return w
    return None


def _real_commands(parts: Sequence[Part]) -> Iterator[Part]:
    """The command parts that run something: case headers and patterns, function names left out."""
    pattern = False  # the next command text is a case pattern, up to its ")"
    for n, part in enumerate(parts):
        if part.kind is PartKind.OPERATOR:
            if part.text in (";;", ";&", ";;&"):
                pattern = True
            continue
        if part.kind is not PartKind.COMMAND:
            continue
        words = list(_words(part.text))
        following = [p.text if p.kind is PartKind.OPERATOR else "" for p in parts[n + 1 : n + 3]]
        if words[:1] == ["case"]:
            # `case x in` alone, or with its first pattern: more alternatives may follow a "|".
            pattern = words[-1] == "in" or following[:1] == ["|"]
            continue
        if pattern and following[:1] in ([")"], ["|"]):
            pattern = following[:1] == ["|"]  # `a | b)`: every alternative is a pattern
            continue
        pattern = False
        if following == ["(", ")"]:
            continue  # `name ()`: a function's name, not a command
        yield part


def _command_names(parts: Sequence[Part]) -> Counter[str]:
    """Every command name in a split, case patterns and loop headers left out."""
    names: Counter[str] = Counter()
    for part in _real_commands(parts):
        name = command_name(part.text)
        if name is not None:
            names[name] += 1
    return names


def _construct_notes(parts: Sequence[Part], shell: str) -> list[str]:
    notes: list[str] = []
    base = shell.split()[-1]
    if base not in BASH_LIKE:
        notes.append(f"the script is read as bash would read it, but {base} reads some scripts differently")
    for part in _real_commands(parts):
        words = list(_words(part.text))
        for w in words:
            m = _ASSIGNMENT.match(w)
            if m is None:
                break
            variable = w[: m.end()].rstrip("+=").split("[")[0]
            if variable in CODE_VARIABLES:
                notes.append("the script sets a variable that the shell later runs as code")
            if variable in LOOKUP_VARIABLES:
                notes.append(f"the script sets {variable}, which changes what a command name runs")
        if _ESCAPED_CODE.search(part.text):
            notes.append("escaped text holds shell code, which runs if something evaluates it")
        k = 0
        while k < len(words) and (words[k] in RESERVED or _ASSIGNMENT.match(words[k])):
            k += 1
        while k < len(words) and posixpath.basename(words[k]) in WRAPPERS:
            k += 1
            while k < len(words) and (words[k].startswith("-") or _ASSIGNMENT.match(words[k])):
                k += 1
            if k < len(words) and re.fullmatch(r"[0-9.]+[smhd]?", words[k]):
                k += 1  # timeout's duration, nice's level
        if k >= len(words):
            continue
        if words[k] not in ("[", "[[") and _COMPUTED_NAME.search(words[k]):
            notes.append("a command name is quoted, escaped or computed when it runs")
        name = posixpath.basename(words[k].strip("'\"\\"))
        why = RUNS_STRINGS.get(name, "")
        if why:
            notes.append(why)
        if words[k] == "function":
            notes.append("the script defines a function")
        if name in SHELLS and any(
            w.startswith("-") and "c" in w and not w.startswith("--") for w in words[k:]
        ):
            notes.append(f"{name} -c runs a nested script, split here only as one command")
    return notes


def split_chain(script: str) -> Chain:
    """The commands, operators, redirections and substitutions of ``script``, in order.

    The tokenizer alone, with the constructs it noticed; :func:`checked_chain` adds the
    cross-checks against real parsers.
    """
    if len(script) > MAX_SPLIT:
        return Chain([Part(PartKind.COMMAND, script)], True, ["the script is too long to split"])
    splitter = _Splitter(script)
    try:
        parts, _ = splitter.split(0, None, 0)
    except RecursionError:
        # Substitutions nested thousands deep: nothing sensible to draw but the whole text.
        return Chain([Part(PartKind.COMMAND, script)], False, ["the script nests too deeply to split"])
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
    return Chain(cleaned, splitter.complete, list(splitter.notes))


def bashlex_commands(script: str) -> tuple[list[tuple[str, str]] | None, str]:
    """(name, text) of every command bashlex finds in ``script``; None when it cannot parse it, and why."""
    try:
        import bashlex  # type: ignore[import-untyped]  # bashlex ships no types
    except ImportError:
        return None, "bashlex is not installed"
    try:
        trees = bashlex.parse(script)
    except Exception as exc:  # bashlex raises its own errors, NotImplementedError, IndexError, …
        return None, f"bashlex cannot parse it ({type(exc).__name__})"
    found: list[tuple[str, str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for child in node:
                walk(child)
            return
        kind = getattr(node, "kind", None)
        if kind is None:
            return
        if kind == "command":
            words = [p for p in node.parts if p.kind == "word"]
            if words:
                start, end = words[0].pos
                found.append((script[start:end], script[node.pos[0] : node.pos[1]]))
        for key in ("parts", "list", "command", "output", "heredoc"):
            walk(getattr(node, key, None))

    walk(trees)
    return found, ""


def checked_chain(script: str, shell: str = "bash", bash: BashParse | None = None) -> Chain:
    """:func:`split_chain`, cross-checked: ``uncertain`` says why it may not be what runs."""
    chain = split_chain(script)
    reasons = dict.fromkeys(chain.uncertain)
    if not chain.complete:
        reasons.setdefault("the script ends inside a quote, substitution or here-document")
    reasons.update(dict.fromkeys(_construct_notes(chain.parts, shell)))
    ours = _command_names(chain.parts)
    parsed_by_bash = False
    if bash is not None:
        result = bash(script)
        if result is None:
            reasons.setdefault("bash's own parse could not be run to check it")
        elif result.body is None:
            reasons.setdefault("bash itself does not read this script as the split does (it refuses it)")
        else:
            parsed_by_bash = True
            theirs_chain = split_chain(result.body)
            theirs = _command_names(theirs_chain.parts)
            theirs[":"] -= 1  # the `:` the runner puts first
            theirs = +theirs
            if theirs != ours:
                reasons.setdefault("bash itself reads different commands than the split shows")
                missing = theirs - ours
                chain.missed.extend(
                    p.text
                    for p in theirs_chain.parts
                    if p.kind is PartKind.COMMAND and command_name(p.text) in missing
                )
    if len(script) > MAX_BASHLEX:
        commands, why = None, "the script is too long for bashlex"
    else:
        commands, why = bashlex_commands(script)
    if commands is None:
        if not parsed_by_bash:
            reasons.setdefault(f"no shell parser could check the split: {why}")
    else:
        missing = Counter(name for name, _ in commands) - ours
        if missing:
            reasons.setdefault("bashlex reads commands the split does not show")
            chain.missed.extend(
                text for name, text in commands if name in missing and text not in chain.missed
            )
    chain.uncertain = list(reasons)
    return chain
