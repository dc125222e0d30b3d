"""`agent-console daemon run|start|stop|status|dial-stdio`."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

from msgspec import UNSET, UnsetType

from console.cli.common import (
    EXIT_UNREACHABLE,
    CLIError,
    add_state_dir,
    connect,
    local_files,
    locations,
    one_host,
    print_json,
    when,
)
from console.client import Client, DaemonUnreachable
from console.client.spawn import running_pid, start_daemon
from console.contract.inert import inert
from console.locations import UnsafeLocation
from console.protocol.requests import DaemonStatus, DaemonStop, SessionsList
from console.protocol.results import DaemonStatusResult, DaemonStopResult
from console.protocol.status import EgressStatus, IntegrityStatus, StatusHistory
from console.protocol.watch import WatchStatus


def _said(value: object) -> str:
    """A field of the operator's view as printed; "?" if the daemon left it out."""
    return "?" if value is UNSET else str(value)


def cmd_run(args: argparse.Namespace) -> int:
    # Here, with the daemon: `daemon status|stop|start` need neither asyncio nor logging.
    import asyncio
    import logging

    from console.daemon.app import Daemon
    from console.daemon.policy_source import BrokenPolicy
    from console.daemon.server import AlreadyRunning
    from console.store import StoreUnavailable

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    loc = local_files(args, "daemon run")
    try:
        asyncio.run(Daemon(loc).serve())
    except AlreadyRunning as exc:
        raise CLIError(str(exc), 1) from None
    except UnsafeLocation as exc:
        raise CLIError(str(exc), 2) from None
    except BrokenPolicy as exc:
        raise CLIError(str(exc), 2) from None
    except StoreUnavailable as exc:
        raise CLIError(store_problem(exc, loc.database), 2) from None
    return 0


def store_problem(exc: Exception, database: Path) -> str:
    """One line for a history the daemon cannot open, with what to do about it."""
    reason = getattr(exc, "reason", "")
    if reason == "corrupt":
        return (
            f"the history is damaged: {exc}; the daemon does not start on it. "
            "Recover: agent-console history recover (keeps the damaged file aside and starts a new "
            "history; see docs/operations.md, Recovering a damaged history)"
        )
    return f"the history {database} cannot be opened: {exc}"


def cmd_start(args: argparse.Namespace) -> int:
    try:
        pid, started = start_daemon(local_files(args, "daemon start"))
    except (DaemonUnreachable, UnsafeLocation) as exc:
        raise CLIError(str(exc), 1) from None
    print(f"started, pid {pid}" if started else f"already running, pid {pid}")
    return _check(args) if args.check else 0


def _check(args: argparse.Namespace) -> int:
    """Wait for the daemon's check of the history; 1 when anything is wrong with the
    history or the policy, each said on a line, 0 when all is well."""
    deadline = time.monotonic() + args.wait
    with connect(args, "operator") as client:
        while True:
            status = client.request(DaemonStatus())
            checking = isinstance(status.integrity, IntegrityStatus) and status.integrity.state == "checking"
            if not checking or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    said = integrity_lines(status.integrity)
    problems = [line for line in said if not line.startswith("integrity   intact")]
    if status.policy.error:
        problems.append(f"policy      ERROR: {inert(str(status.policy.error))}")
    for low, high in _unaccepted(status):
        problems.append(
            f"history     UNACCEPTED rows {low}-{high}; review, then: agent-console history accept --through {high}"
        )
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        return 1
    print(said[0] if said else "integrity   intact")
    return 0


def _unaccepted(status: DaemonStatusResult) -> list[tuple[int, int]]:
    return status.history.unaccepted if isinstance(status.history, StatusHistory) else []


