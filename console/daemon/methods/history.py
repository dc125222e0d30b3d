"""Reading the history: queries, one request's story, previous decisions, verification.

Results are bounded in bytes as well as rows: a page stops at 2 MiB (fewer rows than
``limit``, with the cursor to go on from), rows are read from the store in small bites
so one page of huge rows never sits in memory at once, and a row larger than 256 KiB is
sent with its body elided and its long texts cut (``elided: true``; `history export`
has it whole).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import msgspec
from msgspec import UNSET

from console.daemon.connection import CallContext, Handler
from console.daemon.quotas import MAX_RESULT_BYTES, MAX_ROW_BYTES
from console.protocol import jsonrpc
from console.protocol.history import KINDS
from console.protocol.jsonrpc import NOT_FOUND, RPCError
from console.protocol.records import HistoryRow
from console.protocol.requests import (
    HistoryAccept,
    HistoryDetail,
    HistoryPrevious,
    HistoryVerify,
)
from console.protocol.requests import HistoryQuery as HistoryQueryParams
from console.protocol.results import (
    HistoryAcceptResult,
    HistoryDetailResult,
    HistoryPreviousResult,
    HistoryQueryResult,
    HistoryVerifyResult,
)
from console.store import HistoryQuery, Store

# Rows read from the store at first, before their size is known.
FIRST_BITE = 4
MAX_BITE = 500
# Bytes of stored rows one page may read (elided rows are small to send, not to read).
MAX_READ_BYTES = 4 * MAX_RESULT_BYTES
# Texts of an elided row are cut to this many characters.
ELIDED_TEXT = 4096


def _elide(row: HistoryRow, size: int) -> HistoryRow:
    cut = {
        name: value[:ELIDED_TEXT]
        for name in row.__struct_fields__
        if isinstance(value := getattr(row, name), str) and len(value) > ELIDED_TEXT
    }
    return msgspec.structs.replace(row, **cut, body={}, elided=True, elided_bytes=size)


def _sized(record: dict[str, Any]) -> tuple[HistoryRow, int, int]:
    """The row as sent, its size as sent, and its size as stored (``record``: the store's
    dict of one record, every column and its body)."""
    row = HistoryRow(**record)
    raw = size = len(jsonrpc.encode(row))
    if size > MAX_ROW_BYTES:
        row = _elide(row, size)
        size = len(jsonrpc.encode(row))
    return row, size, raw


def bounded_page(store: Store, q: HistoryQuery) -> HistoryQueryResult:
    """One page of at most ``q.limit`` rows and :data:`MAX_RESULT_BYTES`, newest first."""
    ascending = q.after_seq is not None and q.before_seq is None
    kept: list[HistoryRow] = []  # in the order of travel
    used = 0
    read = 0  # bytes of the rows as stored: what the next bite will cost to read
    bite = min(q.limit, FIRST_BITE)
    cursor = q
    first_cursor: int | None = None  # the cursor behind the first row (older or newer side)
    first = True
    more = False
    while True:
        page = store.history(replace(cursor, limit=bite))
        records = list(reversed(page.records)) if ascending else page.records
        if first:
            first_cursor = page.older if ascending else page.newer
            first = False
        onward = page.newer if ascending else page.older
        for i, record in enumerate(records):
            row, size, raw = _sized(record.to_dict())
            read += raw
            if kept and used + size > MAX_RESULT_BYTES:
                more = True
                break
            kept.append(row)
            used += size
            if read > MAX_READ_BYTES and i + 1 < len(records):
                more = True  # many huge rows, each elided: stop reading, the cursor goes on
                break
            if len(kept) == q.limit:
                more = i + 1 < len(records) or onward is not None
                break
        if more or len(kept) >= q.limit or onward is None or not records:
            break
        if read > MAX_READ_BYTES:
            more = True  # read enough for one page; the cursor goes on
            break
        cursor = replace(q, after_seq=onward, before_seq=None) if ascending else replace(q, before_seq=onward)
        average = max(1, read // max(1, len(kept)))
        bite = max(1, min(q.limit - len(kept), MAX_BITE, (MAX_RESULT_BYTES - used) // average + 1))
    if not kept:
        return HistoryQueryResult(rows=[], older=None, newer=None)
    edge = kept[-1].seq if more else None
    if ascending:
        return HistoryQueryResult(rows=list(reversed(kept)), older=first_cursor, newer=edge)
    return HistoryQueryResult(rows=kept, older=edge, newer=first_cursor)


def bounded_detail(detail: dict[str, Any]) -> HistoryDetailResult:
    """One request's story within :data:`MAX_RESULT_BYTES`: big rows elided, the rest cut."""
    used = 0
    events: list[HistoryRow] = []
    truncated = False
    for record in detail["events"]:
        row, size, _ = _sized(record)
        if used + size > MAX_RESULT_BYTES:
            truncated = True
            break
        used += size
        events.append(row)
    by_seq = {r.seq: r for r in events}

    def pick(r: dict[str, Any] | None) -> HistoryRow | None:
        if r is None:
            return None
        return by_seq.get(r["seq"]) or _sized(r)[0]

    return HistoryDetailResult(
        request_id=detail["request_id"],
        request=pick(detail["request"]),
        decision=pick(detail["decision"]),
        outcome=pick(detail["outcome"]),
        file_events=[by_seq[r["seq"]] for r in detail["file_events"] if r["seq"] in by_seq],
        events=events,
        truncated=True if truncated else UNSET,
    )


