"""`agent-console sessions …`: list, create, capture, send, kill, replay, attach."""

from __future__ import annotations

import argparse
import base64
import os
import sys
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from console.cli.common import CLIError, add_state_dir, age, connect, local_files, one_host, print_json
from console.client import RPCError
from console.contract.inert import inert
from console.protocol.requests import (
    AgentAttentionList,
    MethodParams,
    SessionsAttach,
    SessionsDetach,
    SessionsGet,
    SessionsInput,
    SessionsKill,
    SessionsList,
    SessionsNew,
    SessionsPrune,
    SessionsRead,
    SessionsRemove,
    SessionsScreen,
    WorkspacesList,
)
from console.protocol.results import MethodResult
from console.protocol.sessions import SessionObject, recording_note
from console.protocol.status import AttentionEntry

R = TypeVar("R", bound=MethodResult)


def _request(args: argparse.Namespace, params: MethodParams[R]) -> R:
    with connect(args, "operator") as client:
        try:
            return client.request(params)
        except RPCError as exc:
            raise CLIError(exc.message, 1) from None


def _mib(n: int | None) -> str:
    return f"{n / (1 << 20):.1f}M" if n else "-"


# When several agents (or Claude Code sessions) belong to one session, the most urgent shows.
_URGENCY = {"waiting": 0, "working": 1, "done": 2}


def attention_of(sessions: Sequence[SessionObject], agents: Sequence[AttentionEntry]) -> dict[str, str]:
    """Session id -> the attention state of the agents that belong to it: an agent that
    owns the session (``agent:<id>``), or whose process runs inside it (its root process
    descends from the session's)."""
    from console.protocol.procs import ancestry

    alive = {s.pid: s.id for s in sessions if s.alive}
    found: dict[str, AttentionEntry] = {}
    for a in agents:
        owners = {s.id for s in sessions if s.owner == f"agent:{a.agent_id}"}
        root = a.root_pid
        if isinstance(root, int) and a.agent_alive:
            owners |= {alive[st.pid] for st in ancestry(root) if st.pid in alive}
        for sid in owners:
            best = found.get(sid)
            if best is None or _URGENCY.get(a.state, 9) < _URGENCY.get(best.state, 9):
                found[sid] = a
    return {sid: a.state_text for sid, a in found.items()}


