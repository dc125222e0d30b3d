"""Finding what must stay read-only inside the writable part of a sandbox.

bubblewrap can only mount over what exists, so each run walks the writable parts of the
workspace for entries matching the protected set (console/policy/protected_set.py) and
the sandbox binds each one read-only over the writable mount. A matched directory is
protected as a whole; it is still looked into, for what could carry its content out:

- **symlinks**: a protected entry that is a symlink cannot be mounted over (a mount
  lands on its target), so its *target* is protected when it lies in the writable area
  (and a symlinked ``.git`` is walked as the git dir it stands for). The link itself
  stays replaceable where its parent is writable: the watcher reports that change as a
  protected one (tripwire);
- **hardlinks**: a protected file with more than one link has other names; those in the
  writable area (same device and inode) are protected too, so a link made in one run
  cannot keep the file writable in the next.

Also protected: a ``.git`` that is a file (gitfile), the git files of a directory that
is a repository by its shape (console/policy/repository.py), and the paths the
repository's git config names (``core.hooksPath``, includes), passed in as ``extra``.

The walk is bounded: a workspace too large to walk within the budget fails closed
rather than running with protected paths left writable. git's object store is not
searched for protected names (only its ``info/alternates`` is one), but is for hardlinks.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from console.contract.operation import is_within
from console.policy.patterns import GITFILE_PATTERN, ProtectedPaths
from console.policy.repository import REPOSITORY_PATTERN, repository_of

MAX_ENTRIES = 500_000
MAX_MATCHES = 2_000


class ProtectedWalkError(RuntimeError):
    """The walk exceeded its budget; the message says which and what to do."""


@dataclass(frozen=True, slots=True)
class ProtectedMatch:
    path: str
    pattern: str  # the pattern, or what makes it protected ("hardlink of …", "symlink target …")
    is_dir: bool


def _is_object_store(rel: str) -> bool:
    """``…/.git/objects`` (also in submodule git dirs): many files, never a protected name."""
    head, _, name = rel.rpartition("/")
    return name == "objects" and (head.endswith(".git") or "/.git/modules/" in f"/{head}/" or head == ".git")


class _Walk:
    def __init__(
        self,
        workspace_root: str,
        protected: ProtectedPaths,
        skip: tuple[str, ...],
        writable: tuple[str, ...],
        max_entries: int,
        max_matches: int,
    ) -> None:
        self.prefix = workspace_root.rstrip("/") + "/"
        self.protected = protected
        self.skip = skip
        self.writable = writable
        self.max_entries = max_entries
        self.max_matches = max_matches
        self.seen = 0
        self.matches: dict[str, ProtectedMatch] = {}
        self.links: list[tuple[str, str, str]] = []  # (path, rel name, why)
        self.inodes: dict[tuple[int, int], str] = {}  # protected files with st_nlink > 1
        self.interiors: list[tuple[str, str]] = []  # protected directories to look into

    def count(self) -> None:
        self.seen += 1
        if self.seen > self.max_entries:
            raise ProtectedWalkError(
                f"the workspace has more than {self.max_entries} entries to check for protected "
                "paths; narrow the writable area with write_dirs"
            )

    def covered(self, path: str) -> bool:
        return any(is_within(path, m) for m in self.matches) or any(is_within(path, s) for s in self.skip)

    def add(self, path: str, why: str, st: os.stat_result) -> None:
        if self.covered(path):
            return
        is_dir = stat.S_ISDIR(st.st_mode)
        # A deeper match inside this directory is now redundant.
        for inner in [m for m in self.matches if is_within(m, path)]:
            del self.matches[inner]
        self.matches[path] = ProtectedMatch(path, why, is_dir)
        if len(self.matches) > self.max_matches:
            raise ProtectedWalkError(
                f"more than {self.max_matches} protected paths lie in the writable area; "
                "narrow it with write_dirs"
            )
        if is_dir:
            self.interiors.append((path, why))
        elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            self.inodes[(st.st_dev, st.st_ino)] = path

    def names(self, root: str, rel_root: str) -> None:
        """Walk ``root`` matching names as ``rel_root``/… (relative to the workspace)."""
        stack = [(root, rel_root)]
        while stack:
            directory, rel_dir = stack.pop()
            try:
                scan = os.scandir(directory)
            except OSError:
                continue
            with scan:
                for entry in scan:
                    self.count()
                    path = entry.path
                    rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                    if any(is_within(path, s) for s in self.skip):
                        continue
                    is_link = entry.is_symlink()
                    is_dir = entry.is_dir(follow_symlinks=False)
                    pattern = self.protected.match(rel, is_dir=is_dir and not is_link)
                    if pattern is None and self.protected.gitfiles and self.shaped(path, rel):
                        pattern = REPOSITORY_PATTERN  # a git file of a repository by shape
                    if pattern is not None:
                        if is_link:
                            self.links.append((path, rel, pattern))
                            continue
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        self.add(path, pattern, st)
                    elif is_dir and not _is_object_store(rel):
                        stack.append((path, rel))
                    elif is_dir:
                        self.alternates(path, rel)

    def shaped(self, path: str, rel: str) -> bool:
        """``path`` is a git file of a directory that is a repository by its shape."""
        if path == self.prefix + rel:
            return repository_of(self.prefix.rstrip("/"), rel) is not None
        return repository_of("/", path.lstrip("/")) is not None

    def alternates(self, store: str, rel: str) -> None:
        """An object store is not walked (many files, no protected name) but for
        ``info/alternates``, which makes git read objects from elsewhere."""
        path, name = f"{store}/info/alternates", f"{rel}/info/alternates"
        pattern = self.protected.match(name, is_dir=False)
        if pattern is None:
            return
        self.count()
        try:
            st = os.lstat(path)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            self.links.append((path, name, pattern))
        else:
            self.add(path, pattern, st)

    def _entries(
        self, root: str, skip: Callable[[str], bool] = lambda _path: False
    ) -> Iterator[os.DirEntry[str]]:
        """Every entry below ``root`` (counted against the budget), symlinks not followed,
        directories for which ``skip`` says so neither yielded nor descended into."""
        stack = [root]
        while stack:
            try:
                scan = os.scandir(stack.pop())
            except OSError:
                continue
            with scan:
                for entry in scan:
                    self.count()
                    if skip(entry.path):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    yield entry

    def shown(self, path: str) -> str:
        """``path`` relative to the workspace when inside it, as the patterns see it."""
        return path[len(self.prefix) :] if path.startswith(self.prefix) else path

    def interior(self, root: str, why: str) -> None:
        """Inside a protected directory: symlinks pointing out, files with other links."""
        for entry in self._entries(root):
            if entry.is_symlink():
                self.links.append((entry.path, self.shown(entry.path), f"inside {why}"))
            elif entry.is_file(follow_symlinks=False):
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_nlink > 1:
                    self.inodes[(st.st_dev, st.st_ino)] = entry.path

    def follow_links(self) -> None:
        """Protect the targets of protected symlinks that lie in the writable area."""
        done: set[str] = set()
        while self.links or self.interiors:
            while self.interiors:
                self.interior(*self.interiors.pop())
            if not self.links:
                break
            path, rel, why = self.links.pop()
            if path in done:
                continue
            done.add(path)
            target = os.path.realpath(path)
            if not any(is_within(target, w) for w in self.writable) or self.covered(target):
                continue
            try:
                st = os.lstat(target)
            except OSError:
                continue  # dangling: nothing to pin (the watcher reports its creation)
            if rel.rpartition("/")[2] == GITFILE_PATTERN and stat.S_ISDIR(st.st_mode):
                self.names(target, rel)  # a symlinked git dir: its config, hooks … by their git names
            else:
                self.add(target, f"symlink target of {rel} ({why})", st)

    def hardlinks(self) -> None:
        """Other names, in the writable area, of protected files with several links."""
        if not self.inodes:
            return
        wanted = {ino for _, ino in self.inodes}
        for root in _outermost(self.writable):
            for entry in self._entries(root, skip=self.covered):
                if entry.inode() not in wanted or not entry.is_file(follow_symlinks=False):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                original = self.inodes.get((st.st_dev, st.st_ino))
                if original is not None and original != entry.path:
                    self.add(entry.path, f"hardlink of {self.shown(original)}", st)


def find_protected(
    workspace_root: str,
    roots: tuple[str, ...],
    protected: ProtectedPaths,
    skip: tuple[str, ...] = (),
    *,
    extra: tuple[str, ...] = (),
    writable: tuple[str, ...] | None = None,
    max_entries: int = MAX_ENTRIES,
    max_matches: int = MAX_MATCHES,
) -> list[ProtectedMatch]:
    """Protected entries below each of ``roots`` (writable directories inside the workspace).

    ``skip`` lists directories not to descend into (hidden paths: already covered).
    ``extra``: further absolute paths to protect when they exist in ``roots`` (the git
    config's targets). ``writable``: the whole writable area (``roots`` plus write dirs
    outside the workspace), where symlink targets and hardlinks are looked for; defaults
    to ``roots``.
    """
    area = tuple(writable) if writable is not None else tuple(roots)
    walk = _Walk(workspace_root, protected, skip, area, max_entries, max_matches)
    for root in _outermost(roots):
        rel = root[len(walk.prefix) :] if root.startswith(walk.prefix) else ""
        walk.names(root, rel)
    for path in extra:
        if not any(is_within(path, r) for r in roots):
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue
        rel = path[len(walk.prefix) :] if path.startswith(walk.prefix) else path
        if stat.S_ISLNK(st.st_mode):
            walk.links.append((path, rel, "named by git config"))
        else:
            walk.add(path, "named by git config (core.hooksPath, include.path)", st)
    walk.follow_links()
    walk.hardlinks()
    return sorted(walk.matches.values(), key=lambda m: m.path)


def _outermost(roots: tuple[str, ...]) -> list[str]:
    """Roots with those nested in another dropped, so nothing is walked twice."""
    out: list[str] = []
    for root in sorted(set(roots), key=len):
        if not any(is_within(root, kept) for kept in out):
            out.append(root)
    return out
