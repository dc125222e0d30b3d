"""Strict JSON decoding shared by every boundary.

The standard library (and msgspec) silently keep the last of duplicate keys, accept
NaN/Infinity, and let lone surrogates through as ``\\ud800`` escapes. An operation like
``{"executable":"ls","executable":"rm"}`` must not be read as ``rm`` by one parser and
``ls`` by another, so every boundary decodes with this module instead.

It also writes the one canonical form that is hashed (fingerprints, the history's
hash chain): RFC 8785, the JSON Canonicalization Scheme, so that any JCS library in any
language computes the same bytes.
"""

from __future__ import annotations

import json
import math
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
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise StrictJSONError("duplicate_key", "an object has the same key twice")
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


# Python refuses to convert longer digit strings (sys.get_int_max_str_digits()); such a
# number is refused here as input, with a reason, instead of escaping as a bare ValueError.
MAX_INT_DIGITS = 4300


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise StrictJSONError("number_too_large", f"an integer has more than {MAX_INT_DIGITS} digits")
    return int(digits)


# One decoder for every call: json.loads with hooks builds a new one each time.
_decoder = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_reject_constant, parse_int=_parse_int)


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
        if text.startswith("\ufeff"):  # what json.loads refuses before decoding
            raise json.JSONDecodeError("Unexpected UTF-8 BOM", text, 0)
        value = _decoder.decode(text)
    except StrictJSONError:
        raise
    except RecursionError:
        raise StrictJSONError("too_deep", f"nesting deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise StrictJSONError(
            "invalid_json", f"not valid JSON (line {exc.lineno}, column {exc.colno})"
        ) from None
    if not _plain(text):
        _check(value, 0)
    return value


def _plain(text: str) -> bool:
    """Whether ``text`` can hold neither a lone surrogate nor nesting past MAX_DEPTH, so
    the walk of :func:`_check` would find nothing: ASCII text gets a surrogate only from a
    ``\\uD800``-``\\uDFFF`` escape, and it cannot nest deeper than it has brackets."""
    return (
        text.isascii()
        and "\\ud" not in text
        and "\\uD" not in text
        and text.count("[") + text.count("{") <= MAX_DEPTH
    )


