"""What the console benchmarks share: a throw-away daemon, the headless app, percentiles."""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from console.client import Client
from console.client.spawn import start_daemon
from console.demo import Demo
from console.locations import Locations, locate
from console.store import Store, daemon_event
from console.tui.app import ConsoleApp
from console.tui.settings.config import Config, Notifications
from console.tui.settings.prepared import prepare

POLICY = 'approval = "untrusted"\napproval_timeout_s = 3600\n'


@contextmanager
def daemon(policy: str = POLICY, history: Path | None = None) -> Iterator[tuple[Locations, Path]]:
    """A daemon on a fresh state dir (optionally over a copy of an existing history); yields (loc, workspace)."""
    base = Path(tempfile.mkdtemp(prefix="actui-", dir="/tmp"))
    loc = locate(base / "s")
    loc.state_dir.mkdir(mode=0o700)
    if "workspaces" not in policy:
        policy += f'workspaces = ["{base / "project"}"]\n'  # the benchmark's own workspace is trusted
    loc.policy.write_text(policy)
    if history is not None:
        shutil.copyfile(history, loc.database)
        shutil.copyfile(str(history) + ".head", str(loc.database) + ".head")
        # A history the daemon wrote ends with its "started" event; one built through the
        # Store API has none, and the daemon would look for undecided requests in all of it.
        with Store.open(loc.database) as store:
            store.append(daemon_event(at=time.time(), note="started")).result()
    ws = base / "project"
    (ws / ".git" / "hooks").mkdir(parents=True)
    try:
        start_daemon(loc, wait_s=120)
        yield loc, ws
    finally:
        try:
            with Client.connect(loc, role="operator", timeout_s=30) as c:
                c.call("daemon.stop")
        except Exception as exc:
            print(f"  (stopping the daemon: {exc})", file=sys.stderr)
        deadline = time.monotonic() + 30
        from console.client.spawn import running_pid

        while running_pid(loc) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.rmtree(base, ignore_errors=True)


def app_for(loc: Locations) -> ConsoleApp:
    settings = prepare(Config(notifications=Notifications(toast=False, bell=False, desktop="off")))
    return ConsoleApp(settings, state_dir=str(loc.state_dir))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return statistics.median(values)


__all__ = ["Demo", "app_for", "daemon", "median", "pct"]
