"""`agent-console web`: the approvals page for a browser or a phone (docs/remote.md)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from console.cli.common import CLIError, add_state_dir, hosts
from console.locations import UnsafeLocation, ensure_private_dir, locate


def cmd_web(args: argparse.Namespace) -> int:
    from console.web.push import check_topic_url
    from console.web.serve import WebOptions, is_loopback, serve

    if not is_loopback(args.bind) and not args.allow_non_loopback:
        raise CLIError(
            f"--bind {args.bind} is not loopback: the page is plain HTTP. Reach it through `ssh -L` or a VPN "
            "(bind loopback, or a VPN address with --allow-non-loopback)"
        )
    if args.ntfy:
        if not args.public_url:
            raise CLIError("--ntfy needs --public-url: the address the phone opens the link at")
        try:
            check_topic_url(args.ntfy)
        except ValueError as exc:
            raise CLIError(str(exc)) from None
    targets = hosts(args)
    loc = locate(getattr(args, "state_dir", None))
    token_file = Path(args.token_file).expanduser() if args.token_file else loc.state_dir / "web.token"
    try:
        ensure_private_dir(token_file.parent)
    except UnsafeLocation as exc:
        raise CLIError(str(exc)) from None
    options = WebOptions(
        bind=args.bind,
        port=args.port,
        token_file=token_file,
        public_urls=tuple(args.public_url or ()),
        ntfy=args.ntfy or "",
    )
    try:
        asyncio.run(serve(options, targets, getattr(args, "state_dir", None)))
    except (UnsafeLocation, ValueError) as exc:
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot listen on {args.bind}:{args.port}: {exc.strerror or exc}") from None
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "web",
        help="serve the approvals page (queue, detail, approve, deny) for a browser or a phone",
        description="An approvals-only page on loopback (reach it with ssh -L or a VPN): log in with the "
        "token in the 0600 token file; no terminals. --host (repeatable) chooses the hosts it shows.",
    )
    add_state_dir(p)
    p.add_argument("--bind", default="127.0.0.1", metavar="ADDR", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8787, help="listen port (default 8787; 0: any free one)")
    p.add_argument(
        "--allow-non-loopback",
        action="store_true",
        help="allow --bind on an address other than loopback (a VPN's): the page is plain HTTP",
    )
    p.add_argument(
        "--public-url",
        action="append",
        metavar="URL",
        help="an address the browser reaches the page at, e.g. http://localhost:9000 through ssh -L "
        "(its Host and Origin are then accepted; the first is used in push links)",
    )
    p.add_argument("--ntfy", metavar="URL", help="push 'an agent waits on you' to this ntfy topic URL")
    p.add_argument(
        "--token-file",
        metavar="FILE",
        help="the login token file, made 0600 if missing (default: <state dir>/web.token)",
    )
    p.set_defaults(func=cmd_web)
