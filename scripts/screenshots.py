"""Regenerate screenshots/*.svg from the demo: a real daemon, the simulated agent, the console.

    python scripts/screenshots.py [--out screenshots] [--size 130x42]

Runs exactly what ``agent-console demo`` runs (throw-away state dir, daemon, agent),
drives the console headless like an operator — approve some, deny some, grant one for
the session — and saves an SVG of each main screen. The README shows them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from console.demo import Demo  # noqa: E402
from console.tui.app import ConsoleApp  # noqa: E402
from console.tui.settings.config import Config, Notifications  # noqa: E402
from console.tui.settings.prepared import prepare  # noqa: E402


async def until(pilot, predicate, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("the demo did not get there in time")
        await pilot.pause(0.05)


def pane_text(app: ConsoleApp) -> str:
    """What the focused terminal pane paints."""
    panes = list(app.screen.query("TerminalPane"))
    if not panes:
        return ""
    pane = panes[0]
    return "\n".join("".join(seg.text for seg in pane.render_line(y)) for y in range(pane.size.height))


def find(app: ConsoleApp, needle: str) -> str | None:
    return next((e.request_id for e in app.pending if needle in e.item.get("command", "")), None)


async def shoot(out: Path, size: tuple[int, int], theme: str) -> list[Path]:
    saved: list[Path] = []
    with Demo(pace_s=0.2) as demo:
        settings = prepare(
            Config(notifications=Notifications(toast=False, bell=False, desktop="off")), theme=theme
        )
        app = ConsoleApp(settings, state_dir=str(demo.loc.state_dir))
        async with app.run_test(size=size) as pilot:
            queue = app.views["queue"]

            async def decide(needle: str, *keys: str) -> None:
                rid = await wait_for(needle)
                queue.select_request(rid)
                await pilot.pause(0.7)  # the typed-ahead guard wants the request on screen first
                await pilot.press(*keys)
                await until(pilot, lambda: app.pending.get(rid) is None)

            async def wait_for(needle: str) -> str:
                await until(pilot, lambda: find(app, needle) is not None, timeout=60)
                return find(app, needle)  # type: ignore[return-value]

            def save(name: str) -> None:
                path = out / f"{name}.svg"
                path.write_text(app.export_screenshot(title=f"agent-console — {name}"))
                saved.append(path)

            await decide("pytest -q", "a")
            await decide("pip install", "d")
            await decide("rm -rf build", "s")
            await until(pilot, lambda: app.pending.total >= 5, timeout=60)
            rid = await wait_for("curl -fsSL")
            queue.select_request(rid)
            await pilot.pause(0.5)
            save("queue")
            rid = await wait_for("find .")
            queue.select_request(rid)
            await pilot.pause(0.5)
            save("detail-hostile-text")
            rid = await wait_for(".git/hooks")
            queue.select_request(rid)
            await pilot.pause(0.5)
            save("detail-protected-path")
            await pilot.press("2")
            await until(pilot, lambda: app.screen.id == "history" and bool(app.screen.view.rows))
            await pilot.pause(0.5)
            save("history")
            await pilot.press("3")
            await until(
                pilot, lambda: app.screen.id == "grants" and bool(app.screen.query_one("GrantsView").rows)
            )
            await pilot.pause(0.5)
            save("grants")
            await pilot.press("question_mark")
            await pilot.pause(0.5)
            save("help")
            await pilot.press("escape", "1")

            # The agent's dev server: approve it, watch it in a pane, until the tripwire
            # stops it for writing a git hook.
            await decide("[dev] rebuilt", "a")
            await pilot.press("4")
            await until(pilot, lambda: app.screen.id == "sessions")
            await pilot.pause(1.0)
            await pilot.press("enter")
            await until(pilot, lambda: "change #3" in pane_text(app), timeout=30)
            save("sessions")
            await pilot.press("ctrl+b", "1")
            await until(pilot, lambda: find(app, "modified .git/hooks") is not None, timeout=90)
            queue.select_request(find(app, "modified .git/hooks"))  # type: ignore[arg-type]
            await pilot.pause(0.7)
            save("tripwire")
            await pilot.press("5")
            await until(pilot, lambda: app.screen.id == "watch")
            await pilot.pause(1.0)
            save("watch")
    return saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "screenshots")
    ap.add_argument("--size", default="130x42")
    ap.add_argument("--theme", default="dark")
    args = ap.parse_args()
    width, height = (int(n) for n in args.size.split("x"))
    args.out.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(shoot(args.out, (width, height), args.theme)):
        print(path)


if __name__ == "__main__":
    main()
