"""`agent-console` (the approval console) and `agent-console demo`.

The console itself is :mod:`console.tui`; this module finds the state directory,
starts the daemon when none runs, reads the config, and resolves theme and keymap
before Textual takes the terminal, so every mistake is one line on stderr.

`demo` opens the console on top of :class:`console.demo.Demo` (a throw-away state
directory, workspace, daemon and simulated agent). Quitting stops that daemon and
removes everything it made.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from console.cli.common import CLIError, add_state_dir, hosts
from console.demo import Demo
from console.locations import Locations

if TYPE_CHECKING:
    from console.tui.settings.prepared import Settings


def add_console_arguments(p: argparse.ArgumentParser, *, state_dir: bool = True) -> None:
    """The console's flags; the integrator adds them to the bare `agent-console` parser."""
    if state_dir:
        add_state_dir(p)
    p.add_argument(
        "--config",
        metavar="FILE",
        help="config file (default: <state dir>/config.toml with --state-dir, else the platform config dir)",
    )
    p.add_argument(
        "--theme", metavar="NAME", help="colour theme: dark, light, high-contrast, solarized or your own"
    )
    p.add_argument("--keymap", metavar="NAME", help="keys: default, vim, emacs or your own")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("console", help="open the approval console (what a bare `agent-console` does)")
    add_console_arguments(p)
    p.add_argument("--no-start", action="store_true", help="do not start the daemon; wait for one to appear")
    p.set_defaults(func=main_console)

    d = sub.add_parser("demo", help="try the console: a throw-away daemon, workspace and simulated agent")
    add_console_arguments(d, state_dir=False)
    d.add_argument(
        "--pace",
        type=float,
        default=4.0,
        metavar="SECONDS",
        help="average seconds between the simulated agent's requests (default 4)",
    )
    d.add_argument("--keep", action="store_true", help="keep the demo's state dir and workspace; print where")
    d.set_defaults(func=cmd_demo)


def _prepare(args: argparse.Namespace, state_dir: str | None) -> Settings:
    from console.tui.launch import LaunchError, prepare_settings

    try:
        return prepare_settings(args, state_dir)
    except LaunchError as exc:
        raise CLIError(str(exc), exc.code) from None


def _run_app(settings: Settings, loc: Locations, *, exit_on_hangup: bool = False) -> int:
    from console.tui.launch import run_app

    return run_app(settings, loc, exit_on_hangup=exit_on_hangup)


def main_console(args: argparse.Namespace) -> int:
    """Open the console for ``--state-dir`` (flags: --state-dir, --host, --config, --theme, --keymap,
    --no-start); several hosts are watched at once (docs/remote.md)."""
    from console.tui.launch import LaunchError, start_console

    try:
        return start_console(args, targets=hosts(args))
    except LaunchError as exc:
        raise CLIError(str(exc), exc.code) from None


def cmd_demo(args: argparse.Namespace) -> int:
    with Demo(pace_s=args.pace, keep=args.keep) as demo:
        settings = _prepare(args, str(demo.loc.state_dir) if not args.config else None)
        _run_app(settings, demo.loc, exit_on_hangup=True)
        if args.keep:
            print(f"demo state kept in {demo.base} (agent-console --state-dir {demo.loc.state_dir})")
    return 0
