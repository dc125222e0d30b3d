"""Which finished recordings to delete so that all of them fit the total quota.

A flood (``yes``) writes hundreds of megabytes in seconds, so each recording has its
own cap (recording.py) and the state directory a total. The total is kept by
deleting whole finished recordings, oldest first: a recording cut in the middle
would replay wrong, and the one still being written is the operator's evidence of
what is happening now, so it is never touched (live ones are bounded by their cap).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

MIB = 1024 * 1024


class Recording(NamedTuple):
    session_id: str
    ended_at: float  # sort key: oldest first
    size: int
    live: bool


def to_prune(recordings: Iterable[Recording], total_bytes: int | None) -> list[Recording]:
    """The finished recordings to delete, oldest first, until the rest fit in
    ``total_bytes``; every finished one when ``total_bytes`` is None."""
    items = list(recordings)
    finished = sorted(
        (r for r in items if not r.live and r.size > 0), key=lambda r: (r.ended_at, r.session_id)
    )
    if total_bytes is None:
        return finished
    used = sum(r.size for r in items)
    chosen: list[Recording] = []
    for r in finished:
        if used <= total_bytes:
            break
        chosen.append(r)
        used -= r.size
    return chosen