def cmd_stop(args: argparse.Namespace) -> int:
    if not one_host(args).local:
        return _stop_remote(args)
    loc = locations(args)
    pid = running_pid(loc)
    if pid is None:
        print("not running")
        return 0
    with connect(args, "operator") as client:
        if not args.force:
            ending = _would_end(client)
            if ending:
                for line in ending:
                    print(line, file=sys.stderr)
                raise CLIError("the daemon keeps running: stop it anyway with `daemon stop --force`", 1)
        with contextlib.suppress(DaemonUnreachable):
            client.request(DaemonStop())  # the daemon may hang up as it stops
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        if running_pid(loc) is None and not loc.agent_socket.exists():
            print(f"stopped (pid {pid})")
            return 0
        time.sleep(0.05)
    raise CLIError(f"the daemon (pid {pid}) is still running after {args.wait:.0f} s", 1)


def _stop_remote(args: argparse.Namespace) -> int:
    """Stop the daemon of another host: asked over the link (its pid is not ours to watch)."""
    with connect(args, "operator") as client:
        if not args.force:
            ending = _would_end(client)
            if ending:
                for line in ending:
                    print(line, file=sys.stderr)
                raise CLIError("the daemon keeps running: stop it anyway with `daemon stop --force`", 1)
        answer: DaemonStopResult | None = None
        with contextlib.suppress(DaemonUnreachable):
            answer = client.request(DaemonStop())
    print(f"asked {one_host(args).name} to stop" + (f" (pid {answer.pid})" if answer is not None else ""))
    return 0


def cmd_dial_stdio(args: argparse.Namespace) -> int:
    from console.locations import locate
    from console.remote.dial import main

    return main(locate(getattr(args, "state_dir", None)))


def _would_end(client: Client) -> list[str]:
    """What stopping the daemon ends: running PTY sessions (killed) and pending requests
    (denied daemon_shutdown), one line each."""
    lines: list[str] = []
    sessions = [s for s in client.request(SessionsList()).sessions if s.status == "running"]
    if sessions:
        lines.append(f"stopping the daemon would kill {len(sessions)} running session(s):")
        for s in sessions[:20]:
            lines.append(f"  {s.id}  {inert(s.title or ' '.join(s.argv))[:70]}")
    pending = client.request(DaemonStatus()).pending
    if pending:
        lines.append(f"and deny {pending} pending request(s) (daemon_shutdown)")
    return lines


def integrity_lines(check: IntegrityStatus | UnsetType) -> list[str]:
    """The history's start-up check (the status's ``integrity``), as `daemon status` and
    `daemon start --check` say it."""
    if not isinstance(check, IntegrityStatus):
        return []
    out = []
    for f in check.findings:
        out.append(
            f"integrity   TAMPERED ({inert(f.what)}, found {inert(f.found)}): "
            f"{inert(f.message)[:300]}; details: agent-console history verify"
        )
    if check.state == "checking":
        out.append(f"integrity   checking the history: {check.checked:,} of {check.total:,} rows so far")
    elif check.state == "failed":
        out.append(f"integrity   the history could not be checked: {inert(check.error)[:300]}")
    elif check.state == "intact":
        out.append(f"integrity   intact: {check.checked:,} rows verified at start")
    return out