def dumps(value: Any) -> str:
    """Compact, key-sorted, ASCII-only JSON: the one way this project writes JSON."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


# RFC 8785 numbers are IEEE-754 doubles; an integer beyond this reads back as another one.
MAX_SAFE_INTEGER = 2**53 - 1

# Both escape exactly what RFC 8785 escapes: ``"``, ``\\``, \b \t \n \f \r, and the
# other controls below U+0020 as lowercase ``\u00xx``; everything else (U+007F,
# non-ASCII, emoji) is written as is. The tests hold them to Node's JSON.stringify.
_encode_string = json.encoder.encode_basestring
_encoder = msgspec.json.Encoder(order="sorted")


def canonical(value: Any) -> bytes:
    """RFC 8785 (JSON Canonicalization Scheme) bytes of ``value``.

    ``value`` is made of ``dict`` (string keys), ``list``/``tuple``, ``str``, ``int``,
    ``float``, ``bool`` and ``None``. Object members are sorted by the UTF-16 code units
    of their names, numbers are written as ECMAScript writes a double
    (:func:`number`), strings escape only what JCS escapes, and the text is UTF-8
    without whitespace. Raises :class:`StrictJSONError` for what JCS cannot say: NaN and
    infinities (``non_finite_number``), integers outside ±(2**53 - 1) whose value a
    reader would change (``unsafe_integer``), lone surrogates (``lone_surrogate``) and
    nesting deeper than :data:`MAX_DEPTH` (``too_deep``); ``TypeError`` for other types.

    This runs for every row of the history, so the bytes come from msgspec (in C) once
    :func:`_ready` has checked the value and put each float's JCS text in its place;
    msgspec's own ``order="sorted"`` is by code point, so an object with a non-ASCII
    member name is written by :func:`_encode` instead.
    """
    try:
        return _encoder.encode(_ready(value, 0))
    except UnicodeEncodeError:
        raise StrictJSONError("lone_surrogate", "a string holds a lone UTF-16 surrogate") from None
    except RecursionError:
        raise StrictJSONError("too_deep", f"nesting deeper than {MAX_DEPTH} levels") from None


def canonical_plain(value: Any) -> bytes:
    """:func:`canonical` for a value plain by construction: ASCII member names, and
    nothing but objects, lists, strings, ``None`` and integers within ±(2**53 - 1),
    nested under :data:`MAX_DEPTH`. For such a value JCS and msgspec's sorted output are
    the same bytes, so :func:`_ready`'s walk is skipped: the fingerprint's canonical form
    is built that way from a parsed operation, and the walk was half its cost. Lone
    surrogates are still refused (``lone_surrogate``); any other shape is the caller's
    bug, which ``tests/contract/test_fingerprint_properties.py`` checks against :func:`canonical`.
    """
    try:
        return _encoder.encode(value)
    except UnicodeEncodeError:
        raise StrictJSONError("lone_surrogate", "a string holds a lone UTF-16 surrogate") from None


def _ready(value: Any, depth: int) -> Any:
    """``value`` checked for JCS, floats (and non-ASCII-keyed objects) as raw JCS text.

    Returns ``value`` itself when nothing had to change, so the common row (strings,
    small integers, None) is not copied.
    """
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return value
    if kind is int:
        _check_integer(value)
        return value
    if kind is float:
        return msgspec.Raw(number(value))
    if kind is dict:
        if depth >= MAX_DEPTH:
            raise StrictJSONError("too_deep", f"nesting deeper than {MAX_DEPTH} levels")
        if not _names(value).isascii():
            return msgspec.Raw(_object(value, depth))
        ready: dict[str, Any] | None = None
        for key, item in value.items():
            if type(item) is str or item is None:
                continue
            if type(item) is int and -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                continue
            new = _ready(item, depth + 1)
            if new is not item:
                if ready is None:
                    ready = dict(value)
                ready[key] = new
        return value if ready is None else ready
    if kind is list or kind is tuple:
        if depth >= MAX_DEPTH:
            raise StrictJSONError("too_deep", f"nesting deeper than {MAX_DEPTH} levels")
        items: list[Any] | None = None
        for i, item in enumerate(value):
            if type(item) is str:
                continue
            new = _ready(item, depth + 1)
            if new is not item:
                if items is None:
                    items = list(value)
                items[i] = new
        return value if items is None else items
    if isinstance(value, str | int | float | dict | list | tuple):  # StrEnum, IntEnum, …
        return msgspec.Raw(_encode(value, depth))
    raise TypeError(f"a {type(value).__name__} is not JSON")


def _encode(value: Any, depth: int) -> str:
    """The JCS text of ``value`` written in Python (the reference for :func:`_ready`)."""
    if isinstance(value, str):
        return _encode_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        _check_integer(value)
        return int.__repr__(value)
    if isinstance(value, float):
        return number(value)
    if isinstance(value, dict):
        return _object(value, depth)
    if isinstance(value, list | tuple):
        if depth >= MAX_DEPTH:
            raise StrictJSONError("too_deep", f"nesting deeper than {MAX_DEPTH} levels")
        return "[" + ",".join([_encode(item, depth + 1) for item in value]) + "]"
    raise TypeError(f"a {type(value).__name__} is not JSON")


def _object(obj: dict[Any, Any], depth: int) -> str:
    if depth >= MAX_DEPTH:
        raise StrictJSONError("too_deep", f"nesting deeper than {MAX_DEPTH} levels")
    members = [_encode_string(key) + ":" + _encode(obj[key], depth + 1) for key in _sorted_keys(obj)]
    return "{" + ",".join(members) + "}"


def _names(obj: dict[Any, Any]) -> str:
    """All member names run together (in C), refusing a name that is not a string."""
    try:
        return "".join(obj)
    except TypeError:
        bad = next(key for key in obj if not isinstance(key, str))
        raise TypeError(f"an object key is a {type(bad).__name__}, not a string") from None


def _sorted_keys(obj: dict[Any, Any]) -> list[str]:
    """Member names in RFC 8785 order: by UTF-16 code units, not by code points.

    The two orders differ only when a name holds a character above U+FFFF (a surrogate
    pair, 0xD800-0xDBFF first) and another one in U+E000-U+FFFF at the same position.
    """
    keys = list(obj)
    if _names(obj).isascii():
        keys.sort()
        return keys
    try:
        keys.sort(key=_utf16)
    except UnicodeEncodeError:
        raise StrictJSONError("lone_surrogate", "a key holds a lone UTF-16 surrogate") from None
    return keys


def _utf16(key: str) -> bytes:
    # Big-endian code units compare bytewise exactly as the units compare as numbers.
    return key.encode("utf-16-be")


def _check_integer(value: int) -> None:
    if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise StrictJSONError(
            "unsafe_integer",
            "an integer beyond ±(2**53 - 1) is not canonical JSON: a reader holds numbers as "
            "doubles and would see another value; send it as a string",
        )


def number(value: float) -> str:
    """A double as ECMAScript's Number::toString writes it (ECMA-262, RFC 8785 §3.2.2.3).

    ``repr`` gives the shortest digits that read back as the same double (and of
    those, the closest), which is the digit string ECMAScript asks for; only the layout
    differs: no ``.0`` on integers, plain digits for 1e-6 <= |value| < 1e21, and an
    exponent with an explicit sign (``1e+21``, ``1e-7``) outside that range. ``-0`` is
    ``0``.
    """
    if not math.isfinite(value):
        raise StrictJSONError("non_finite_number", f"{value!r} is not a JSON number (RFC 8785 refuses it)")
    if value == 0:
        return "0"
    text = repr(value)
    if "e" not in text:
        # repr's plain form (1e-4 <= |value| < 1e16) is ECMAScript's but for the ".0"
        return text[:-2] if text.endswith(".0") else text
    if value < 0:
        return "-" + number(-value)
    mantissa, _, exp = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    significant = digits.lstrip("0")
    # value = 0.<significant> * 10**point, i.e. the decimal point sits after `point` digits
    point = (int(exp) if exp else 0) + len(whole) - (len(digits) - len(significant))
    significant = significant.rstrip("0")
    k = len(significant)
    if k <= point <= 21:
        return significant + "0" * (point - k)
    if 0 < point <= 21:
        return significant[:point] + "." + significant[point:]
    if -6 < point <= 0:
        return "0." + "0" * -point + significant
    e = point - 1
    sign = "+" if e >= 0 else "-"
    head = significant[0] + ("." + significant[1:] if k > 1 else "")
    return f"{head}e{sign}{abs(e)}"