def cmd_list(args: argparse.Namespace) -> int:
    sessions = _request(args, SessionsList()).sessions
    if args.json:
        print_json(msgspec.to_builtins(sessions))
        return 0
    if not sessions:
        print("no sessions")
        return 0
    try:
        attention = attention_of(sessions, _request(args, AgentAttentionList()).agents)
    except CLIError:
        attention = {}  # an older daemon: no attention column to fill
    print(
        f"{'ID':<14} {'STATUS':<18} {'ATTENTION':<15} {'AGE':>5} {'CPU':>6} {'MEM':>7}  "
        f"{'OWNER':<22} {'BOX':<10} TITLE / COMMAND"
    )
    for s in sessions:
        cpu = f"{s.stats.cpu_percent:.1f}%" if s.stats else "-"
        label = s.title or " ".join(s.argv)
        note = f"  [{said}]" if (said := recording_note(s)) else ""
        print(
            f"{s.id:<14} {s.status_text:<18} {attention.get(s.id, '-'):<15} {age(s.created_at):>5} "
            f"{cpu:>6} {_mib(s.stats.rss_bytes if s.stats else None):>7}  {inert(s.owner)[:22]:<22} "
            f"{'sandbox' if s.sandboxed else 'UNCONFINED':<10} {inert(label)[:80]}{note}"
        )
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise CLIError("nothing to run: agent-console sessions new [--title T] [--cwd DIR] -- CMD ...")
    cols, rows = os.get_terminal_size() if sys.stdout.isatty() else (120, 40)
    target = one_host(args)
    cwd = ""
    env: dict[str, Any] | None = None
    with connect(args, "operator") as client:
        try:
            if target.local:
                cwd = os.path.abspath(args.cwd or os.getcwd())
                if not args.unconfined:
                    env = dict(os.environ)
            else:
                # This machine's directory and environment (its keys, its PATH) stay here:
                # the session runs in a directory of that host, with that host's environment.
                from console.remote.workdir import NoRemoteWorkspace, remote_cwd

                listed = None
                if not args.cwd and not args.unconfined:
                    listed = client.request(WorkspacesList()).workspaces
                try:
                    cwd = remote_cwd(target.name, args.cwd, listed, unconfined=args.unconfined)
                except NoRemoteWorkspace as exc:
                    raise CLIError(str(exc)) from None
            params = SessionsNew(
                argv=tuple(command),
                cwd=cwd,
                title=args.title,
                env=env,
                cols=cols,
                rows=rows,
                unconfined=args.unconfined,
                agent="" if args.unconfined else args.agent,
            )
            info = client.request(params).session
        except RPCError as exc:
            raise CLIError(exc.message, 1) from None
    print(info.id)
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    from console.terminal.ansi import capture, inert_clusters

    if args.escapes:
        # The daemon's screen with its styles: rebuilt here from a read-only attach's
        # snapshot (the same engine), then written with SGR of our own making.
        from console.terminal import Screen

        with connect(args, "operator") as client:
            try:
                att = client.request(SessionsAttach(session=args.id, read_only=True))
                client.request(SessionsDetach(session=args.id))
            except RPCError as exc:
                raise CLIError(exc.message, 1) from None
        screen = Screen(att.cols, att.rows, scrollback_lines=CAPTURE_SCROLLBACK_LINES)
        try:
            screen.feed(base64.b64decode(att.snapshot_base64))
            text = capture(screen, scrollback=args.scrollback)
        finally:
            screen.close()
        sys.stdout.write(text + ("\n" if text else ""))
        return 0
    text = _request(args, SessionsScreen(session=args.id, scrollback=args.scrollback)).text
    # Screen text is a program's output: printable, but escaped all the same (a joiner
    # inside an emoji sequence excepted: it is part of what was printed).
    sys.stdout.write(inert_clusters(text) + ("\n" if text and not text.endswith("\n") else ""))
    return 0


CAPTURE_SCROLLBACK_LINES = 1_000_000  # room for whatever the daemon's snapshot holds


def cmd_send(args: argparse.Namespace) -> int:
    text = args.text + ("\n" if args.enter else "")
    n = _request(args, SessionsInput(session=args.id, text=text)).written
    print(f"sent {n} bytes")
    return 0


