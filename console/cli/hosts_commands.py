"""`agent-console hosts add NAME URL | list | remove NAME | use NAME`: named daemons on
other machines, reached over SSH (docs/remote.md)."""

from __future__ import annotations

import argparse
import os
import sys

from console.cli.common import CLIError, print_json
from console.remote.contexts import ENV_HOST, LOCAL, ContextError, Contexts, hosts_path, load_contexts


def _contexts(args: argparse.Namespace) -> Contexts:
    try:
        return load_contexts(hosts_path(getattr(args, "state_dir", None)))
    except ContextError as exc:
        raise CLIError(str(exc)) from None


def _change(args: argparse.Namespace, change: str) -> Contexts:
    contexts = _contexts(args)
    try:
        if change == "add":
            contexts.add(args.name, args.url)
        elif change == "remove":
            contexts.remove(args.name)
        else:
            contexts.use(args.name)
        contexts.save()
    except ContextError as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot write {contexts.path}: {exc.strerror or exc}") from None
    return contexts


def cmd_add(args: argparse.Namespace) -> int:
    contexts = _change(args, "add")
    print(f"added {args.name}: {contexts.hosts[args.name]}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    _change(args, "remove")
    print(f"removed {args.name}")
    return 0


def cmd_use(args: argparse.Namespace) -> int:
    _change(args, "use")
    print(f"commands now talk to {args.name}" + (" (this machine)" if args.name == LOCAL else ""))
    if os.environ.get(ENV_HOST):
        print(f"note: ${ENV_HOST} is set and wins over it", file=sys.stderr)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    contexts = _contexts(args)
    rows = [{"name": LOCAL, "url": "", "current": not contexts.current}] + [
        {"name": name, "url": str(url), "current": name == contexts.current}
        for name, url in sorted(contexts.hosts.items())
    ]
    if args.json:
        print_json({"hosts": rows, "file": str(contexts.path)})
        return 0
    for row in rows:
        mark = "*" if row["current"] else " "
        print(f"{mark} {row['name']:<20} {row['url'] or '(this machine)'}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hosts",
        help="named daemons on other machines, reached over SSH",
        description="Name the daemons of other machines (ssh://[user@]box[:port][/state/dir]) and choose "
        "which one commands talk to. They are kept in hosts.toml beside the config file. "
        "`--host NAME` or $AGENT_CONSOLE_HOST choose for one command; `use` for all of them.",
    )
    hsub = p.add_subparsers(dest="hosts_command", metavar="ACTION", required=True)

    def state_dir(q: argparse.ArgumentParser) -> None:
        q.add_argument(
            "--state-dir",
            metavar="DIR",
            default=argparse.SUPPRESS,
            help="with a state dir, its hosts.toml is used (default: ~/.config/agent-console/hosts.toml)",
        )

    q = hsub.add_parser("add", help="name a host: hosts add box ssh://me@box")
    q.add_argument("name")
    q.add_argument("url", help="ssh://[user@]host[:port][/remote/state/dir][?known_hosts=…&identity=…]")
    state_dir(q)
    q.set_defaults(func=cmd_add)

    q = hsub.add_parser("list", help="the named hosts; * marks the one commands use")
    q.add_argument("--json", action="store_true")
    state_dir(q)
    q.set_defaults(func=cmd_list)

    q = hsub.add_parser("remove", help="forget a named host")
    q.add_argument("name")
    state_dir(q)
    q.set_defaults(func=cmd_remove)

    q = hsub.add_parser("use", help="the host every command talks to (local: this machine)")
    q.add_argument("name")
    state_dir(q)
    q.set_defaults(func=cmd_use)
