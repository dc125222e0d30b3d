"""Your terminal on a session, as if the program ran in it: `agent-console run`.

The terminal goes to raw mode; the session's screen (the attach snapshot) and then its
output are written as they come, keys go to the program, a resize follows the window.
When the program exits, the terminal is restored and the command exits with its status;
``Ctrl-]`` detaches and leaves it running (``agent-console sessions attach ID`` opens it
in the console again).

What reaches the terminal is the program's own output, as it would if the program ran
here without the console: this is the agent CLI's interface. (The console's panes show
a session through their own emulator instead.)

One blocking connection and a ``select`` loop, no asyncio: this runs before the agent
starts, and every millisecond of it is the agent's start-up.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import select
import signal
import sys
import termios
import tty

from console.cli.wire import OperatorWire, Refused

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from console.locations import Locations

DETACH = b"\x1d"  # Ctrl-]
INPUT_CHUNK = 4096
# A snapshot starts with the emulator's whole palette (OSC 4 per colour): not for the
# operator's own terminal, whose colours are theirs.
_PALETTE = re.compile(rb"\x1b\]4;[^\x1b\x07]*(?:\x1b\\|\x07)")


class Attached:
    def __init__(self, client: OperatorWire, session: str, out: int, inp: int) -> None:
        self.client = client
        self.session = session
        self.out = out
        self.inp = inp
        self.ended = False
        self.detached = False
        self.resized = True  # size the session to this terminal once attached

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.out, view) :]
            except BlockingIOError:
                select.select([], [self.out], [])

    def notified(self, method: str, params: dict[str, Any]) -> None:
        if params.get("session") != self.session:
            return
        if method == "session.output":
            self._write(base64.b64decode(params.get("data_base64", "")))
        elif method == "session.snapshot":
            self.snapshot(params.get("snapshot_base64", ""))
        elif method == "session.ended":
            self.ended = True

    def snapshot(self, data_base64: str) -> None:
        self._write(b"\x1b[H\x1b[2J" + _PALETTE.sub(b"", base64.b64decode(data_base64)))

    def typed(self) -> None:
        try:
            data = os.read(self.inp, INPUT_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        if DETACH in data:
            data = data[: data.index(DETACH)]
            self.detached = True
        if data:
            self.send(data)

    def send(self, data: bytes) -> None:
        payload = {"session": self.session, "data_base64": base64.b64encode(data).decode("ascii")}
        for _ in range(200):
            try:
                self.client.call("sessions.input", payload, on_notification=self.notified)
                return
            except Refused as exc:
                if "busy" not in exc.message:
                    return
                select.select([], [], [], 0.01)

    def resize(self) -> None:
        self.resized = False
        with contextlib.suppress(OSError, Refused):
            cols, rows = os.get_terminal_size(self.out)
            self.client.call(
                "sessions.resize",
                {"session": self.session, "cols": cols, "rows": rows},
                on_notification=self.notified,
            )

    def loop(self, wakeup: int) -> None:
        """Until the session ends or Ctrl-]: its output to the terminal, keys to it, and a
        resize whenever a signal (SIGWINCH) writes to ``wakeup``. Every call may bring the
        end with its answer, so the loop looks again before it waits."""
        while not (self.ended or self.detached):
            if self.resized:
                self.resize()
                continue
            if self.client.buffered():
                self.client.pump(self.notified)
                continue
            sock = self.client.fileno()
            ready, _, _ = select.select([sock, self.inp, wakeup], [], [])
            if wakeup in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wakeup, 512)
            if sock in ready:
                self.client.pump(self.notified)
            elif self.inp in ready:
                self.typed()


def start(loc: Locations, params: dict[str, Any], *, attach: bool) -> int:
    """Start a session (``sessions.new`` with ``params``) and, with ``attach``, attach this
    terminal to it until it ends (its exit status) or ``Ctrl-]`` (0); else print its id."""
    with OperatorWire.connect(loc, client="agent-console-run", timeout_s=30) as client:
        session = client.call("sessions.new", params)["session"]["id"]
        if not attach:
            print(session)
            return 0
        return _attached(client, session)


def _attached(client: OperatorWire, session: str) -> int:
    out, inp = sys.stdout.fileno(), sys.stdin.fileno()
    att = Attached(client, session, out, inp)
    saved = termios.tcgetattr(inp) if os.isatty(inp) else None
    wakeup_r, wakeup_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    previous = signal.signal(signal.SIGWINCH, lambda *_: setattr(att, "resized", True))
    previous_fd = signal.set_wakeup_fd(wakeup_w)
    try:
        first = client.call("sessions.attach", {"session": session}, on_notification=att.notified)
        if saved is not None:
            tty.setraw(inp)
        att.snapshot(first["snapshot_base64"])
        att.loop(wakeup_r)
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGWINCH, previous)
        os.close(wakeup_r)
        os.close(wakeup_w)
        if saved is not None:
            termios.tcsetattr(inp, termios.TCSADRAIN, saved)
    if att.detached:
        with contextlib.suppress(Refused):
            client.call("sessions.detach", {"session": session})
        sys.stderr.write(
            f"\r\nagent-console: detached; {session} keeps running (agent-console sessions attach {session})\r\n"
        )
        return 0
    info = client.call("sessions.wait", {"session": session, "timeout_s": 5})["session"]
    if info.get("exit_signal"):
        return 128 + int(info["exit_signal"])
    return int(info.get("exit_code") or 0)
