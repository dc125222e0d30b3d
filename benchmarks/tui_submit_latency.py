"""Submit → visible in the console's queue, p50/p99, against the daemon's own event latency.

    python benchmarks/tui_submit_latency.py [--requests 300] [--interval-ms 20]

An agent in its own process submits escalating requests one after another and cancels
each shortly after it is announced, so the queue stays short and every new row lands on
screen. Two clocks stop for each request: when the console first draws its row in the
queue (``QueueView.render_row``: the frame that shows it), and — the reference, in the
same run — when a bare operator connection in the agent's process receives the
``pending`` event. Both use CLOCK_MONOTONIC, so the processes' times compare. The
difference is what the console adds. Target: p99 <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

from tui_common import app_for, daemon, pct

from console.client import AsyncClient
from console.protocol.events import PendingAdded
from console.tui.widgets.queue_view import QueueView

shown: dict[str, float] = {}
_original = QueueView.render_row


def _recording_render_row(self, index, width, selected):  # type: ignore[no-untyped-def]
    entry = self.model.entry(index)
    shown.setdefault(entry.item.command.rsplit("--tag=", 1)[-1], time.perf_counter())
    return _original(self, index, width, selected)


async def agent(state_dir: str, ws: str, n: int, interval_s: float, hold_s: float) -> None:
    """The agent process: submit, note when the event is seen, cancel after ``hold_s``."""
    sent: dict[str, float] = {}
    seen: dict[str, float] = {}
    watcher = await AsyncClient.connect(state_dir, role="operator", client="bench-ref")
    await watcher.subscribe(["pending"])
    client = await AsyncClient.connect(state_dir, role="agent", client="bench-agent")

    async def cancel_later(rid: str) -> None:
        await asyncio.sleep(hold_s)
        with contextlib.suppress(Exception):  # already gone is fine
            await client.call("operation.cancel", {"request_id": rid})

    cancels: set[asyncio.Task[None]] = set()

    async def watch() -> None:
        async for event in watcher.events():
            if not isinstance(event, PendingAdded):
                continue
            request = event.request
            seen.setdefault(request.command.rsplit("--tag=", 1)[-1], time.perf_counter())
            task = asyncio.create_task(cancel_later(request.request_id))
            cancels.add(task)
            task.add_done_callback(cancels.discard)

    watching = asyncio.create_task(watch())
    tasks = []
    for i in range(n):
        op = {
            "kind": "process",
            "executable": "true",
            "workspace_root": ws,
            "network": "any",
            "args": [f"--tag={i}"],
            "session_id": "bench",
        }
        sent[str(i)] = time.perf_counter()
        tasks.append(asyncio.create_task(client.submit(op)))
        await asyncio.sleep(interval_s)
    await asyncio.wait(tasks, timeout=30)
    watching.cancel()
    await client.close()
    await watcher.close()
    print(json.dumps({"sent": sent, "seen": seen}))


async def run(requests: int, interval_s: float, hold_s: float) -> None:
    QueueView.render_row = _recording_render_row  # type: ignore[method-assign]
    with daemon() as (loc, ws):
        app = app_for(loc)
        async with app.run_test(size=(120, 40)) as pilot:
            while not app.link.connected.is_set():
                await pilot.pause(0.05)
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                str(Path(__file__)),
                "--agent",
                str(loc.state_dir),
                str(ws),
                str(requests),
                str(interval_s),
                str(hold_s),
                stdout=subprocess.PIPE,
            )
            out, _ = await proc.communicate()
            await pilot.pause(0.2)
    data = json.loads(out)
    sent, seen = data["sent"], data["seen"]
    console = [(shown[t] - sent[t]) * 1000 for t in sent if t in shown]
    reference = [(seen[t] - sent[t]) * 1000 for t in sent if t in seen]
    print(
        f"submit → visible: {len(console)} of {requests} requests drawn, one every {interval_s * 1000:.0f} ms, "
        f"each cancelled {hold_s * 1000:.0f} ms after it was announced"
    )
    print(
        f"  reference: pending event at a bare subscriber  p50 {pct(reference, 50):6.2f} ms  "
        f"p99 {pct(reference, 99):6.2f} ms"
    )
    print(
        f"  console:   row drawn in the queue              p50 {pct(console, 50):6.2f} ms  "
        f"p99 {pct(console, 99):6.2f} ms   (p99 {pct(console, 99) / pct(reference, 99):.2f}x reference; "
        f"the console's own share p99 {pct([shown[t] * 1000 - seen[t] * 1000 for t in sent if t in shown and t in seen], 99):.2f} ms)"
    )
    print(f"  target p99 <= 50 ms: {'met' if pct(console, 99) <= 50 else 'NOT met'}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--agent":
        state_dir, ws, n, interval, hold = sys.argv[2:7]
        asyncio.run(agent(state_dir, ws, int(n), float(interval), float(hold)))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--interval-ms", type=float, default=20.0)
    ap.add_argument("--hold-ms", type=float, default=100.0)
    args = ap.parse_args()
    asyncio.run(run(args.requests, args.interval_ms / 1000, args.hold_ms / 1000))


if __name__ == "__main__":
    main()
