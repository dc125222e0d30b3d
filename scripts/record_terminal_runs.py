"""Record real programs' output for the snapshot tests (tests/terminal/test_terminal_snapshot_runs.py).

    python scripts/record_terminal_runs.py [--out tests/data/runs]

Each program runs on an 80x24 PTY with TERM=xterm-256color and is driven by a few
keys; every byte it writes is kept, in order, in OUT/NAME.bin. The recordings are
committed so the tests are exact and need none of the programs; run this again to
refresh them (vim and vttest differ a little between versions, which is fine).
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import tempfile
import time
from pathlib import Path

import ptyprocess

from console.terminal import Screen

COLS, ROWS = 80, 24

# apt's dpkg progress (apt-pkg/install-progress.cc): reserve the last row with a
# scroll region, then paint the status there between DECSC and DECRC while the log
# scrolls above it. A script, so the run needs no package to install.
APT_STYLE = r"""
import sys, time
w = sys.stdout.write
w("\n\0337\033[0;23r\0338\033[1A")
for i in range(0, 101, 5):
    w(f"Unpacking package-{i} (1.{i}-1) ...\n")
    w(f"\0337\033[24;0f\033[42m\033[30mProgress: [{i:3d}%]\033[49m\033[39m [" + "#" * (i // 5) + "." * (20 - i // 5) + "]\0338")
    sys.stdout.flush()
    time.sleep(0.01)
w("\0337\033[0;24r\0338\033[24;0f\033[J")
sys.stdout.flush()
"""


def run(argv: list[str], keys: list[tuple[float, bytes]], settle: float = 1.5) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "AGENT_CONSOLE"))}
    env.update(TERM="xterm-256color", COLORTERM="truecolor", LANG="C.UTF-8", HOME=tempfile.mkdtemp())
    proc = ptyprocess.PtyProcess.spawn(argv, dimensions=(ROWS, COLS), env=env)
    out = bytearray()

    # The terminal's answers (device attributes, cursor reports), as the daemon gives
    # them: vttest waits for them before it draws.
    def answer(reply: bytes) -> None:
        proc.write(reply)

    answers = Screen(COLS, ROWS, on_reply=answer)

    def drain(seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([proc.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(proc.fd, 65536)
                except OSError:
                    return
                out.extend(chunk)
                answers.feed(chunk)

    drain(settle)
    for wait, key in keys:
        proc.write(key)
        drain(wait)
    proc.terminate(force=True)
    return bytes(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests/data/runs")
    out = ap.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    sample = work / "sample.py"
    sample.write_text("".join(f"def f{i}(x):\n    return x * {i}  # line {i}\n" for i in range(40)))
    runs = {
        "vim": (
            ["vim", "-u", "NONE", "-N", "-c", "syntax on", str(sample)],
            [
                (0.3, b"10j"),
                (0.3, b"Oinserted \xc3\xa9 \xe2\x9c\x93"),
                (0.3, b"\x1b"),
                (0.3, b"G"),
                (0.3, b":q!\r"),
            ],
        ),
        "vttest": (
            ["vttest"],
            [
                (0.5, b"1\r"),
                (0.5, b"\r"),
                (0.5, b"\r"),
                (0.5, b"\r"),
                (0.5, b"2\r"),
                (0.5, b"\r"),
                (0.5, b"\r"),
            ],
        ),
        "apt-style": (["python3", "-c", APT_STYLE], []),
        "less": (
            ["less", str(sample)],
            [(0.3, b" "), (0.3, b"/line 3\r"), (0.3, b"q")],
        ),
    }
    for name, (argv, keys) in runs.items():
        if shutil.which(argv[0]) is None:
            print(f"skip {name}: {argv[0]} is not installed")
            continue
        data = run(argv, keys)
        (out / f"{name}.bin").write_bytes(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
