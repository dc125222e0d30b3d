"""The hash chain that makes the history tamper-evident, and its head anchor.

Hashing rule (stable; an external verifier can recompute it from ``history export``)::

    hash(row) = sha256( prev_hash.encode("ascii") + canonical(columns) ).hexdigest()

where ``prev_hash`` is the previous row's ``hash`` (64 ``"0"`` for the first row,
``seq`` 1), and ``columns`` is the JSON object of the row's stored values of ``seq``,
``kind``, ``at``, ``request_id``, ``fingerprint``, ``tool``, ``executable``,
``command``, ``cwd``, ``workspace_root``, ``session_id``, ``verdict``, ``source``,
``scope``, ``reason``, ``note``, ``justification``, ``peer_pid``, ``latency_ms`` and
``body`` — ``body`` as its stored text, which is itself the canonical JSON of the body
object. ``canonical`` is the chain's own encoding, frozen since the first history was
written: keys sorted by code point, no whitespace, UTF-8, floats in Python's shortest
round-trip form (``3.0``, not RFC 8785's ``3``), null for absent numbers. It is not
:func:`console.contract.strictjson.canonical` (RFC 8785, for fingerprints): changing
the chain's encoding would make every stored history fail ``verify``.
Seqs are contiguous from 1, so a deleted, inserted or reordered row breaks either the
seq sequence, a row's own hash (``seq`` is hashed) or the next row's ``prev_hash``.

A chain alone cannot show that its newest rows were cut off, so the newest
``(seq, hash)`` is anchored twice: in the ``meta`` table in the same transaction as the
rows, and in ``<db>.head``, a small file beside the database. The file is written
before each commit with the batch as *pending* and again after it as *committed*, so
after a crash at any point the database's tail is one of the two it names.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from console.contract import strictjson

GENESIS = "0" * 64
HEAD_SUFFIX = ".head"
_HEAD_SIZE = 512

# The chain's encoding (see the module docstring); frozen: stored hashes depend on it.
canonical = msgspec.json.Encoder(order="sorted").encode


def row_hash(prev_hash: str, columns: Mapping[str, Any]) -> str:
    """The hash of one row given its predecessor's hash; see the module docstring."""
    return hashlib.sha256(prev_hash.encode("ascii") + canonical(columns)).hexdigest()


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where the chain ended at the last commit, and the batch that was being committed."""

    store_id: str
    seq: int
    hash: str
    pending_seq: int | None = None
    pending_hash: str | None = None

    def accepts(self, seq: int, hash_: str) -> bool:
        """Whether a database whose newest row is ``(seq, hash_)`` agrees with this anchor."""
        if (seq, hash_) == (self.seq, self.hash):
            return True
        return (seq, hash_) == (self.pending_seq, self.pending_hash)

    def to_bytes(self) -> bytes:
        # Written twice per commit: the chain's encoder (in C), not json.dumps.
        text = canonical(
            {
                "v": 1,
                "store_id": self.store_id,
                "seq": self.seq,
                "hash": self.hash,
                "pending_seq": self.pending_seq,
                "pending_hash": self.pending_hash,
            }
        )
        if len(text) >= _HEAD_SIZE:
            raise ValueError("head anchor does not fit its record")
        return text + b" " * (_HEAD_SIZE - 1 - len(text)) + b"\n"

    @classmethod
    def from_bytes(cls, data: bytes) -> Anchor:
        """Parse a head file; raises ValueError when it is not a valid anchor."""
        try:
            d = strictjson.loads(data.strip())
        except strictjson.StrictJSONError as exc:
            raise ValueError(f"head file is not a valid anchor ({exc.code})") from None
        if not isinstance(d, dict) or d.get("v") != 1:
            raise ValueError("head file is not a version 1 anchor")
        try:
            anchor = cls(
                store_id=d["store_id"],
                seq=d["seq"],
                hash=d["hash"],
                pending_seq=d["pending_seq"],
                pending_hash=d["pending_hash"],
            )
        except KeyError as exc:
            raise ValueError(f"head file lacks {exc.args[0]}") from None
        if not isinstance(anchor.seq, int) or not isinstance(anchor.hash, str):
            raise ValueError("head file has a malformed seq or hash")
        return anchor


class HeadFile:
    """The ``<db>.head`` anchor, held open (and flock-ed by the store) for its lifetime.

    Updated in place with one ``pwrite`` of a fixed-size record: a rename per commit
    costs about as much as the commit itself on ext4, and a single small write is atomic
    against a process crash. It is not fsync-ed, so after a power loss it can lag the
    database; :meth:`Store.open` notices and, since a lag cannot be told from rows forged
    together with the meta row, flags the rows past the anchor (a ``daemon`` event
    ``unanchored``) until the operator accepts them; their grants wait meanwhile. It sits
    beside the database, so it proves nothing against someone who can write both: for
    that, ``history anchor --to FILE`` keeps a copy elsewhere.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def open(cls, path: str) -> tuple[HeadFile, bool]:
        """Open (creating 0600 if absent); returns the file and whether it was created."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
            created = False
        except FileNotFoundError:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            created = True
        return cls(fd), created

    @classmethod
    def open_readonly(cls, path: str) -> HeadFile | None:
        """Open for reading only; None when there is no head file."""
        try:
            return cls(os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW))
        except FileNotFoundError:
            return None

    def read_bytes(self) -> bytes:
        return os.pread(self.fd, _HEAD_SIZE + 1, 0)

    def read(self) -> Anchor | None:
        """The anchor, or None when the file is empty; ValueError when it is garbage."""
        data = self.read_bytes()
        if not data:
            return None
        return Anchor.from_bytes(data)

    def write(self, anchor: Anchor, *, sync: bool = False) -> None:
        data = anchor.to_bytes()
        written = os.pwrite(self.fd, data, 0)
        if written != len(data):
            raise OSError(f"short write to the head file ({written} of {len(data)} bytes)")
        if sync:
            os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)
