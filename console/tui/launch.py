"""Starting the console: settings, the daemon, the app — for a bare `agent-console`,
`agent-console demo` and `agent-console sessions attach ID`.

Everything that can be wrong (a config mistake, a theme or keymap that does not exist,
a daemon that cannot start, a session id the daemon does not know) is found here, while
the terminal is still a terminal, and reported as a :class:`LaunchError` with the exit
code the CLI uses for it. The CLI (``console.cli.tui_commands``) calls into this module,
never the other way round.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from console.client import Client, DaemonUnreachable, RPCError
from console.client.spawn import start_daemon
from console.locations import ENV_HOME, Locations, UnsafeLocation, locate
from console.protocol.jsonrpc import NOT_FOUND
from console.protocol.requests import SessionsGet
from console.remote.contexts import LOCAL_TARGET, Target
from console.remote.hostset import HostSet
from console.tui.settings.prepared import Settings

# The CLI's exit codes (console.cli.common) for what can go wrong here.
EXIT_INVALID, EXIT_UNREACHABLE = 2, 3


class LaunchError(Exception):
    """The console cannot start; the message says why and what to do."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def prepare_settings(args: argparse.Namespace, state_dir: str | None) -> Settings:
    """Config file, theme and keymap from the flags (``--config``, ``--theme``, ``--keymap``)."""
    from console.tui.settings.config import ConfigError, config_path, load_config
    from console.tui.settings.prepared import prepare

    path, must_exist = config_path(getattr(args, "config", None), state_dir)
    try:
        config = load_config(path, must_exist=must_exist)
        return prepare(config, theme=getattr(args, "theme", None), keymap=getattr(args, "keymap", None))
    except (ConfigError, ValueError) as exc:
        raise LaunchError(str(exc), EXIT_INVALID) from None


def run_app(
    settings: Settings,
    loc: Locations,
    *,
    exit_on_hangup: bool = False,
    session: str | None = None,
    hosts: HostSet | None = None,
) -> int:
    """Run the console until the operator quits; with ``session``, open on that session;
    with ``hosts``, on those hosts' daemons (docs/remote.md)."""
    from console.tui.app import ConsoleApp

    app = ConsoleApp(
        settings, state_dir=str(loc.state_dir), session=session, throwaway=exit_on_hangup, hosts=hosts
    )
    if exit_on_hangup:
        # A closed terminal must still clean up what the demo started.
        for sig in (signal.SIGHUP, signal.SIGTERM):
            signal.signal(sig, lambda *_: app.exit())
    app.run()
    return 0


def start_console(
    args: argparse.Namespace, *, session: str | None = None, targets: list[Target] | None = None
) -> int:
    """Open the console for ``--state-dir``, starting the daemon unless ``--no-start``;
    ``targets``: the hosts to watch (None: this machine's daemon)."""
    state_dir = getattr(args, "state_dir", None) or os.environ.get(ENV_HOME) or None
    loc = locate(state_dir)
    settings = prepare_settings(args, state_dir)
    remote_only = targets is not None and all(not t.local for t in targets)
    if not getattr(args, "no_start", False) and not remote_only:
        try:
            start_daemon(loc)
        except (DaemonUnreachable, UnsafeLocation) as exc:
            raise LaunchError(str(exc), EXIT_UNREACHABLE) from None
    if session is not None and not remote_only:
        _check_session(loc, session)
    hosts = HostSet(targets, state_dir) if targets is not None and targets != [LOCAL_TARGET] else None
    return run_app(settings, loc, session=session, hosts=hosts)


def _check_session(loc: Locations, session: str) -> None:
    try:
        with Client.connect(loc, role="operator", client="agent-console-cli", timeout_s=15) as client:
            client.request(SessionsGet(session=session))
    except RPCError as exc:
        if exc.code == NOT_FOUND:
            raise LaunchError(
                f"no session {session!r}; `agent-console sessions` lists them", EXIT_INVALID
            ) from None
        raise LaunchError(exc.message, EXIT_INVALID) from None
    except (DaemonUnreachable, UnsafeLocation) as exc:
        raise LaunchError(str(exc), EXIT_UNREACHABLE) from None


def open_console(args: argparse.Namespace, session: str, targets: list[Target] | None = None) -> int:
    """`agent-console sessions attach ID`: the console on the sessions view with ``session``
    in a pane. Closing the pane (or quitting) detaches; the session keeps running."""
    try:
        return start_console(args, session=session, targets=targets)
    except LaunchError as exc:
        sys.stderr.write(f"agent-console: {exc}\n")
        return exc.code
