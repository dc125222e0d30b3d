"""Your terminal on a session, as if the program ran in it: `agent-console run`.

The terminal goes to raw mode; the session's screen (the attach snapshot) and then its
output are written as they come, keys go to the program, a resize follows the window.
When the program exits, the terminal is restored and the command exits with its status;
``Ctrl-]`` detaches and leaves it running (``agent-console sessions attach ID`` opens it
in the console again).

What reaches the terminal is the program's own output, as it would if the program ran
here without the console: this is the agent CLI's interface. (The console's panes show
a session through their own emulator instead.)
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import signal
import sys
import termios
import tty
from typing import Any

from console.client import AsyncClient, DaemonUnreachable, RPCError
from console.locations import Locations

DETACH = b"\x1d"  # Ctrl-]
# A snapshot starts with the emulator's whole palette (OSC 4 per colour): not for the
# operator's own terminal, whose colours are theirs.
_PALETTE = re.compile(rb"\x1b\]4;[^\x1b\x07]*(?:\x1b\\|\x07)")
INPUT_CHUNK = 4096


class Attached:
    def __init__(self, client: AsyncClient, session: str, out: int, inp: int) -> None:
        self.client = client
        self.session = session
        self.out = out
        self.inp = inp
        self.ended = asyncio.Event()
        self.detached = False
        self.reason = ""
        self._sending: asyncio.Queue[bytes] = asyncio.Queue()

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.out, view) :]
            except BlockingIOError:
                import select

                select.select([], [self.out], [])

    def on_output(self, params: dict[str, Any]) -> None:
        if params.get("session") == self.session:
            self._write(base64.b64decode(params.get("data_base64", "")))

    def on_snapshot(self, params: dict[str, Any]) -> None:
        if params.get("session") == self.session:
            snapshot = _PALETTE.sub(b"", base64.b64decode(params.get("snapshot_base64", "")))
            self._write(b"\x1b[H\x1b[2J" + snapshot)

    def on_ended(self, params: dict[str, Any]) -> None:
        if params.get("session") == self.session:
            self.reason = str(params.get("reason", ""))
            self.ended.set()

    def on_input(self) -> None:
        try:
            data = os.read(self.inp, INPUT_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        if not data:
            return
        if DETACH in data:
            data = data[: data.index(DETACH)]
            self.detached = True
        if data:
            self._sending.put_nowait(data)
        if self.detached:
            self.ended.set()

    async def send_loop(self) -> None:
        while True:
            data = await self._sending.get()
            payload = {"session": self.session, "data_base64": base64.b64encode(data).decode("ascii")}
            for _ in range(200):
                try:
                    await self.client.call("sessions.input", payload)
                    break
                except RPCError as exc:
                    if "busy" not in exc.message:
                        return
                    await asyncio.sleep(0.01)

    async def resize(self) -> None:
        with contextlib.suppress(OSError, RPCError, DaemonUnreachable):
            cols, rows = os.get_terminal_size(self.out)
            await self.client.call("sessions.resize", {"session": self.session, "cols": cols, "rows": rows})


async def start(loc: Locations, params: dict[str, Any], *, attach: bool) -> int:
    """Start a session (``sessions.new`` with ``params``) and, with ``attach``, attach this
    terminal to it; else print its id. One connection does both."""
    client = await AsyncClient.connect(loc, role="operator", client="agent-console-run")
    try:
        session = (await client.call("sessions.new", params))["session"]["id"]
    except BaseException:
        await client.close()
        raise
    if not attach:
        await client.close()
        print(session)
        return 0
    return await _attached(client, session)


async def _attached(client: AsyncClient, session: str) -> int:
    """This terminal on ``session`` until it ends (its exit status) or ``Ctrl-]`` (0)."""
    out, inp = sys.stdout.fileno(), sys.stdin.fileno()
    att = Attached(client, session, out, inp)
    client.on_notification("session.output", att.on_output)
    client.on_notification("session.snapshot", att.on_snapshot)
    client.on_notification("session.ended", att.on_ended)
    loop = asyncio.get_running_loop()
    saved = termios.tcgetattr(inp) if os.isatty(inp) else None
    sender = asyncio.create_task(att.send_loop())
    try:
        first = await client.call("sessions.attach", {"session": session})
        if saved is not None:
            tty.setraw(inp)
        att.on_snapshot({"session": session, "snapshot_base64": first["snapshot_base64"]})
        await att.resize()
        loop.add_reader(inp, att.on_input)
        loop.add_signal_handler(signal.SIGWINCH, lambda: asyncio.ensure_future(att.resize()))
        await att.ended.wait()
    finally:
        with contextlib.suppress(Exception):
            loop.remove_reader(inp)
        with contextlib.suppress(Exception):
            loop.remove_signal_handler(signal.SIGWINCH)
        if saved is not None:
            termios.tcsetattr(inp, termios.TCSADRAIN, saved)
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender
    try:
        if att.detached:
            with contextlib.suppress(RPCError, DaemonUnreachable):
                await client.call("sessions.detach", {"session": session})
            sys.stderr.write(
                f"\r\nagent-console: detached; {session} keeps running "
                f"(agent-console sessions attach {session})\r\n"
            )
            return 0
        info = (await client.call("sessions.wait", {"session": session, "timeout_s": 5}))["session"]
        if info.get("exit_signal"):
            return 128 + int(info["exit_signal"])
        return int(info.get("exit_code") or 0)
    finally:
        await client.close()
