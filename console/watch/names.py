"""File names as untrusted text.

Linux file names are bytes. The watcher keeps them as ``str`` decoded with
``surrogateescape`` (what ``os`` does), so every name round-trips to the same bytes and
nothing crashes on a name that is not UTF-8. Such a ``str`` must never reach a terminal
or a JSON encoder as is: a name can hold escape sequences, bidi controls, zero-width
characters and lone surrogates. ``display_path`` makes it visible and inert;
``json_path`` makes it encodable without losing the original bytes.
"""

from __future__ import annotations

import os
import unicodedata

# Characters that are not Cc/Cf/Cs/Zl/Zp but still change how the text around them looks.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e")


def _needs_escape(ch: str) -> bool:
    if ch == "\\":
        return True
    if " " <= ch <= "~":
        return False
    if ch in _INVISIBLE:
        return True
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs") and ch != " "


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch == "\\":
        return "\\\\"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def display_path(path: str) -> str:
    """The path with every control, format, invisible or undecodable character escaped.

    Backslash is escaped too, so the result is unambiguous: ``a\\x1bb`` on screen means
    the name holds ESC, never a literal backslash followed by ``x1b``.
    """
    if path.isascii() and path.isprintable() and "\\" not in path:
        return path
    return "".join(_escape(ch) if _needs_escape(ch) else ch for ch in path)


def is_plain(path: str) -> bool:
    """True when ``display_path`` shows the name unchanged; otherwise the UI should flag it."""
    return display_path(path) == path


def json_path(path: str) -> dict[str, str]:
    """A JSON-safe, lossless form: ``{"path": text}`` or, for names that are not UTF-8,
    ``{"path": escaped text, "path_hex": the raw bytes in hex}``."""
    raw = os.fsencode(path)
    try:
        return {"path": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"path": display_path(path), "path_hex": raw.hex()}


def path_from_json(data: dict[str, str]) -> str:
    """The inverse of ``json_path``, for clients that need the real name back."""
    if "path_hex" in data:
        return os.fsdecode(bytes.fromhex(data["path_hex"]))
    return data["path"]
