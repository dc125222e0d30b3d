"""The daemon's id formats, checked strictly where a client names one.

An id parameter is matched in full against its format before anything looks it up, so
an empty string, a prefix or a pattern never reaches the store as "match anything" (an
empty ``request_id`` once returned the whole history in one frame). Fingerprint
prefixes are the one place a prefix is meant; they take at least 6 hex digits.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec

from console.protocol.params import Params, bad

REQUEST_ID = re.compile(r"^r-[0-9a-z]{1,13}-[0-9a-z]{1,13}\Z")
SESSION_ID = re.compile(r"^[0-9a-f]{8}\Z")
GRANT_ID = re.compile(r"^g-[0-9a-f]{10}\Z")
TRIPWIRE_ID = re.compile(r"^t-[0-9a-f]{8}\Z")
AGENT_ID = re.compile(r"^a-[0-9a-f]{16}\Z")
FINGERPRINT = re.compile(r"^[0-9a-f]{64}\Z")

_HINTS = {
    REQUEST_ID: "a request id such as r-<base36>-<base36>",
    SESSION_ID: "a session id: 8 lowercase hex digits",
    GRANT_ID: "a grant id: g- and 10 lowercase hex digits",
    TRIPWIRE_ID: "a tripwire item id: t- and 8 lowercase hex digits",
    AGENT_ID: "an agent id: a- and 16 lowercase hex digits",
    FINGERPRINT: "a fingerprint: 64 lowercase hex digits",
}

# The same formats as msgspec constraints, for the request Structs
# (console/protocol/requests.py): a field so annotated is read with :func:`read_id`.
RequestId = Annotated[str, msgspec.Meta(pattern=REQUEST_ID.pattern)]
SessionId = Annotated[str, msgspec.Meta(pattern=SESSION_ID.pattern)]
TripwireId = Annotated[str, msgspec.Meta(pattern=TRIPWIRE_ID.pattern)]
AgentId = Annotated[str, msgspec.Meta(pattern=AGENT_ID.pattern)]
Fingerprint = Annotated[str, msgspec.Meta(pattern=FINGERPRINT.pattern)]

_BY_PATTERN = {fmt.pattern: fmt for fmt in _HINTS}

_MISSING: Any = object()


def id_format(pattern: str) -> re.Pattern[str] | None:
    """The id format whose pattern (as in a Struct's ``msgspec.Meta``) is ``pattern``."""
    return _BY_PATTERN.get(pattern)


def read_id(p: Params, name: str, fmt: re.Pattern[str], default: Any = _MISSING) -> Any:
    """Read ``name`` as an id of format ``fmt`` (or return ``default`` when it is absent)."""
    value = p.raw(name) if default is _MISSING else p.raw(name, default)
    if default is not _MISSING and value is default:
        return value
    if not isinstance(value, str) or not fmt.match(value):
        raise bad(name, f"must be {_HINTS[fmt]}")
    return value
