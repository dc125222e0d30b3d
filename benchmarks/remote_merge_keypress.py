"""Key press → repaint in a console merging 3 hosts over SSH, 1,000 pending each, against
the same console with 10 pending on each.

    python benchmarks/remote_merge_keypress.py [--pending 1000] [--presses 200]

Three "hosts": real OpenSSH sshd instances on 127.0.0.2-4, each with its own daemon and
state (tests/support/sshd.py) and an agent process on it leaving requests pending. The
console opens one link per host (a direct-streamlocal channel each), merges the three
queues, and the cursor is moved with the down and up keys; two clocks stop after each
press, as in benchmarks/tui_keypress.py (whose measurement this reuses): the first frame
painted after the key, and the frame that shows the newly selected request's detail.
The reference is the same measurement in the same run with 10 pending on each host.
Target: median <= 16 ms with 3 × 1,000.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import tui_keypress  # noqa: E402
from support.sshd import ssh_lab  # noqa: E402
from textual.screen import Screen  # noqa: E402
from tui_common import median, pct  # noqa: E402

from console.remote.contexts import Target  # noqa: E402
from console.remote.hostset import HostSet  # noqa: E402
from console.remote.url import parse_host_url  # noqa: E402
from console.tui.app import ConsoleApp  # noqa: E402
from console.tui.settings.config import Config, Notifications  # noqa: E402
from console.tui.settings.prepared import prepare  # noqa: E402
from console.tui.widgets.request_detail import RequestDetail  # noqa: E402

POLICY = 'approval = "untrusted"\napproval_timeout_s = 3600\n'


async def run(pending: int, count: int) -> None:
    Screen._compositor_refresh = tui_keypress._recording_refresh  # type: ignore[method-assign]
    RequestDetail.set_sections = tui_keypress._recording_set_sections  # type: ignore[method-assign]
    with ssh_lab("a", "b", "c", policy=POLICY) as lab:
        procs: list[subprocess.Popen[bytes]] = []

        def add(n: int) -> None:
            for host in lab.hosts:
                ws = host.base / f"ws{len(procs)}" / "project"
                (ws / ".git").mkdir(parents=True)
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        str(ROOT / "benchmarks" / "tui_keypress.py"),
                        "--agent",
                        str(host.daemon.state_dir),
                        str(ws),
                        str(n),
                    ],
                    stdout=subprocess.PIPE,
                )
                procs.append(proc)
                assert proc.stdout is not None
                proc.stdout.readline()

        results = {}
        try:
            for label, each in (("reference: 3 x 10 pending", 10), (f"3 x {pending:,} pending", pending)):
                t = time.perf_counter()
                add(each if not procs else each - 10)
                for host in lab.hosts:
                    await tui_keypress.wait_pending(host.daemon.loc, each)
                queued_s = time.perf_counter() - t
                targets = [Target(h.name, parse_host_url(h.url())) for h in lab.hosts]
                settings = prepare(
                    Config(notifications=Notifications(toast=False, bell=False, desktop="off"))
                )
                app = ConsoleApp(settings, hosts=HostSet(targets, None))
                t = time.perf_counter()
                async with app.run_test(size=(120, 40)) as pilot:
                    while app.pending.total < 3 * each:
                        await pilot.pause(0.05)
                    loaded_s = time.perf_counter() - t
                    await pilot.pause(0.3)
                    results[label] = await tui_keypress.presses(pilot, app, count)
                print(f"  {label}: queued in {queued_s:.1f} s, console merged the queues in {loaded_s:.2f} s")
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
    ref_cursor, ref_detail = results["reference: 3 x 10 pending"]
    big_cursor, big_detail = results[f"3 x {pending:,} pending"]
    print(f"key press → repaint, {count} presses (down/up), median / p90 ms")
    print(
        f"  reference, 3 x 10:    cursor {median(ref_cursor):6.2f} / {pct(ref_cursor, 90):6.2f}   "
        f"detail {median(ref_detail):6.2f} / {pct(ref_detail, 90):6.2f}"
    )
    print(
        f"  3 x {pending:,}:{' ' * (14 - len(f'{pending:,}'))}cursor {median(big_cursor):6.2f} / "
        f"{pct(big_cursor, 90):6.2f}   detail {median(big_detail):6.2f} / {pct(big_detail, 90):6.2f}   "
        f"({median(big_cursor) / median(ref_cursor):.2f}x reference)"
    )
    print(f"  target median <= 16 ms: {'met' if median(big_cursor) <= 16 else 'NOT met'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pending", type=int, default=1000)
    ap.add_argument("--presses", type=int, default=200)
    args = ap.parse_args()
    asyncio.run(run(args.pending, args.presses))


if __name__ == "__main__":
    main()
