"""What holding every open in a directory costs: the price of stopping a deep writer before it writes.

    python benchmarks/open_gate.py [--opens 2000] [--rounds 5]

The tripwire's fast lane stops a writer of a deep protected path (``src/.env.local``)
about a millisecond after its write: the kernel reports the write after it happened. A
tight loop of small writes makes more than 100 writes in that millisecond, so "at most
100 further writes" would need the writer held *before* it writes: a ``FAN_OPEN_PERM``
mark on every directory of the workspace (console/watch/gate.py holds opens in the hot
directories only), which makes every open in the workspace wait for the daemon's
answer. This measures that price: another process opens and closes files in a directory,
with no mark and with the gate's mark, interleaved round by round (root; fanotify).

Printed: microseconds per open, median of the rounds, and the ratio gated / plain.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from console.watch import fanotify
from console.watch.gate import OpenGate

OPENER = """
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
names = [os.path.join(d, "f%d" % (i % 100)) for i in range(n)]
t = time.perf_counter()
for name in names:
    os.close(os.open(name, os.O_RDONLY))
print((time.perf_counter() - t) / n * 1e6)
"""


def opens(directory: str, n: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", OPENER, directory, str(n)], check=True, capture_output=True, text=True
    ).stdout
    return float(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--opens", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not fanotify.available():
        print("fanotify is not available here (root and a kernel with fanotify are needed)")
        return 1
    plain_dir, gated_dir = tempfile.mkdtemp(), tempfile.mkdtemp()
    for d in (plain_dir, gated_dir):
        for i in range(100):
            open(os.path.join(d, f"f{i}"), "w").close()
    gate = OpenGate(lambda pid: None)
    gate.mark(gated_dir)
    time.sleep(0.05)
    plain: list[float] = []
    gated: list[float] = []
    try:
        for _ in range(args.rounds):
            plain.append(opens(plain_dir, args.opens))
            gated.append(opens(gated_dir, args.opens))
    finally:
        gate.close()
    p, g = statistics.median(plain), statistics.median(gated)
    print(f"open + close, {args.opens} per round, median of {args.rounds} rounds")
    print(f"  plain directory            {p:7.1f} us per open")
    print(f"  held by the open gate      {g:7.1f} us per open   ratio to plain {g / p:.2f}")
    print(f"  ({gate.held} opens held and answered)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