def cmd_kill(args: argparse.Namespace) -> int:
    info = _request(args, SessionsKill(session=args.id, grace_s=args.grace)).session
    print(f"{info.id}: {info.status_text}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    _request(args, SessionsRemove(session=args.id))
    print(f"removed {args.id}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    r = _request(args, SessionsPrune(all=args.all))
    if getattr(args, "json", False):
        print_json(msgspec.to_builtins(r))
        return 0

    def mib(n: int) -> str:
        return f"{n / (1 << 20):.1f}M"

    for item in r.pruned:
        print(f"pruned {item.session}: {mib(item.bytes)}")
    print(
        f"freed {mib(r.freed_bytes)} in {len(r.pruned)} recordings; "
        f"recordings now {mib(r.total_bytes)} of {mib(r.quota_bytes)}"
    )
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from console.sessions import RecordingError, replay

    path = local_files(args, "sessions replay").sessions_dir / os.path.basename(args.id) / "output.cast"
    if not path.is_file():
        raise CLIError(f"no recording for session {args.id} in {path.parent}", 1)
    if not args.speed > 0:
        raise CLIError("--speed must be above 0 (e.g. 2 plays twice as fast)", 2)

    def write(text: str) -> None:
        # A reader that goes away (`| head`) ends the command in cli.main, quietly.
        sys.stdout.write(text)
        sys.stdout.flush()

    try:
        replay(path, speed=args.speed, write=write)
    except RecordingError as exc:
        raise CLIError(f"cannot replay {path}: {exc}", 1) from None
    except KeyboardInterrupt:
        pass
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    try:
        from console.tui.launch import open_console
    except ImportError:
        raise CLIError("the console is not installed in this build", 1) from None
    # A session that does not exist is the same error, and exit code, as for `kill`.
    _request(args, SessionsGet(session=args.id))
    return open_console(args, session=args.id, targets=[one_host(args)])


def cmd_read(args: argparse.Namespace) -> int:
    r = _request(args, SessionsRead(session=args.id, offset=args.offset, max_bytes=args.max_bytes))
    if r.dropped_bytes:
        print(
            f"agent-console: {r.dropped_bytes} bytes before offset {args.offset} were dropped",
            file=sys.stderr,
        )
    sys.stdout.write(inert(base64.b64decode(r.data_base64).decode("utf-8", "replace"), keep_newlines=True))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sessions",
        help="interactive sessions the daemon keeps running",
        description="Sessions run in PTYs owned by the daemon: they outlive the console and SSH connections.",
    )
    add_state_dir(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)
    ssub = p.add_subparsers(dest="sessions_command", metavar="ACTION")

    q = ssub.add_parser(
        "new",
        help="start a session for yourself: confined to its workspace (--cwd) unless --unconfined",
        description=(
            "A session the daemon keeps running, in the sandbox with --cwd (default: here; on another "
            "host, the workspace trusted there most recently) as its workspace, the network through the egress broker (agent-console run attaches to one). "
            "--unconfined runs it outside any sandbox with every power of your account (recorded)."
        ),
    )
    add_state_dir(q)
    q.add_argument("--title", default="")
    q.add_argument("--cwd", metavar="DIR", help="its workspace (confined) or working directory")
    q.add_argument(
        "--agent", default="", help="the agent profile of a confined session (default: by argv[0])"
    )
    q.add_argument(
        "--unconfined", action="store_true", help="outside any sandbox, as you (like a tmux window)"
    )
    q.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD")
    q.set_defaults(func=cmd_new)

    q = ssub.add_parser("attach", help="open the console on a session")
    add_state_dir(q)
    q.add_argument("id")
    q.add_argument("--theme")
    q.add_argument("--keymap")
    q.add_argument("--config")
    q.set_defaults(func=cmd_attach)

    q = ssub.add_parser("capture", help="print the screen's text (like tmux capture-pane)")
    add_state_dir(q)
    q.add_argument("id")
    q.add_argument("--scrollback", action="store_true", help="include the scrollback")
    q.add_argument(
        "-e",
        "--escapes",
        action="store_true",
        help="with colours and attributes as SGR escapes (like tmux capture-pane -e)",
    )
    q.set_defaults(func=cmd_capture)

    q = ssub.add_parser("send", help="type TEXT into a session")
    add_state_dir(q)
    q.add_argument("id")
    q.add_argument("text")
    q.add_argument("--enter", action="store_true", help="press Enter after the text")
    q.set_defaults(func=cmd_send)

    q = ssub.add_parser("read", help="print raw output from an offset (escaped)")
    add_state_dir(q)
    q.add_argument("id")
    q.add_argument("--offset", type=int, default=0)
    q.add_argument("--max-bytes", type=int, default=65536)
    q.set_defaults(func=cmd_read)

    q = ssub.add_parser("kill", help="end a session: TERM to its processes, then KILL")
    add_state_dir(q)
    q.add_argument("id")
    q.add_argument("--grace", type=float, default=3.0, metavar="S")
    q.set_defaults(func=cmd_kill)

    q = ssub.add_parser("remove", help="forget an ended session and delete its recording")
    add_state_dir(q)
    q.add_argument("id")
    q.set_defaults(func=cmd_remove)

    q = ssub.add_parser(
        "prune", help="delete finished sessions' recordings, oldest first, down to recordings_total_mb"
    )
    add_state_dir(q)
    q.add_argument("--all", action="store_true", help="every finished recording (never a running one)")
    q.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    q.set_defaults(func=cmd_prune)

    q = ssub.add_parser("replay", help="play a session's recording in this terminal")
    add_state_dir(q)
    q.add_argument("id")
    q.add_argument("--speed", type=float, default=1.0, metavar="X")
    q.set_defaults(func=cmd_replay)
