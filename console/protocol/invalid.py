"""What a msgspec validation error says, without the value it refused.

An event or a result that does not fit its type came from the daemon, but its text may
be an agent's (a justification, a path, a title). msgspec quotes the refused value in
some messages ("Invalid enum value 'x'"); those reach logs and the operator's screen, so
only the words and the place are kept. A key error's place is written "`key` in `$.a`",
which is said "a key of `$.a`".
"""

from __future__ import annotations

import re

import msgspec

_AT = re.compile(r" - at (`key` in )?`(\$[^`]*)`\Z")
# The messages that quote the value they refused: only their words are kept.
_VALUE_SAYING = ("Invalid enum value", "Invalid value")


def problem(exc: msgspec.ValidationError) -> tuple[str, str]:
    """(what is wrong and where, where) of ``exc``: ``("Expected `int`, got `str` - at
    `$.count`", "$.count")``; at the top level msgspec names no place, and neither does
    this (the place is ``"$"``)."""
    text = str(exc)
    found = _AT.search(text)
    path = found.group(2) if found else "$"
    reason = text[: found.start()] if found else text
    for words in _VALUE_SAYING:
        if reason.startswith(words):
            reason = words
    if not found:
        return reason, path
    return f"{reason} - at {'a key of ' if found.group(1) else ''}`{path}`", path