def cmd_status(args: argparse.Namespace) -> int:
    try:
        client = connect(args, "operator", timeout_s=10)
    except CLIError as exc:
        if args.json:
            print_json({"running": False})
        elif one_host(args).local:
            print(f"not running ({locations(args).state_dir})")
        else:
            print(f"not reachable: {exc}")
        return EXIT_UNREACHABLE
    with client:
        if args.json:
            # The answer as the daemon sent it (checked at the socket), keys it may add included.
            print_json({"running": True, **client.call("daemon.status")})
            return 0
        status = client.request(DaemonStatus())
    policy = status.policy
    lines = [
        f"running, pid {status.pid}, version {status.version}, up since {when(status.started_at)}",
        f"state dir   {_said(status.state_dir)}",
        f"sockets     {_said(status.runtime_dir)}",
        f"policy      {_said(policy.source)}" + (f"  ERROR: {policy.error}" if policy.error else ""),
        f"pending     {status.pending}",
        f"connections {_said(status.connections)}",
    ]
    sandbox, sessions, watch = status.sandbox, status.sessions, status.watch
    lines.append(f"sandbox     {sandbox.summary}")
    if isinstance(watch, WatchStatus):
        lines.append(f"watch       {watch.summary}")
    lines.append(f"sessions    {_said(sessions.summary)}")
    if sandbox.path:
        lines.append(f"PATH        {':'.join(sandbox.path)}  (from {_said(sandbox.path_source)})")
    if sandbox.seccomp:
        lines.append(f"filter      {sandbox.seccomp}")
    egress = status.egress
    if isinstance(egress, EgressStatus):
        lines.append(
            f"egress      {egress.runs} runs with brokered network; connections "
            f"{egress.allowed} allowed, {egress.refused} refused, {egress.asked} asked"
        )
    if isinstance(sessions.pause_mode, str):
        why = sessions.pause_mode_reason or ""
        lines.append(f"tripwire    pause by {sessions.pause_mode}" + (f" ({why})" if why else ""))
    lane = watch.fast_lane if isinstance(watch, WatchStatus) else ""
    if isinstance(watch, WatchStatus) and lane:
        named = {
            "fanotify+inotify": "writers named by pid from fanotify",
            "inotify": "writers named by /proc evidence (no fanotify)",
            "off": "no fast lane: protected writes seen after the watcher's debounce",
        }.get(lane, lane)
        lines.append(f"protected   {named}")
        if lane == "fanotify+inotify":
            lines.append(
                f"writers     lineage by {watch.lineage or '?'}; opens in hot directories "
                + ("held until the opener is read" if watch.open_gate else "not held")
            )
        else:
            lines.append("writers     unknown writers stop the sessions live in their workspace (no pid)")
    lines += integrity_lines(status.integrity)
    for low, high in _unaccepted(status):
        lines.append(
            f"history     UNACCEPTED rows {low}-{high}: found past the head anchor at start-up, their grants "
            f"are not honoured; review, then: agent-console history accept --through {high}"
        )
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "daemon",
        help="run, start, stop or inspect the daemon",
        description="The daemon owns the approval queue, sessions, watchers and the history. "
        "One runs per user (per state dir); the console starts it when needed.",
    )
    dsub = p.add_subparsers(dest="daemon_command", metavar="ACTION", required=True)

    q = dsub.add_parser("run", help="run in the foreground (logs to stderr)")
    add_state_dir(q)
    q.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    q.set_defaults(func=cmd_run)

    q = dsub.add_parser("start", help="start in the background (logs to daemon.log in the state dir)")
    add_state_dir(q)
    q.add_argument(
        "--check",
        action="store_true",
        help="then wait for its check of the history (and the policy): exit 1 when it found a problem",
    )
    q.add_argument(
        "--wait", type=float, default=600.0, metavar="S", help="with --check: how long to wait for the check"
    )
    q.set_defaults(func=cmd_start)

    q = dsub.add_parser("stop", help="stop: pending requests are denied (daemon_shutdown) and recorded")
    add_state_dir(q)
    q.add_argument("--wait", type=float, default=15.0, metavar="S", help="seconds to wait for it to exit")
    q.add_argument(
        "--force", action="store_true", help="stop even when sessions run or requests wait (they end)"
    )
    q.set_defaults(func=cmd_stop)

    q = dsub.add_parser(
        "dial-stdio",
        help="connect standard input and output to this daemon's operator socket (run by sshd for a remote console)",
        description="Run on this machine by a console on another one, over SSH (docs/remote.md): "
        "the first line must be a hello; the operator token is read here and added to it, "
        "then bytes are copied both ways. Only this state dir's daemon is dialled.",
    )
    q.add_argument(
        "--state-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the daemon's state dir (default: $AGENT_CONSOLE_HOME or ~/.local/state/agent-console)",
    )
    q.set_defaults(func=cmd_dial_stdio)

    q = dsub.add_parser("status", help="is it running, with which policy; exit 3 when not running")
    add_state_dir(q)
    q.add_argument("--json", action="store_true", help="print the status as JSON")
    q.set_defaults(func=cmd_status)