async def query(ctx: CallContext, args: HistoryQueryParams) -> HistoryQueryResult:
    if any(k not in KINDS for k in args.kinds):
        raise RPCError(-32602, "kinds: each must be one of " + ", ".join(KINDS))
    q = HistoryQuery(
        kinds=args.kinds,
        verdict=args.verdict,
        source=args.source,
        tool=args.tool,
        agent=args.agent,
        session_id=args.session_id,
        fingerprint=args.fingerprint,
        request_id=args.request_id,
        since=args.since,
        until=args.until,
        search=args.search,
        before_seq=args.before_seq,
        after_seq=args.after_seq,
        limit=args.limit,
    )
    page = await asyncio.to_thread(bounded_page, ctx.services.store, q)
    if args.count:
        page = msgspec.structs.replace(page, count=await asyncio.to_thread(ctx.services.store.count, q))
    return page


async def detail(ctx: CallContext, args: HistoryDetail) -> HistoryDetailResult:
    rid = args.request_id
    found = await asyncio.to_thread(ctx.services.store.request_detail, rid)
    if found is None:
        raise RPCError(NOT_FOUND, f"no request {rid} in the history")
    return bounded_detail(found)


async def previous(ctx: CallContext, args: HistoryPrevious) -> HistoryPreviousResult:
    rows = await asyncio.to_thread(
        ctx.services.store.previous_decisions, args.tool, args.executable, args.limit
    )
    return HistoryPreviousResult(decisions=[HistoryRow(**r) for r in rows])


async def verify(ctx: CallContext, args: HistoryVerify) -> HistoryVerifyResult:
    report = await asyncio.to_thread(ctx.services.store.verify)
    return HistoryVerifyResult(**report.to_dict())


async def accept(ctx: CallContext, args: HistoryAccept) -> HistoryAcceptResult:
    """The operator accepts rows start-up flagged past the head anchor, through a seq;
    their grants are honoured from now on."""
    through, note = args.through_seq, args.note
    store = ctx.services.store
    accepted = await asyncio.wrap_future(store.accept(through, time.time(), note))
    if accepted:
        await ctx.services.broker.grants.load()  # the grants created in them now count
        # Consoles show unaccepted rows from the status: they see the change at once.
        ctx.services.status_changed()
    return HistoryAcceptResult(accepted=list(accepted), unaccepted=list(store.unaccepted_rows))


METHODS: dict[str, Handler] = {
    "history.query": query,
    "history.detail": detail,
    "history.previous": previous,
    "history.verify": verify,
    "history.accept": accept,
}
