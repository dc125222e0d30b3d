"""The daemon's grants: mirrored from the store, added, revoked, and their uses counted.

Every submit looks its grants up, so they are read from an index in memory; a change is
written to the store first and enters the index only once committed. A ``once`` grant is
consumed in the index on the loop, before any await, so exactly one request uses it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

from console.daemon.durable import Durable
from console.daemon.errors import Conflict, InvalidParams, NotFound
from console.daemon.events import EventHub
from console.policy import Grant, GrantScope
from console.protocol.events import GrantAdded, GrantsRevoked, GrantsUsed
from console.protocol.grants import GrantObject
from console.store import Store, StoreUnavailable

log = logging.getLogger("agent-console.broker")

# A fingerprint prefix shorter than this could name the wrong request or grant by accident.
MIN_PREFIX = 6
RULES_KEY = ""  # GrantIndex.by_fp's entry for the rules (no fingerprint is empty)


@dataclass
class GrantIndex:
    """Grants and deny-rules by fingerprint, mirrored from the store."""

    by_fp: dict[str, list[Grant]] = field(default_factory=dict)
    by_id: dict[str, Grant] = field(default_factory=dict)

    def put(self, grant: Grant) -> None:
        if grant.scope is GrantScope.RULE:
            self.by_fp.pop(RULES_KEY, None)  # built again on the next evaluation
        old = self.by_id.get(grant.id)
        if old is not None:
            self.by_fp[old.fingerprint] = [g for g in self.by_fp.get(old.fingerprint, []) if g.id != grant.id]
        self.by_id[grant.id] = grant
        self.by_fp.setdefault(grant.fingerprint, []).append(grant)

    def for_fingerprint(self, fp: str) -> list[Grant]:
        return self.by_fp.get(fp, [])

    def for_operation(self, fp: str) -> list[Grant]:
        """The grants of ``fp`` and every rule (rules match by words, not fingerprint)."""
        rules = self.by_fp.get(RULES_KEY)
        if rules is None:
            rules = self.by_fp[RULES_KEY] = [g for g in self.by_id.values() if g.scope is GrantScope.RULE]
        return [*self.by_fp.get(fp, []), *rules] if rules else self.by_fp.get(fp, [])


class GrantBook:
    """The grants the broker decides with, and the bookkeeping around them."""

    def __init__(self, store: Store, events: EventHub, clock: Callable[[], float], durable: Durable) -> None:
        self.store = store
        self.events = events
        self.clock = clock
        self._durable = durable
        self.index = GrantIndex()
        self._uses: dict[str, tuple[int, float, str]] = {}  # grant id -> (uses, last at, last request)

    async def load(self) -> None:
        """Mirror the store's active grants (again after history rows are accepted)."""
        grants = await asyncio.to_thread(self.store.grants, include_inactive=False)
        for g in grants:
            self.index.put(g)

    # ------------------------------------------------------------------ lookups

    def put(self, grant: Grant) -> None:
        """Mirror ``grant`` as the store holds it."""
        self.index.put(grant)

    def for_operation(self, fp: str) -> list[Grant]:
        """The grants an operation with fingerprint ``fp`` is evaluated against."""
        return self.index.for_operation(fp)

    # ------------------------------------------------------------------ uses

    def consume_once(self, grant: Grant, now: float) -> None:
        """Mark a ``once`` grant used in the index; call it before any await."""
        self.index.put(replace(grant, uses=grant.uses + 1, last_used_at=now))

    def record_use(self, grant: Grant, now: float, rid: str) -> Future[bool] | None:
        """Count a use of ``grant`` by request ``rid``. A ``once`` grant's use is written
        with the decision (the returned write); a standing grant's is counted here and
        written by :meth:`flush_uses`."""
        if grant.scope is GrantScope.ONCE:
            return self.store.use_grant(grant.id, now, request_id=rid)
        self._count_use(grant.id, now, rid)
        return None

    def _count_use(self, grant_id: str, now: float, rid: str) -> None:
        """A standing grant's uses are bookkeeping, not authority: they are written in one
        event per grant and second (:meth:`flush_uses`) instead of one per decision."""
        entry = self._uses.get(grant_id)
        if entry is None:
            self._uses[grant_id] = (1, now, rid)
        else:
            self._uses[grant_id] = (entry[0] + 1, now, rid)

    async def flush_uses(self) -> None:
        uses, self._uses = self._uses, {}
        if not uses:
            return
        futures = [self.store.use_grant(g, at, request_id=rid, count=n) for g, (n, at, rid) in uses.items()]
        for f in futures:
            try:
                await self._durable(f)
            except StoreUnavailable as exc:
                log.warning("could not record grant uses: %s", exc)
        self.events.publish(GrantsUsed(grant_ids=sorted(uses)))

    async def flush_uses_forever(self, interval_s: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval_s)
            await self.flush_uses()

    # ------------------------------------------------------------------ changes

    async def write(self, grant: Grant, shown: GrantObject) -> None:
        """Store ``grant`` with what it was granted for; it applies only after :meth:`admit`."""
        await self._durable(self.store.add_grant(grant, tool=shown.tool, summary=shown.summary))

    def admit(self, grant: Grant, shown: GrantObject) -> None:
        """A stored grant applies from now on; the consoles hear of it."""
        self.index.put(grant)
        self.events.publish(GrantAdded(grant=shown))

    async def add(self, grant: Grant, *, tool: str = "", summary: str = "") -> Grant:
        shown = GrantObject.of(grant, tool, summary)
        await self.write(grant, shown)
        self.admit(grant, shown)
        return grant

    async def revoke(self, target: str) -> list[str]:
        """Revoke a grant by id, or every active grant and deny-rule for a fingerprint (prefix)."""
        now = self.clock()
        if target in self.index.by_id:
            chosen = [self.index.by_id[target]]
        elif len(target) < MIN_PREFIX or not all(c in "0123456789abcdef" for c in target):
            raise InvalidParams(
                f"target: a grant id (g-…) or at least {MIN_PREFIX} hex digits of a fingerprint",
            )
        else:
            chosen = [
                g
                for g in self.index.by_id.values()
                if g.fingerprint.startswith(target) and g.revoked_at is None
            ]
            if len({g.fingerprint for g in chosen}) > 1:
                raise Conflict(f"fingerprint prefix {target} matches several operations; give more digits")
        chosen = [g for g in chosen if g.revoked_at is None]
        if not chosen:
            raise NotFound(f"no active grant {target}")
        revoked = []
        for g in chosen:
            if await self._durable(self.store.revoke_grant(g.id, now)):
                self.index.put(replace(g, revoked_at=now))
                revoked.append(g.id)
        self.events.publish(GrantsRevoked(grant_ids=revoked))
        return revoked
