"""Where a session started on another host runs when the operator names no directory.

This machine's working directory means nothing there (it may not exist, or be another
project). A confined session starts in a workspace that host's daemon trusts: the one
trusted there most recently (by the operator or an approval), else the first its policy
names. An unconfined one starts in the remote user's home (the daemon's default for an
empty ``cwd``). A directory the operator names must be absolute: a relative one would be
read against this machine's directory.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from console.protocol.results import TrustedWorkspace


class NoRemoteWorkspace(ValueError):
    """The host trusts no workspace and none was named; the message says what to do."""


def remote_workspace(workspaces: Sequence[TrustedWorkspace]) -> str | None:
    """The workspace a confined session on another host starts in, from that host's
    ``workspaces.list``; None when it trusts none."""
    best: tuple[float, int, str] | None = None
    for index, entry in enumerate(workspaces):
        root = entry.workspace_root
        if not root.startswith("/"):
            continue
        # The newest trusted wins; among the policy's (no time), the first listed.
        key = (entry.at if entry.at is not None else float("-inf"), -index, root)
        if best is None or key > best:
            best = key
    return None if best is None else best[2]


def remote_cwd(
    host: str, named: str | None, workspaces: Sequence[TrustedWorkspace] | None, *, unconfined: bool
) -> str:
    """The ``cwd`` of ``sessions.new`` on ``host``: ``named`` (absolute), else a trusted
    workspace there (confined) or "" (unconfined: the remote home). ``workspaces`` is the
    host's ``workspaces.list``, needed only when nothing was named for a confined session."""
    if named:
        if not named.startswith("/"):
            raise NoRemoteWorkspace(f"--cwd {named}: give a directory on {host} as an absolute path")
        return posixpath.normpath(named)
    if unconfined:
        return ""
    found = remote_workspace(workspaces or [])
    if found is None:
        raise NoRemoteWorkspace(
            f"{host} trusts no workspace yet: name a directory there (sessions new --cwd DIR), or "
            f"trust one with `agent-console --host {host} workspaces add DIR`"
        )
    return found
