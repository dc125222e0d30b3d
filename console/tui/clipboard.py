"""Copying out of the console, and saying truthfully where the text went.

Textual's ``copy_to_clipboard`` writes OSC 52 to the terminal. Inside tmux that arrives
only when tmux's ``set-clipboard`` is ``on``: with its default ``external`` (and ``off``)
tmux drops an application's OSC 52, and "copied" would be a lie. So inside tmux the text
also goes into tmux's own paste buffer (``load-buffer``; ``-w`` also forwards it to the
outer terminal's clipboard where tmux can), and the status says which.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

TMUX_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True)
class Delivery:
    ok: bool
    where: str  # for the status line: "the terminal's clipboard (OSC 52)", "tmux's buffer", …


async def _tmux(*args: str, env: dict[str, str], data: bytes | None = None) -> tuple[int, str]:
    try:
        proc = await asyncio.create_subprocess_exec(
            "tmux",
            *args,
            env=env,
            stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        out, _ = await asyncio.wait_for(proc.communicate(data), TMUX_TIMEOUT_S)
    except (OSError, TimeoutError):
        return 127, ""
    return proc.returncode or 0, out.decode("utf-8", "replace").strip()


async def deliver(text: str, *, osc52_sent: bool, env: dict[str, str] | None = None) -> Delivery:
    """Where ``text`` went, after the OSC 52 the caller already wrote (``osc52_sent``)."""
    env = dict(os.environ) if env is None else env
    if not env.get("TMUX"):
        if osc52_sent:
            return Delivery(True, "the terminal's clipboard (OSC 52: your terminal must allow it)")
        return Delivery(False, "nowhere: the terminal cannot receive it")
    code, setting = await _tmux("show-options", "-gv", "set-clipboard", env=env)
    forwarded = code == 0 and setting == "on"
    loaded, _ = await _tmux("load-buffer", "-w", "-", env=env, data=text.encode())
    if loaded != 0:
        loaded, _ = await _tmux("load-buffer", "-", env=env, data=text.encode())  # tmux before 3.2: no -w
    if loaded == 0:
        extra = (
            "" if forwarded else f" (tmux's set-clipboard is {setting or 'unknown'}: the OSC 52 was dropped)"
        )
        return Delivery(True, "tmux's paste buffer: prefix ] pastes it" + extra)
    if forwarded:
        return Delivery(True, "the terminal's clipboard, through tmux (set-clipboard on)")
    return Delivery(
        False, f"nowhere: tmux's set-clipboard is {setting or 'unknown'} and its buffer refused it"
    )
