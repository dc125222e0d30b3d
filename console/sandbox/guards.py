"""A sandboxed run cannot leave a protected name behind that it was not given.

The sandbox pins every protected path that exists when a run starts (plan.py binds them
read-only) and creates inert placeholders for the names git reads silently
(placeholders.py), so writing, renaming or removing those fails inside with EROFS or
EBUSY. A protected *name that does not exist yet* cannot be mounted over: bubblewrap can
only bind onto an existing path, and every directory of the writable workspace can
receive a new ``.env``, ``.envrc``, ``CLAUDE.md``, ``.github/workflows/x.yml`` or a whole
git repository by shape (``docs/{HEAD,objects,refs,config}``). Making every such
creation fail would mean a read-only workspace with each entry bound back writable,
which also refuses every ordinary new file at the top level (a build's ``target/``, a
test's cache), so it is not what this does. Instead:

- while it runs, the fast lane (console/watch/sentinel.py) names the run's own processes
  by their pid (console/sessions/lineage.py): a protected name created by the run stops
  the run at once (the daemon cancels it as refused);
- when it ends, :func:`sweep` walks the writable area for protected paths again
  (protected.py, the repository-by-shape rule included). Every one that was not there
  before the run (not pinned), that the operator did not approve (a
  ``protected_metadata`` scope) and that no one else is known to have made is removed,
  and the outcome lists it as ``refused: protected``: the workspace is left without it.

What the run may touch among protected names is what :func:`touchable` says: the
approved ``protected_metadata`` scopes; nothing else.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.operation import Operation, is_within
from console.contract.outcome import REFUSED_PROTECTED, Change, ChangeKind, Denial, DenialSource, NextAction
from console.policy.diff import requested
from console.policy.patterns import ProtectedPaths
from console.sandbox.protected import ProtectedWalkError, find_protected
from console.sandbox.resolve import ResolveError, open_path

MAX_REMOVED = 2_000  # entries removed per refused path at most (a tree planted by the run)


@dataclass(frozen=True, slots=True)
class Refused:
    path: str  # canonical
    relative: str  # as the workspace shows it
    removed: bool
    why: str = ""  # when it could not be removed


def touchable(op: Operation, protected: ProtectedPaths) -> tuple[str, ...]:
    """The protected paths the run may change: its approved ``protected_metadata`` scopes
    (canonical). Every other protected path is pinned, or refused when created."""
    caps = requested(op, protected)
    return tuple(
        sorted({c.scope or op.workspace_root for c in caps if c.kind is CapabilityKind.PROTECTED_METADATA})
    )


def sweep(
    op: Operation,
    protected: ProtectedPaths,
    pinned: tuple[str, ...],
    writable: tuple[str, ...],
    skip: tuple[str, ...] = (),
    *,
    others: Callable[[str], bool] | None = None,
) -> list[Refused]:
    """After the run: protected paths in the writable part of the workspace that were
    not there before (``pinned`` lists what was), outside the approved scopes, are
    removed. ``others(path)`` True: someone else is known to have made it (kept)."""
    root = op.workspace_root
    allowed = touchable(op, protected)
    roots = tuple(w for w in writable if is_within(w, root))
    if not roots:
        return []
    try:
        found = find_protected(root, roots, protected, skip=skip, writable=writable)
    except ProtectedWalkError as exc:
        return [Refused(root, ".", False, f"the workspace could not be checked: {exc}")]
    before = set(pinned)
    out: list[Refused] = []
    for match in found:
        path = match.path
        if path in before or any(is_within(path, a) for a in allowed):
            continue
        if any(is_within(path, b) and path != b for b in before):
            continue  # inside a pinned directory: the run could not have made it
        if others is not None and others(path):
            continue
        rel = path[len(root.rstrip("/")) + 1 :] if path != root else "."
        out.append(_remove(path, rel))
    return out


def _remove(path: str, rel: str) -> Refused:
    """Remove ``path`` (a file, a symlink, or a tree), never following a symlink: not at
    its end, and not on the way. The run (or another session) can turn a directory of the
    write dir into a link while the sweep runs; the daemon must not remove what the link
    leads to, in the workspace or outside it."""
    parent, name = os.path.split(path)
    try:
        opened = open_path(parent)
    except ResolveError as exc:
        if exc.errno == errno.ENOENT:
            return Refused(path, rel, True)
        return Refused(path, rel, False, f"not removed: {exc.why}")
    pfd = opened.fd
    try:
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            return Refused(path, rel, True)
        if stat.S_ISDIR(st.st_mode):
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            _empty(pfd, name, flags, [MAX_REMOVED])
            os.rmdir(name, dir_fd=pfd)
        else:
            os.unlink(name, dir_fd=pfd)
    except OSError as exc:
        return Refused(path, rel, False, exc.strerror or str(exc))
    finally:
        os.close(pfd)
    return Refused(path, rel, True)


def _empty(pfd: int, name: str, flags: int, budget: list[int]) -> None:
    fd = os.open(name, flags, dir_fd=pfd)
    try:
        for entry in os.scandir(fd):
            budget[0] -= 1
            if budget[0] < 0:
                raise OSError(0, f"more than {MAX_REMOVED} entries")
            if entry.is_dir(follow_symlinks=False):
                _empty(fd, entry.name, flags, budget)
                os.rmdir(entry.name, dir_fd=fd)
            else:
                os.unlink(entry.name, dir_fd=fd)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def denial(refused: list[Refused]) -> Denial:
    """The outcome's word for it: ``protected_metadata`` on the first path, refused by
    the sandbox."""
    first = refused[0]
    more = f" and {len(refused) - 1} more" if len(refused) > 1 else ""
    done = (
        "removed"
        if all(r.removed for r in refused)
        else "NOT all removed: " + next(f"{r.relative}: {r.why}" for r in refused if not r.removed)
    )
    return Denial(
        Capability(CapabilityKind.PROTECTED_METADATA, first.path),
        DenialSource.PLATFORM_SANDBOX,
        f"{REFUSED_PROTECTED}: the run created {first.relative}{more} ({done})",
        recoverable=True,
        next_action=NextAction.REQUEST_APPROVAL,
    )


def mark_refused(changes: list[Change], refused: list[Refused]) -> list[Change]:
    """The outcome's changes with the refused paths marked (and listed when the watcher
    did not report them, as git's object store is not)."""
    names = {r.relative for r in refused}
    out = [
        Change(c.path, c.kind, c.protected, refused=True) if c.path in names or _below(c.path, names) else c
        for c in changes
    ]
    seen = {c.path for c in out}
    out.extend(
        Change(r.relative, ChangeKind.ADDED, True, refused=True) for r in refused if r.relative not in seen
    )
    return out


def _below(path: str, names: set[str]) -> bool:
    return any(path.startswith(n.rstrip("/") + "/") for n in names)
