"""Desktop notifications through the terminal: OSC 777 (rxvt, foot, WezTerm, VTE) and OSC 9 (iTerm2, kitty, WezTerm).

The body is built by the console from agent text, so it is stripped down to printable
characters here: a control character or ``;`` could end the sequence early and smuggle
a second one into the operator's terminal.
"""

from __future__ import annotations

import re
import unicodedata

_UNSAFE = re.compile(r"[^\w .,:()/@+\-'\"#%=]")
MAX_CHARS = 200


def clean(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C")
    text = _UNSAFE.sub(" ", text)
    text = " ".join(text.split())
    return text[:MAX_CHARS]


def osc777(title: str, body: str) -> str:
    return f"\x1b]777;notify;{clean(title)};{clean(body)}\x1b\\"


def osc9(title: str, body: str) -> str:
    return f"\x1b]9;{clean(title)}: {clean(body)}\x1b\\"


def sequence(kind: str, title: str, body: str) -> str:
    """The escape for ``kind`` (``osc777``, ``osc9`` or ``off``)."""
    if kind == "osc777":
        return osc777(title, body)
    if kind == "osc9":
        return osc9(title, body)
    return ""
