"""Finding the protected paths that lie under a writable part of the workspace.

bubblewrap can only mount over what exists, so each run walks the writable parts of the
workspace for entries matching the policy's protected patterns (`.git/hooks`,
`.git/config`, `.env`, keys...) and binds each one read-only over the writable mount.
A matched directory is protected as a whole and not descended into; symlinks are
neither followed nor protected (a mount on a symlink would land on its target).

The walk is bounded: a workspace too large to walk within the budget fails closed
rather than running with protected paths left writable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from console.contract.operation import is_within
from console.policy.patterns import ProtectedPaths

MAX_ENTRIES = 500_000
MAX_MATCHES = 2_000


class ProtectedWalkError(RuntimeError):
    """The walk exceeded its budget; the message says which and what to do."""


@dataclass(frozen=True, slots=True)
class ProtectedMatch:
    path: str
    pattern: str
    is_dir: bool


def find_protected(
    workspace_root: str,
    roots: tuple[str, ...],
    protected: ProtectedPaths,
    skip: tuple[str, ...] = (),
    *,
    max_entries: int = MAX_ENTRIES,
    max_matches: int = MAX_MATCHES,
) -> list[ProtectedMatch]:
    """Protected entries below each of ``roots`` (directories inside the workspace).

    ``skip`` lists directories not to descend into (hidden paths: already covered).
    """
    if not protected.patterns:
        return []
    prefix = workspace_root.rstrip("/") + "/"
    matches: list[ProtectedMatch] = []
    seen = 0
    for root in _outermost(roots):
        stack = [root]
        while stack:
            directory = stack.pop()
            try:
                scan = os.scandir(directory)
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
            with scan:
                for entry in scan:
                    seen += 1
                    if seen > max_entries:
                        raise ProtectedWalkError(
                            f"the workspace has more than {max_entries} entries to check for protected "
                            "paths; narrow the writable area with write_dirs"
                        )
                    path = entry.path
                    if any(is_within(path, s) for s in skip):
                        continue
                    if entry.is_symlink():
                        continue
                    is_dir = entry.is_dir(follow_symlinks=False)
                    pattern = protected.match(path[len(prefix) :])
                    if pattern is not None:
                        matches.append(ProtectedMatch(path, pattern, is_dir))
                        if len(matches) > max_matches:
                            raise ProtectedWalkError(
                                f"more than {max_matches} protected paths lie in the writable area; "
                                "narrow it with write_dirs"
                            )
                    elif is_dir:
                        stack.append(path)
    matches.sort(key=lambda m: m.path)
    return matches


def _outermost(roots: tuple[str, ...]) -> list[str]:
    """Roots with those nested in another dropped, so nothing is walked twice."""
    out: list[str] = []
    for root in sorted(set(roots), key=len):
        if not any(is_within(root, kept) for kept in out):
            out.append(root)
    return out
