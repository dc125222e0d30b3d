"""Key press → repaint in the queue with 10,000 pending requests, against the same with 10.

    python benchmarks/tui_keypress.py [--pending 10000] [--presses 200]

A real daemon holds the pending requests (submitted by an agent process and left
waiting); the console connects, loads the whole queue, and the cursor is moved with
the down key. Two clocks stop after each press: the first frame painted after the key
(the queue's cursor moved) and the frame that shows the newly selected request's detail.
The reference is the same measurement in the same run with only 10 requests pending, so
the ratio says what a long queue costs. Target: the detail's median <= 16 ms with 10,000
pending (the cursor is painted in the same frame as the detail).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

from textual.screen import Screen
from tui_common import app_for, daemon, median, pct

from console.client import AsyncClient
from console.tui.widgets.request_detail import RequestDetail

paints: list[float] = []
details: list[float] = []
_original = Screen._compositor_refresh
_original_set_sections = RequestDetail.set_sections


def _recording_set_sections(self: RequestDetail, sections) -> None:  # type: ignore[no-untyped-def]
    # The detail paints through set_sections (set_text is set_sections with one section).
    _original_set_sections(self, sections)
    details.append(time.perf_counter())


def _recording_refresh(self: Screen) -> None:  # type: ignore[type-arg]
    _original(self)
    paints.append(time.perf_counter())


PER_CONNECTION = 64  # one identity per connection, and the daemon lets one identity have 64 waiting


async def agent(state_dir: str, ws: str, n: int) -> None:
    """The agent process: ask ``n`` times and wait (the requests stay pending)."""
    clients = [
        await AsyncClient.connect(state_dir, role="agent", client="bench-agent")
        for _ in range(-(-n // PER_CONNECTION))
    ]
    tasks = []
    for i in range(n):
        client = clients[i // PER_CONNECTION]
        op = {
            "kind": "process",
            "executable": "true",
            "workspace_root": ws,
            "network": "any",
            "args": [f"--n={i}", "--verbose"],
            "session_id": f"agent-{i % 7}",
            "justification": f"request {i} of a long queue",
        }
        tasks.append(asyncio.create_task(client.submit(op)))
        if i % 500 == 499:
            await asyncio.sleep(0.05)
    print("submitted", flush=True)
    await asyncio.gather(*tasks, return_exceptions=True)


async def wait_pending(loc, count: int) -> None:
    async with await AsyncClient.connect(loc, role="operator") as c:
        while (await c.call("daemon.status")).get("pending", 0) < count:
            await asyncio.sleep(0.2)


async def until(predicate, what: str) -> None:
    deadline = time.perf_counter() + 5
    while not predicate():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"no {what} within 5 s")
        await asyncio.sleep(0.0005)


async def presses(pilot, app, count: int) -> tuple[list[float], list[float]]:
    """Down 5, up 5, ... in the middle of the queue; times from the key to the paints."""
    queue = app.views["queue"]
    queue.view.cursor = 2 if len(app.pending) < 100 else len(app.pending) // 2
    await pilot.pause(0.2)
    cursor_ms, detail_ms = [], []
    for i in range(count):
        key = "down" if (i // 5) % 2 == 0 else "up"
        before = queue.detail.request_id
        t0 = time.perf_counter()
        await pilot.press(key)
        # Let the frames happen without a poller competing for the loop, then read the clocks.
        await asyncio.sleep(0.15)
        await until(lambda before=before: queue.detail.request_id != before, "detail change")
        cursor_ms.append((next(p for p in paints if p >= t0) - t0) * 1000)
        shown = next(d for d in details if d >= t0)
        detail_ms.append((next(p for p in paints if p >= shown) - t0) * 1000)
    return cursor_ms, detail_ms


async def run(pending: int, count: int) -> None:
    Screen._compositor_refresh = _recording_refresh  # type: ignore[method-assign]
    RequestDetail.set_sections = _recording_set_sections  # type: ignore[method-assign]
    with daemon() as (loc, ws):
        procs = []

        async def add(n: int) -> None:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                str(Path(__file__)),
                "--agent",
                str(loc.state_dir),
                str(ws),
                str(n),
                stdout=subprocess.PIPE,
            )
            procs.append(proc)
            await proc.stdout.readline()

        results = {}
        for label, total in (("reference: 10 pending", 10), (f"{pending:,} pending", pending)):
            t = time.perf_counter()
            await add(total if not procs else total - 10)
            await wait_pending(loc, total)
            queued_s = time.perf_counter() - t
            app = app_for(loc)
            t = time.perf_counter()
            async with app.run_test(size=(120, 40)) as pilot:
                while app.pending.total < total:
                    await pilot.pause(0.05)
                loaded_s = time.perf_counter() - t
                await pilot.pause(0.3)
                results[label] = await presses(pilot, app, count)
            print(f"  {label}: queued in {queued_s:.1f} s, console loaded the queue in {loaded_s:.2f} s")
        for proc in procs:
            proc.kill()
            await proc.wait()
    ref_cursor, ref_detail = results["reference: 10 pending"]
    big_cursor, big_detail = results[f"{pending:,} pending"]
    print(f"key press → repaint, {count} presses (down/up), median / p90 ms")
    print(
        f"  reference, 10 pending:      cursor {median(ref_cursor):6.2f} / {pct(ref_cursor, 90):6.2f}   "
        f"detail {median(ref_detail):6.2f} / {pct(ref_detail, 90):6.2f}"
    )
    print(
        f"  {pending:,} pending:{' ' * (16 - len(f'{pending:,}'))}cursor {median(big_cursor):6.2f} / "
        f"{pct(big_cursor, 90):6.2f}   detail {median(big_detail):6.2f} / {pct(big_detail, 90):6.2f}   "
        f"({median(big_cursor) / median(ref_cursor):.2f}x reference)"
    )
    print(f"  target: detail median <= 16 ms: {'met' if median(big_detail) <= 16 else 'NOT met'}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--agent":
        asyncio.run(agent(sys.argv[2], sys.argv[3], int(sys.argv[4])))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--presses", type=int, default=200)
    args = ap.parse_args()
    asyncio.run(run(args.pending, args.presses))


if __name__ == "__main__":
    main()
