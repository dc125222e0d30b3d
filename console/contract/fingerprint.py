"""Fingerprints: the identity of an operation for approval purposes.

The canonical form is specified in docs/fingerprint.md precisely enough to reimplement
in another language; the test suite checks the vectors printed there.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

from console.contract import strictjson
from console.contract.problem import invalid

if TYPE_CHECKING:
    from console.contract.operation import Operation

FINGERPRINT_VERSION = 1
_HEX64 = re.compile(r"[0-9a-f]{64}")
# Most operations have no standard input: its digest is a constant.
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def canonical_form(op: Operation) -> dict[str, Any]:
    """Every authority-bearing field, in the shape that gets hashed.

    Justification, session id, timeout and output limits are deliberately absent: they
    do not change what the command may do, so changing them must not cost an approval.

    Tuples stand for JSON arrays as they are (``env`` and ``content`` hold pairs), with
    the bytes of lists; an enum member's ``_value_`` is its ``value`` read as a plain
    attribute, where ``value`` is a descriptor costing as much as a field's copy.
    """
    return {
        "version": FINGERPRINT_VERSION,
        "origin": op.origin._value_,
        "mode": op.mode._value_,
        "kind": op.kind._value_,
        "tool": op.tool,
        "executable": op.executable,
        "args": op.args,
        "workspace_root": op.workspace_root,
        "cwd": op.cwd,
        "env": op.env,
        "stdin_sha256": hashlib.sha256(op.stdin).hexdigest() if op.stdin else _EMPTY_SHA256,
        "workspace_access": op.workspace_access._value_,
        "write_dirs": op.write_dirs,
        "network": op.network._value_,
        "capabilities": [c.to_dict() for c in op.capabilities] if op.capabilities else [],
        "content": op.content,
    }


def canonical_bytes(op: Operation) -> bytes:
    # Plain by construction: fixed ASCII names, a parsed operation's strings, one int.
    return strictjson.canonical_plain(canonical_form(op))


def fingerprint(op: Operation) -> str:
    return hashlib.sha256(canonical_bytes(op)).hexdigest()


def parse_fingerprint(text: str) -> str:
    """Accept only the persistence form: exactly 64 lowercase hex digits."""
    if not isinstance(text, str) or not _HEX64.fullmatch(text):
        raise invalid("fingerprint", "invalid_fingerprint", "must be 64 lowercase hexadecimal digits")
    return text


def short(fp: str) -> str:
    """The form shown to people: enough to be unique among a day's requests."""
    return fp[:12]
