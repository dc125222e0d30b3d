"""Strict JSON decoding shared by every boundary.

The standard library (and msgspec) silently keep the last of duplicate keys, accept
NaN/Infinity, and let lone surrogates through as ``\\ud800`` escapes. An operation like
``{"executable":"ls","executable":"rm"}`` must not be read as ``rm`` by one parser and
``ls`` by another, so every boundary decodes with this module instead.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

MAX_DEPTH = 64

_SURROGATE = re.compile("[\ud800-\udfff]")


class StrictJSONError(ValueError):
    """The text is not acceptable JSON; ``code`` is a stable reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise StrictJSONError("duplicate_key", "an object has the same key twice")
        obj[key] = value
    return obj


def _reject_constant(name: str) -> Any:
    raise StrictJSONError("non_finite_number", f"{name} is not valid JSON")


def _check(value: Any, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise StrictJSONError("too_deep", f"nesting deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        if not value.isascii() and _SURROGATE.search(value):  # a surrogate is never ASCII
            raise StrictJSONError("lone_surrogate", "a string holds a lone UTF-16 surrogate")
    elif isinstance(value, dict):
        for key, item in value.items():
            if not key.isascii() and _SURROGATE.search(key):
                raise StrictJSONError("lone_surrogate", "a key holds a lone UTF-16 surrogate")
            _check(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check(item, depth + 1)


def loads(data: str | bytes) -> Any:
    """Decode one JSON document strictly; raises :class:`StrictJSONError`."""
    if isinstance(data, bytes | bytearray):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise StrictJSONError("invalid_utf8", "the text is not valid UTF-8") from None
    else:
        text = data
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_reject_constant)
    except StrictJSONError:
        raise
    except RecursionError:
        raise StrictJSONError("too_deep", f"nesting deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise StrictJSONError(
            "invalid_json", f"not valid JSON (line {exc.lineno}, column {exc.colno})"
        ) from None
    _check(value, 0)
    return value


def dumps(value: Any) -> str:
    """Compact, key-sorted, ASCII-only JSON: the one way this project writes JSON."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


_canonical_encoder = msgspec.json.Encoder(order="sorted")


def canonical(value: Any) -> bytes:
    """RFC 8785 (JCS) bytes for values made of strings, integers, lists and dicts.

    Keys sorted, no whitespace, UTF-8, only ``"``, ``\\`` and control characters
    escaped (short forms for \\b \\t \\n \\f \\r, else lowercase ``\\u00xx``).
    """
    return _canonical_encoder.encode(value)
