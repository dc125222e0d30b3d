"""History search over 1,000,000 rows in the console, against the bare query over the socket.

    python benchmarks/tui_history_search.py [--rows 1000000] [--repeat 7]

The million-row history is the one ``benchmarks/store.py`` builds (through the Store
API, cached under /tmp/agent-console-bench); a copy goes into a throw-away state dir
and a real daemon serves it. For each search the console's history screen runs the
query exactly as typing in its search box does, and the clock stops when the first
page of rows is painted. The reference, measured in the same run, is the same
``history.query`` sent by a bare client on the same socket: the difference is what the
console adds. Target: <= 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from textual.screen import Screen
from tui_common import app_for, daemon, median, pct

from console.client import AsyncClient
from console.tui.model.historyquery import parse_query
from console.tui.screens.history import HistoryScreen
from console.tui.widgets.history_view import HistoryView

sys.path.insert(0, str(Path(__file__).parent))
import store as store_bench

SEARCHES = [
    "needle-7f3a",
    "hooks/pre-com",
    "git",
    "pytest verdict:deny",
    "source:timeout",
    "tool:git since:1h",
    "zzqx-nothing",
    "rm",
]

paints: list[float] = []
rows_set: list[float] = []
_paint = Screen._compositor_refresh
_set_rows = HistoryView.set_rows


def _recording_paint(self):  # type: ignore[no-untyped-def]
    _paint(self)
    paints.append(time.perf_counter())


def _recording_set_rows(self, rows, older):  # type: ignore[no-untyped-def]
    _set_rows(self, rows, older)
    rows_set.append(time.perf_counter())


def history_file(rows: int) -> Path:
    path = store_bench.CACHE / f"history-{rows}-s{store_bench.SCHEMA_VERSION}-g{store_bench.GENERATOR}.db"
    if not path.exists():
        store_bench.CACHE.mkdir(exist_ok=True)
        print(f"building a {rows:,}-row history with benchmarks/store.py's builder (cached) ...")
        store_bench.build(path, rows)
    return path


async def run(rows: int, repeat: int) -> None:
    Screen._compositor_refresh = _recording_paint  # type: ignore[method-assign]
    HistoryView.set_rows = _recording_set_rows  # type: ignore[method-assign]
    source = history_file(rows)
    print(f"history: {source} ({source.stat().st_size / 1e6:,.0f} MB), copied into a fresh state dir")
    with daemon(history=source) as (loc, _ws):
        app = app_for(loc)
        bare = await AsyncClient.connect(loc, role="operator", client="bench-ref")
        results: list[tuple[str, list[float], list[float], int]] = []
        async with app.run_test(size=(120, 40)) as pilot:
            while not app.link.connected.is_set():
                await pilot.pause(0.05)
            await pilot.press("2")
            screen = app.screen
            assert isinstance(screen, HistoryScreen)
            await pilot.pause(1.0)
            for text in SEARCHES:
                params = parse_query(text, time.time()).params
                raw_ms, console_ms = [], []
                found = 0
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    page = await bare.call("history.query", {**params, "limit": 200})
                    raw_ms.append((time.perf_counter() - t0) * 1000)
                    found = len(page["rows"])
                    await asyncio.sleep(0.05)
                    screen.search_box.value = text
                    if screen._debounce is not None:
                        screen._debounce.stop()
                    t0 = time.perf_counter()
                    screen.run_query()
                    deadline = time.perf_counter() + 30
                    while not (rows_set and rows_set[-1] >= t0 and paints[-1] >= rows_set[-1]):
                        if time.perf_counter() > deadline:
                            raise RuntimeError(f"no rows for {text!r} within 30 s")
                        await asyncio.sleep(0.001)
                    shown = next(p for p in paints if p >= rows_set[-1])
                    console_ms.append((shown - t0) * 1000)
                    await asyncio.sleep(0.3)  # let the count finish before the next search
                results.append((text, raw_ms, console_ms, found))
        await bare.close()
    print(f"history search over {rows:,} rows, {repeat} runs each: median / p90 ms")
    print(
        f"  {'search line':<24} {'rows':>5}  {'reference: bare query':>22}  {'console: typed → painted':>26}"
    )
    worst = 0.0
    for text, raw_ms, console_ms, found in results:
        worst = max(worst, pct(console_ms, 90))
        print(
            f"  {text:<24} {found:>5}  {median(raw_ms):9.1f} / {pct(raw_ms, 90):7.1f}     "
            f"{median(console_ms):9.1f} / {pct(console_ms, 90):7.1f}   ({median(console_ms) / median(raw_ms):.1f}x)"
        )
    print(f"  worst console p90 {worst:.1f} ms; target <= 100 ms: {'met' if worst <= 100 else 'NOT met'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    asyncio.run(run(args.rows, args.repeat))


if __name__ == "__main__":
    main()
