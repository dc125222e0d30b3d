"""A tripwire item as the daemon shows it (``tripwire.list``, ``tripwire.resolve`` and the
``watch`` topic's ``tripwire`` and ``tripwire_resolved`` events), typed.

Like the results (console/protocol/results.py), it allows unknown fields, so a newer
daemon may add a key; every key it has is always sent.
"""

from __future__ import annotations

import msgspec


class TripwireNotice(msgspec.Struct, frozen=True, kw_only=True):
    """A protected change the tripwire raised (console/daemon/tripwire.py): ``state`` is
    ``paused`` (the session was stopped and waits for the operator), ``exited`` (its
    writer had already ended), ``alerted`` (no session to stop: an operation wrote it, or
    an unknown writer did while one ran), ``kept`` (kept paused), or how it was settled
    (``resumed``, ``killed``, ``dismissed``). ``session`` is empty when no session is
    concerned; ``suspect``: the session was stopped because the writer could not be
    named and it was live in the workspace. ``stop_mode`` is how it was stopped ("cgroup
    freeze" or "process walk"). ``revertable``: the file's previous bytes are kept
    (``tripwire.revert``); ``reverted`` what the last revert did; ``thawed`` how often
    someone other than the operator resumed it (it was stopped again each time).
    ``display_path`` and ``sample`` are escaped paths; ``session_label``, ``pattern`` and
    ``summary`` may hold agent text."""

    id: str
    at: float
    session: str
    session_label: str
    workspace_root: str
    display_path: str
    pattern: str
    change: str  # added, modified, deleted…
    diff: str | None  # against the baseline; null when none was kept (not a small text file)
    state: str
    basis: str  # how the writer was known
    stopped: bool | None  # every process confirmed stopped (null: not known)
    stop_mode: str
    count: int  # a flood: how many changes under display_path
    sample: list[str]
    summary: str
    operation: str = ""
    suspect: bool = False
    revertable: bool = False
    reverted: str = ""
    thawed: int = 0

    @property
    def paused(self) -> bool:
        return self.state == "paused"
