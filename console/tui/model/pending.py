"""The pending queue as the console holds it: one model, changed only by the app's handlers.

Items are the daemon's pending requests (:class:`~console.protocol.pending.PendingItem`,
as ``pending.list`` lists them) and the watcher's tripwire items
(:class:`~console.tui.model.watch_model.TripwireEntry`). The order is attention first: tripwire
items, then requests with an escalation, then the rest, each in arrival order (the
daemon lists oldest first and announces new ones as they come). The view is the filtered
sequence the queue widget draws; every change returns the view index it touched so the
widget can repaint just the rows that moved. Sized for 10,000 pending: indexes are
found by bisection over ranks (tier, then arrival number), never by scanning.

A console watching several hosts (docs/remote.md) merges their queues here: each entry
carries its ``host`` ("" when the console watches one), and is found by its key,
:func:`queue_key` of host and request id, since two daemons may hand out the same id.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator

from console.protocol.pending import PendingItem
from console.tui.model.badges import Badge, badges
from console.tui.model.watch_model import TripwireEntry
from console.tui.model.words import request_words

QueueItem = PendingItem | TripwireEntry

AGENT_WORD = "agent:"  # a filter word for one kind of agent: agent:codex
TIER_SHIFT = 48  # rank = tier << TIER_SHIFT | arrival number
TRIPWIRE_TIER, ESCALATED_TIER, ORDINARY_TIER = 0, 1, 2


def queue_key(host: str, request_id: str) -> str:
    """The queue's key for a request (or tripwire item) of ``host``; the bare id when the
    console watches one host."""
    return f"{request_id}@{host}" if host else request_id


class Entry:
    __slots__ = ("agent_kind", "badges", "haystack", "host", "item", "key", "number", "rank", "request_id")

    def __init__(self, number: int, item: QueueItem, host: str = "") -> None:
        self.number = number
        self.item = item
        self.host = host
        self.request_id: str = item.request_id
        self.key = queue_key(host, self.request_id)
        if isinstance(item, TripwireEntry):
            self.badges: list[Badge] = []
            tier, tool, fingerprint = TRIPWIRE_TIER, "", ""
        else:
            self.badges = badges(item)
            tier = ESCALATED_TIER if self.badges else ORDINARY_TIER
            tool, fingerprint = item.operation.tool, item.fingerprint
        words = "" if isinstance(item, TripwireEntry) else request_words(item) or ""
        self.rank = tier << TIER_SHIFT | number
        # The kind of agent (claude-code, codex, …): the tool's part before its first ':'.
        self.agent_kind = tool.split(":", 1)[0].casefold() if ":" in tool else ""
        self.haystack = " ".join(
            (
                item.command,
                words,
                tool,
                item.session_id,
                fingerprint,
                self.request_id,
                host,
                *(b.label for b in self.badges),
            )
        ).casefold()

    @property
    def fingerprint(self) -> str:
        """The request's fingerprint; a tripwire item has none."""
        return "" if isinstance(self.item, TripwireEntry) else self.item.fingerprint

    def matches(self, words: list[str]) -> bool:
        """Every word is in the row's text; ``agent:KIND`` names one kind of agent exactly."""
        return all(
            self.agent_kind == w[len(AGENT_WORD) :] if w.startswith(AGENT_WORD) else w in self.haystack
            for w in words
        )


class PendingQueue:
    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._by_rank: dict[int, Entry] = {}
        self._view: list[int] = []  # ranks of the entries shown, ascending
        self._words: list[str] = []
        self._next = 0
        self._escalated = 0

    # --------------------------------------------------------------- reading

    def __len__(self) -> int:
        return len(self._view)

    @property
    def total(self) -> int:
        return len(self._entries)

    @property
    def filter_text(self) -> str:
        return " ".join(self._words)

    def entry(self, index: int) -> Entry:
        return self._by_rank[self._view[index]]

    def get(self, key: str) -> Entry | None:
        """The entry of ``key`` (:func:`queue_key`: the request id with one host)."""
        return self._entries.get(key)

    def index_of(self, key: str) -> int | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        i = bisect_left(self._view, entry.rank)
        return i if i < len(self._view) and self._view[i] == entry.rank else None

    def __iter__(self) -> Iterator[Entry]:
        return (self._by_rank[n] for n in self._view)

    def find_fingerprint(self, prefix: str) -> list[Entry]:
        prefix = prefix.strip().lower()
        return [e for e in self._entries.values() if e.fingerprint.startswith(prefix)]

    def escalated(self) -> int:
        """How many pending requests carry an escalation badge."""
        return self._escalated

    # --------------------------------------------------------------- changing

    def replace(self, items: Iterable[QueueItem], host: str | None = None) -> None:
        """Start over from a full listing (after connecting or reconnecting): of every
        host, or (``host`` given) of that host, the others' entries kept."""
        if host is None:
            self._entries.clear()
            self._by_rank.clear()
            self._view.clear()
            self._escalated = 0
        else:
            for entry in [e for e in self._entries.values() if e.host == host]:
                self._drop(entry)
            self._view = list(self._view_ranks())
        for item in items:
            self._append(item, host or "")

    def add(self, item: QueueItem, host: str = "") -> int | None:
        """Add a newly pending item; returns its view index, or None if the filter hides it."""
        key = queue_key(host, item.request_id)
        if key in self._entries:
            return None
        self._append(item, host)
        return self.index_of(key)

    def remove(self, key: str) -> int | None:
        """Drop a decided item; returns the view index it had, or None if it was not shown."""
        index = self.index_of(key)
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        del self._by_rank[entry.rank]
        self._escalated -= bool(entry.badges)
        if index is not None:
            del self._view[index]
        return index

    def set_filter(self, text: str) -> None:
        self._words = text.casefold().split()
        self._view = sorted(e.rank for e in self._entries.values() if e.matches(self._words))

    def _drop(self, entry: Entry) -> None:
        del self._entries[entry.key]
        del self._by_rank[entry.rank]
        self._escalated -= bool(entry.badges)

    def _view_ranks(self) -> Iterator[int]:
        return (r for r in self._view if r in self._by_rank)

    def _append(self, item: QueueItem, host: str = "") -> Entry:
        entry = Entry(self._next, item, host)
        self._next += 1
        self._entries[entry.key] = entry
        self._by_rank[entry.rank] = entry
        self._escalated += bool(entry.badges)
        if entry.matches(self._words):
            if not self._view or self._view[-1] < entry.rank:
                self._view.append(entry.rank)
            else:
                insort(self._view, entry.rank)
        return entry
