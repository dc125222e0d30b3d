"""Making untrusted text inert for a terminal, and saying what was hidden in it.

Everything an agent sends — and every byte a program prints — may carry escape
sequences (`\\x1b[2J`, OSC 8 links, OSC 52 clipboard writes), overwrites (`\\r`, `\\b`),
bidi controls that reorder what the eye reads, zero-width characters, or letters from
another script that look like Latin ones. :func:`inert` turns each invisible or
controlling character into a visible escape; :func:`findings` names what was there so
the console can flag it. Neither ever interprets the text.
"""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum

BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e\u034f")

# One pass finds everything that needs escaping: C0 and C1 controls, DEL, bidi, zero-width,
# other format characters, line/paragraph separators, lone surrogates (undecodable bytes).
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u034f\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\u00ad\U000e0000-\U000e007f]"
)
_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\e", "\x08": "\\b", "\x00": "\\0", "\x07": "\\a"}


class Finding(StrEnum):
    CONTROL = "control characters"  # C0/C1 controls, escape sequences, CR/BS overwrites
    BIDI = "bidirectional controls"
    INVISIBLE = "invisible characters"
    MIXED_SCRIPT = "mixed scripts"
    LOOKALIKE = "look-alike letters"  # a command word wholly of letters that pass for Latin ones
    FULLWIDTH = "fullwidth look-alikes"
    UNDECODABLE = "undecodable bytes"


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        # surrogateescape carries undecodable bytes as U+DC80..U+DCFF
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def inert(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control, bidi, invisible or undecodable character escaped visibly.

    Backslashes are not doubled: the result is for eyes, not for parsing back.
    With ``keep_newlines`` a ``\\n`` stays a line break (for multi-line display).
    """
    if keep_newlines:
        return "\n".join(_UNSAFE.sub(_escape, line) for line in text.split("\n"))
    return _UNSAFE.sub(_escape, text)


_WORD = re.compile(r"\w+")


def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    if ch.isascii():
        return "LATIN"
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return None
    return name.split(" ", 1)[0]


def findings(text: str) -> set[Finding]:
    """What :func:`inert` had to escape, and what it cannot (look-alike letters)."""
    found: set[Finding] = set()
    for ch in set(_UNSAFE.findall(text)):
        code = ord(ch)
        if ch in BIDI or 0x2066 <= code <= 0x2069:
            found.add(Finding.BIDI)
        elif ch in ZERO_WIDTH or unicodedata.category(ch) == "Cf":
            found.add(Finding.INVISIBLE)
        elif 0xD800 <= code <= 0xDFFF:
            found.add(Finding.UNDECODABLE)
        else:
            found.add(Finding.CONTROL)
    if any(0xFF01 <= ord(ch) <= 0xFF5E for ch in text):
        found.add(Finding.FULLWIDTH)
    if not text.isascii():
        for word in _WORD.findall(text):
            scripts = {s for s in map(_script, word) if s is not None}
            if len(scripts) > 1:
                found.add(Finding.MIXED_SCRIPT)
                break
    return found


# Letters of other scripts that pass for Latin ones in a terminal font. A command word made
# only of these (``ѕеt`` in Cyrillic) reads as ASCII though it names something else; a word
# that mixes them with Latin letters is already a mixed-script word.
CONFUSABLE = frozenset(
    "аеорсухѕіјԁԛԝүһӏвкмнтАВЕКМНОРСТХЅІЈҮԌԚԜ"  # Cyrillic
    "αονρτυικΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"  # Greek
)


def lookalike_spans(text: str, *, whole_words: bool = False) -> list[tuple[int, int]]:
    """Spans of characters that may pass for others: the minority script in a mixed-script
    word (``cаt`` with a Cyrillic а), fullwidth forms (``ｒｍ``) and, with
    ``whole_words`` (for commands, where a word names a program or a file), every letter of
    a word made only of Latin look-alikes (``ѕеt``)."""
    spans: list[tuple[int, int]] = []
    for i, ch in enumerate(text):
        if 0xFF01 <= ord(ch) <= 0xFF5E:
            spans.append((i, i + 1))
    if text.isascii():
        return spans
    start = None
    for i, ch in enumerate([*text, " "]):
        if ch.isalnum() or ch == "_":
            if start is None:
                start = i
            continue
        if start is not None:
            word = text[start:i]
            scripts = [_script(c) for c in word]
            named = {s for s in scripts if s}
            if len(named) > 1:
                counts = {s: scripts.count(s) for s in named}
                major = "LATIN" if "LATIN" in named else max(counts, key=lambda s: counts[s])
                spans.extend((start + k, start + k + 1) for k, s in enumerate(scripts) if s and s != major)
            elif whole_words and "LATIN" not in named and all(c in CONFUSABLE for c in word if c.isalpha()):
                spans.extend((start + k, start + k + 1) for k, c in enumerate(word) if c.isalpha())
            start = None
    return sorted(set(spans))


def command_findings(text: str) -> set[Finding]:
    """:func:`findings` for a command, which also names a word made only of look-alikes."""
    found = findings(text)
    if (
        not text.isascii()
        and any(text[a:b] in CONFUSABLE for a, b in lookalike_spans(text, whole_words=True))
        and Finding.MIXED_SCRIPT not in found
    ):
        found.add(Finding.LOOKALIKE)
    return found


def flag_lookalikes(text: str, *, whole_words: bool = True) -> str:
    """``text`` (already :func:`inert`) with each look-alike letter written as its code
    point, ``\\u0455``, as escapes are: for a plain terminal, where no colour can mark it."""
    spans = lookalike_spans(text, whole_words=whole_words)
    if not spans:
        return text
    out = list(text)
    for a, _ in spans:
        code = ord(text[a])
        out[a] = f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return "".join(out)


def lookalike_notes(text: str, *, whole_words: bool = True) -> list[str]:
    """Each distinct look-alike letter in ``text`` named: ``ѕ is U+0455 CYRILLIC SMALL LETTER DZE``."""
    seen: dict[str, str] = {}
    for a, _ in lookalike_spans(text, whole_words=whole_words):
        ch = text[a]
        if ch not in seen:
            seen[ch] = f"{ch} is U+{ord(ch):04X} {unicodedata.name(ch, 'an unnamed character')}"
    return list(seen.values())
