"""Strict reading of a method's params: each value checked, unknown names refused.

Errors name the parameter and what it accepts, never echo the value.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from console.protocol.jsonrpc import INVALID_PARAMS, RPCError

E = TypeVar("E", bound=StrEnum)
_MISSING: Any = object()


def bad(name: str, what: str) -> RPCError:
    return RPCError(INVALID_PARAMS, f"{name}: {what}", {"param": name})


class Params:
    """Read params once each; :meth:`done` refuses whatever was not read."""

    def __init__(self, params: dict[str, Any]) -> None:
        self._params = params
        self._seen: set[str] = set()

    def raw(self, name: str, default: Any = _MISSING) -> Any:
        self._seen.add(name)
        if name in self._params:
            return self._params[name]
        if default is _MISSING:
            raise bad(name, "is required")
        return default

    def text(self, name: str, default: Any = _MISSING, *, max_len: int = 4096) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, str):
            raise bad(name, "must be a string")
        if len(value) > max_len or "\x00" in value:
            raise bad(name, f"must be at most {max_len} characters without NUL")
        return value

    def integer(self, name: str, default: Any = _MISSING, *, low: int = 0, high: int = 2**53) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise bad(name, f"must be an integer between {low} and {high}")
        return value

    def number(self, name: str, default: Any = _MISSING, *, low: float = 0, high: float = 1e12) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, int | float) or isinstance(value, bool) or not low <= value <= high:
            raise bad(name, f"must be a number between {low:g} and {high:g}")
        return float(value)

    def flag(self, name: str, default: Any = _MISSING) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, bool):
            raise bad(name, "must be true or false")
        return value

    def choice(self, name: str, enum: type[E], default: Any = _MISSING) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        member = enum._value2member_map_.get(value) if isinstance(value, str) else None
        if member is None:
            raise bad(name, "must be one of: " + ", ".join(m.value for m in enum))
        return member

    def obj(self, name: str, default: Any = _MISSING) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, dict):
            raise bad(name, "must be an object")
        return value

    def texts(self, name: str, default: Any = _MISSING, *, max_items: int = 1000) -> Any:
        value = self.raw(name, default)
        if value is default and default is not _MISSING:
            return value
        if (
            not isinstance(value, list)
            or len(value) > max_items
            or not all(isinstance(v, str) for v in value)
        ):
            raise bad(name, f"must be a list of at most {max_items} strings")
        return value

    def done(self) -> None:
        unknown = set(self._params) - self._seen
        if unknown:
            raise RPCError(
                INVALID_PARAMS,
                "unknown params; accepted: " + ", ".join(sorted(self._seen)),
                {"accepted": sorted(self._seen)},
            )
