"""docs/protocol.md's generated lines (``Params of `m`: …``, ``Result of `m`: …``), read
back so tests can hold them to the Structs they describe."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "protocol.md"


def documented(label: str) -> dict[str, str]:
    """The ``{label} of `method`: …`` lines, by method; a method documented twice fails."""
    found: dict[str, str] = {}
    pattern = re.compile(rf"{label} of `([a-z_.]+)`: (.*)$")
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = pattern.match(line)
        if m:
            assert m[1] not in found, f"{m[1]} documented twice"
            found[m[1]] = m[2]
    return found
