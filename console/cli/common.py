"""What every subcommand shares: state dir, clients, reading inputs, one-line failures.

The failure, exit codes and state-dir option are console/cli/basics.py's (re-exported here),
which `agent-console run` uses without loading the client.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from typing import Any, NoReturn

from console.cli.basics import EXIT_DENIED as EXIT_DENIED
from console.cli.basics import EXIT_INVALID as EXIT_INVALID
from console.cli.basics import EXIT_OK as EXIT_OK
from console.cli.basics import EXIT_UNREACHABLE as EXIT_UNREACHABLE
from console.cli.basics import CLIError as CLIError
from console.cli.basics import add_host as add_host
from console.cli.basics import add_state_dir as add_state_dir
from console.cli.basics import locations as locations
from console.client import Client, DaemonUnreachable, ResultError, RPCError
from console.contract.problem import Problem
from console.locations import Locations, UnsafeLocation
from console.protocol.jsonrpc import INVALID_PARAMS
from console.protocol.procs import agent_process_pid
from console.remote.contexts import ENV_HOST, ContextError, Target, hosts_path, load_contexts


def hosts(args: argparse.Namespace) -> list[Target]:
    """The hosts an operator command talks to: ``--host``, $AGENT_CONSOLE_HOST, the
    current named host, else this machine (console/remote/contexts.py)."""
    try:
        contexts = load_contexts(hosts_path(getattr(args, "state_dir", None)))
        return contexts.resolve(getattr(args, "host", None), os.environ.get(ENV_HOST))
    except ContextError as exc:
        raise CLIError(str(exc)) from None


def one_host(args: argparse.Namespace) -> Target:
    found = hosts(args)
    if len(found) != 1:
        raise CLIError(
            f"this command talks to one host, and {', '.join(t.name for t in found)} are named; "
            "give one with --host (the console takes several)"
        )
    return found[0]


def local_files(args: argparse.Namespace, what: str) -> Locations:
    """This machine's state, for a command that reads or runs it here (refused when the
    operator's host is another machine, which it would silently not be about)."""
    target = one_host(args)
    if not target.local:
        raise CLIError(
            f"{what} works on this machine's files, and the host is {target.name}: run it there "
            f"(ssh {target.url.address if target.url else target.name} agent-console …)"
        )
    return locations(args)


def connect(args: argparse.Namespace, role: str, *, timeout_s: float | None = 30.0) -> Client:
    if role == "operator":
        target = one_host(args)
        if not target.local:
            from console.remote.blocking import connect_blocking

            try:
                return connect_blocking(target, timeout_s=timeout_s)
            except DaemonUnreachable as exc:
                raise CLIError(str(exc), EXIT_UNREACHABLE) from None
    try:
        return Client.connect(
            locations(args),
            role=role,
            client="agent-console-cli",
            timeout_s=timeout_s,
            agent_pid=agent_process_pid() if role == "agent" else None,
            per_call=role == "agent",
        )
    except (DaemonUnreachable, UnsafeLocation) as exc:
        raise CLIError(str(exc), EXIT_UNREACHABLE) from None


def refused(exc: RPCError, what: str) -> CLIError:
    """The daemon refused a call: an invalid operation (exit 2, with its problem) or else.

    An answer this client could not read (:class:`ResultError`) is no refusal: the call
    may have acted (a command may have run), so it says so and exits as unreachable,
    which an agent takes as "not allowed"."""
    if isinstance(exc, ResultError):
        return CLIError(
            f"{exc.message}; what became of {what} is unknown here (see agent-console history)",
            EXIT_UNREACHABLE,
        )
    if exc.code == INVALID_PARAMS and isinstance(exc.data, dict) and "problem" in exc.data:
        problem = Problem(**exc.data["problem"])
        return CLIError(f"invalid operation: {problem}", EXIT_INVALID, problem)
    return CLIError(f"the daemon refused {what}: {exc.message}", EXIT_INVALID)


def read_input(source: str) -> bytes:
    """The bytes of FILE, or of standard input for ``-``."""
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        with open(source, "rb") as f:
            return f.read()
    except OSError as exc:
        raise CLIError(f"cannot read {source}: {exc.strerror}") from None


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=True) + "\n")


def die(message: str, code: int = EXIT_INVALID) -> NoReturn:
    raise CLIError(message, code)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w)?")
_UNITS = {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``2h``, ``7d``, ``1w`` → seconds."""
    m = _DURATION.fullmatch(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 90s, 30m, 2h, 7d)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_time(text: str) -> float:
    """An ISO date/time, or a duration meaning that long ago (``2h``)."""
    try:
        return time.time() - parse_duration(text)
    except argparse.ArgumentTypeError:
        pass
    from datetime import datetime  # here: only time filters parse dates

    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (use 2026-11-30, 2026-11-30T14:00 or 2h)"
        ) from None


def when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def age(ts: float) -> str:
    seconds = max(0, int(time.time() - ts))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# ------------------------------------------------------------------ tables on a terminal

_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def on_tty() -> bool:
    """Colour and width only for a person at a terminal: piped output stays plain."""
    import os

    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, style: str) -> str:
    """``text`` in ``style`` on a TTY (already inert text only: this adds our own SGR)."""
    if not style or not on_tty():
        return text
    codes = ";".join(_SGR[s] for s in style.split() if s in _SGR)
    return f"\x1b[{codes}m{text}\x1b[0m" if codes else text


def fit(text: str, used: int) -> str:
    """Cut the last column to the terminal's width on a TTY (at a word end when one is
    near), marked with an ellipsis; unchanged when piped."""
    if not on_tty():
        return text
    import shutil

    room = max(20, shutil.get_terminal_size((120, 24)).columns - used)
    if len(text) <= room:
        return text
    cut = text[: room - 1]
    space = cut.rfind(" ")
    if space > room * 2 // 3:
        cut = cut[:space]
    return cut + "…"
