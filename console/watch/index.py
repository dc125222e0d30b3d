"""The stat index of one workspace tree, and how a change is judged against it.

The event stream says that something happened to a path; only the index knows what
was there before. It holds every watched directory (inode, mtime, the names in it) and
the full ``lstat`` key of every protected entry, so that:

- the final state of a path is checked with ``lstat`` and compared with the index: a
  path that existed before is ``modified`` even when watchfiles says ``added`` (an
  atomic rename-over), one that did not is ``added``;
- a directory that appears (``mkdir``, a rename into the workspace, a deleted and
  recreated directory) is walked, and everything in it is reported, because inotify
  only reports the directory itself when it is moved in;
- a periodic rescan finds what the event stream could not see (an overflowed queue,
  a batch lost to an error, a write through a hard link from outside the workspace):
  it lists every directory whose mtime moved and re-stats every protected entry.

Walks and rescans remember what they reported for a few seconds so that the raw event
for the same change, arriving a moment later, is not reported twice.

Everything here runs in the root's worker thread; nothing is thread-safe by itself.
"""

from __future__ import annotations

import itertools
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from console.contract.outcome import ChangeKind
from console.policy.repository import REPOSITORY_PATTERN, SHAPE_NAMES, git_files, is_repository
from console.watch.baseline import Baselines
from console.watch.events import Source
from console.watch.noise import quiet_reason
from console.watch.scope import Scope

ADDED, MODIFIED, DELETED = ChangeKind.ADDED, ChangeKind.MODIFIED, ChangeKind.DELETED
RAW_ADDED, RAW_MODIFIED, RAW_DELETED = 1, 2, 3

# How long a walk or rescan report suppresses the raw event for the same change.
RECENT_S = 5.0
# A directory modified this close to its last listing is listed again at the next rescan.
RACY_S = 1.0
# ctimes further than this from now are not trusted as the time of the change.
TRUST_WINDOW_S = 60.0

Key = tuple[int, int, int, int, int, int, int, int, int]

_generations = itertools.count(1)


def key_of(st: os.stat_result) -> Key:
    return (
        st.st_mode,
        st.st_ino,
        st.st_dev,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_nlink,
        st.st_uid,
        st.st_gid,
    )


def _dir_key(k: Key) -> tuple[int, ...]:
    # A directory's mtime and size move with every entry in it; its identity and
    # permissions are what a protected directory's "modified" is about.
    return (k[0], k[1], k[2], k[7], k[8])


def _same_state(a: Key | None, b: Key | None) -> bool:
    if a is None or b is None:
        return a is b
    if stat.S_ISDIR(a[0]) and stat.S_ISDIR(b[0]):
        return _dir_key(a) == _dir_key(b)
    return a == b


def lstat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def stat_root(root: str) -> os.stat_result | None:
    """The root may itself be a symlink to the workspace: follow it, and say None unless
    it is a directory."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return st if stat.S_ISDIR(st.st_mode) else None


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def _split(rel: str) -> tuple[str, str]:
    head, _, tail = rel.rpartition("/")
    return head, tail


@dataclass(slots=True)
class DirNode:
    ino: int
    mtime_ns: int
    # Which incarnation of the directory this is. A directory deleted and recreated
    # often gets the same inode number back, but its inotify watch died with the old
    # one: the generation changes whenever the directory may have been replaced.
    gen: int = field(default_factory=lambda: next(_generations))
    listed_at: float = 0.0
    files: set[str] = field(default_factory=set)  # everything that is not a watched directory
    subdirs: set[str] = field(default_factory=set)  # watched directories
    excluded: set[str] = field(default_factory=set)  # skipped dirs, symlinks to dirs, unreadable dirs


class Record(NamedTuple):
    """A change before it gets a sequence number and an attribution (a tuple: a burst
    makes tens of thousands of them)."""

    path: str
    kind: ChangeKind
    protected: str | None
    is_dir: bool
    symlink_escape: bool
    size: int | None
    mode: int | None
    changed_at: float
    source: Source
    quiet: str | None = None  # why a protected change is noise (noise.py), set by floods.annotate
    group: str | None = None  # the flood group it may be folded into (floods.py); None: alone


@dataclass(slots=True)
class Plan:
    """What to hand watchfiles: directories watched alone, and subtrees watched whole.

    A directory with a skipped directory, a symlink to a directory or an unreadable
    directory anywhere below it is watched on its own (non-recursively), and its other
    subdirectories are planned the same way; every other subtree is watched whole. So
    no inotify watch is spent on a skipped tree and notify never follows a symlink out
    of the workspace.
    """

    alone: tuple[str, ...]
    whole: tuple[str, ...]


class TreeIndex:
    def __init__(self, root: str, scope: Scope, baselines: Baselines) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.scope = scope
        self.baselines = baselines
        self.dirs: dict[str, DirNode] = {}
        self.prot: dict[str, Key] = {}
        self.recent: dict[str, tuple[Key | None, float]] = {}
        self.plan_dirty = True
        self.unreadable: set[str] = set()
        self.root_ino: int | None = None

    # -- helpers -----------------------------------------------------------------

    def abs(self, rel: str) -> str:
        return f"{self.root}/{rel}" if rel else self.root

    def rel(self, path: str) -> str | None:
        if path == self.root:
            return ""
        prefix = self.root + "/"
        if not path.startswith(prefix):
            return None
        rel = path[len(prefix) :].rstrip("/")
        return rel if rel and "/../" not in f"/{rel}/" else None

    def match(self, rel: str) -> str | None:
        return self.scope.protected.match_in(self.root, rel)

    def _shaped(self, rels: Iterable[str], out: list[Record], source: Source, now: float) -> None:
        """A change to ``HEAD``, ``objects``, ``refs`` or ``config`` can make its directory
        a repository by shape (console/policy/repository.py): its git files written
        before that were ordinary then, and are protected now; each is reported as a
        protected addition (its baseline empty: all of it is news)."""
        folders = {_split(rel)[0] for rel in rels if _split(rel)[1] in SHAPE_NAMES}
        for folder in sorted(folders):
            if _split(folder)[1] == ".git" or not is_repository(self.abs(folder)):
                continue
            for rel in git_files(self.root, folder):
                found = [rel]
                if _split(rel)[1] == "hooks" and rel in self.dirs:
                    found = self._files_below(rel)
                for path in found:
                    if path in self.prot:
                        continue
                    st = lstat_or_none(self.abs(path))
                    if st is None or stat.S_ISDIR(st.st_mode):
                        continue
                    self.prot[path] = key_of(st)
                    self.baselines.take_empty(path)
                    out.append(self._record(path, ADDED, st, source, now, REPOSITORY_PATTERN))

    def _files_below(self, rel: str) -> list[str]:
        out: list[str] = []
        stack = [rel]
        while stack:
            d = stack.pop()
            node = self.dirs.get(d)
            if node is None:
                continue
            out.extend(_join(d, f) for f in sorted(node.files))
            stack.extend(_join(d, sub) for sub in node.subdirs)
        return out

    def _escapes(self, rel: str, st: os.stat_result) -> bool:
        if not stat.S_ISLNK(st.st_mode):
            return False
        target = os.path.realpath(self.abs(rel))
        return not (target == self.real_root or target.startswith(self.real_root.rstrip("/") + "/"))

    def _changed_at(self, st: os.stat_result | None, now: float) -> float:
        if st is not None and now - TRUST_WINDOW_S <= st.st_ctime <= now + 1.0:
            return st.st_ctime
        return now

    def _deleted_at(self, rel: str, now: float) -> float:
        # Removing an entry updates its directory's mtime: the best time we have.
        parent = lstat_or_none(self.abs(_split(rel)[0]))
        if parent is not None and now - TRUST_WINDOW_S <= parent.st_mtime <= now + 1.0:
            return parent.st_mtime
        return now

    def _remember(self, rel: str, key: Key | None, now_mono: float) -> None:
        self.recent.pop(rel, None)
        self.recent[rel] = (key, now_mono + RECENT_S)

    def _expire_recent(self, now_mono: float) -> None:
        recent = self.recent
        while recent:
            first = next(iter(recent))
            if recent[first][1] > now_mono:
                break
            del recent[first]

    def _record(
        self,
        rel: str,
        kind: ChangeKind,
        st: os.stat_result | None,
        source: Source,
        now: float,
        prot: str | None,
    ) -> Record:
        if kind is DELETED or st is None:
            return Record(rel, kind, prot, False, False, None, None, self._deleted_at(rel, now), source)
        is_dir = stat.S_ISDIR(st.st_mode)
        return Record(
            path=rel,
            kind=kind,
            protected=prot,
            is_dir=is_dir,
            symlink_escape=self._escapes(rel, st),
            size=None if is_dir else st.st_size,
            mode=st.st_mode,
            changed_at=self._changed_at(st, now),
            source=source,
        )

    def _is_link_to_dir(self, rel: str) -> bool:
        try:
            return stat.S_ISDIR(os.stat(self.abs(rel)).st_mode)
        except OSError:
            return False

    def _scan(self, rel: str) -> list[tuple[str, bool, bool]] | None:
        """(name, is_dir, is_symlink) of each entry; None when the directory is gone.

        Raises PermissionError when it cannot be read.
        """
        try:
            with os.scandir(self.abs(rel)) as it:
                out = []
                for entry in it:
                    try:
                        is_link = entry.is_symlink()
                        is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_link = is_dir = False
                    out.append((entry.name, is_dir, is_link))
                return out
        except (FileNotFoundError, NotADirectoryError):
            return None

    # -- building ------------------------------------------------------------------

    def build(self, *, report: bool, out: list[Record], source: Source) -> bool:
        """Index the tree from the root. With ``report`` every entry is reported as added
        (a root that appeared while watched) and protected files get empty baselines;
        without, protected text files get their baselines. False if the root is missing."""
        st = stat_root(self.root)
        if st is None:
            return False
        self.dirs.clear()
        self.prot.clear()
        self.unreadable.clear()
        self.root_ino = st.st_ino
        self.dirs[""] = DirNode(st.st_ino, st.st_mtime_ns)
        self._populate("", report=report, baseline=not report, out=out, source=source, now=time.time())
        self.plan_dirty = True
        return True

    def _populate(
        self, start: str, *, report: bool, baseline: bool, out: list[Record], source: Source, now: float
    ) -> None:
        """List ``start`` (already in ``dirs``) and everything below it, adding it all."""
        now_mono = time.monotonic()
        stack = [start]
        while stack:
            rel = stack.pop()
            node = self.dirs.get(rel)
            if node is None:
                continue
            st = lstat_or_none(self.abs(rel)) if rel else stat_root(self.root)
            if st is not None:
                node.mtime_ns, node.ino = st.st_mtime_ns, st.st_ino
            node.listed_at = now
            try:
                entries = self._scan(rel)
            except PermissionError:
                self._mark_unreadable(rel)
                continue
            if entries is None:
                continue
            for name, is_dir, is_link in entries:
                child = _join(rel, name)
                if is_dir:
                    if self.scope.skips_dir(child):
                        node.excluded.add(name)
                        continue
                    cst = lstat_or_none(self.abs(child))
                    if cst is None:
                        continue
                    if stat.S_ISDIR(cst.st_mode):
                        node.subdirs.add(name)
                        self.dirs[child] = DirNode(cst.st_ino, cst.st_mtime_ns)
                        dprot = self.match(child)
                        if dprot is not None:
                            self.prot[child] = key_of(cst)
                        if report:
                            out.append(self._record(child, ADDED, cst, source, now, dprot))
                            self._remember(child, key_of(cst), now_mono)
                        stack.append(child)
                        continue
                node.files.add(name)
                if is_link and self._is_link_to_dir(child):
                    node.excluded.add(name)
                prot = self.match(child)
                if prot is None and not report:
                    continue
                fst = lstat_or_none(self.abs(child))
                if fst is None:
                    continue
                if prot is not None:
                    self.prot[child] = key_of(fst)
                    if baseline:
                        self.baselines.take(child)
                    else:
                        self.baselines.take_empty(child)
                if report:
                    out.append(self._record(child, ADDED, fst, source, now, prot))
                    self._remember(child, key_of(fst), now_mono)

    def _mark_unreadable(self, rel: str) -> None:
        """A directory we may not list is excluded like a skipped one, so that notify is
        never asked to walk it; the rescan retries it."""
        if not rel:
            return
        self.unreadable.add(rel)
        parent, name = _split(rel)
        pnode = self.dirs.get(parent)
        if pnode is not None:
            pnode.subdirs.discard(name)
            pnode.excluded.add(name)
        self.dirs.pop(rel, None)
        self.plan_dirty = True

    def _retry_unreadable(self, out: list[Record], source: Source, now: float) -> None:
        for rel in sorted(self.unreadable):
            path = self.abs(rel)
            st = lstat_or_none(path)
            parent, name = _split(rel)
            pnode = self.dirs.get(parent)
            if st is None or not stat.S_ISDIR(st.st_mode) or pnode is None:
                self.unreadable.discard(rel)
                continue
            if os.access(path, os.R_OK | os.X_OK):
                self.unreadable.discard(rel)
                pnode.excluded.discard(name)
                self._add_dir(rel, st, out, source, now)

    # -- removal -------------------------------------------------------------------

    def _drop_file(self, rel: str, out: list[Record], source: Source, now: float, now_mono: float) -> None:
        parent, name = _split(rel)
        node = self.dirs.get(parent)
        if node is not None:
            node.files.discard(name)
            if name in node.excluded:
                node.excluded.discard(name)
                self.plan_dirty = True
        self.prot.pop(rel, None)
        out.append(self._record(rel, DELETED, None, source, now, self.match(rel)))
        self._remember(rel, None, now_mono)

    def _drop_dir(self, rel: str, out: list[Record], source: Source, now: float, now_mono: float) -> None:
        """Forget a directory and everything below it, reporting each as deleted."""
        parent, name = _split(rel)
        pnode = self.dirs.get(parent)
        if pnode is not None:
            pnode.subdirs.discard(name)
        order: list[str] = []
        stack = [rel]
        while stack:
            d = stack.pop()
            order.append(d)
            node = self.dirs.get(d)
            if node is not None:
                stack.extend(_join(d, s) for s in node.subdirs)
        deleted_at = self._deleted_at(rel, now)
        for d in reversed(order):
            node = self.dirs.pop(d, None)
            if node is None:
                continue
            for f in sorted(node.files):
                frel = _join(d, f)
                self.prot.pop(frel, None)
                out.append(
                    Record(frel, DELETED, self.match(frel), False, False, None, None, deleted_at, source)
                )
                self._remember(frel, None, now_mono)
            self.prot.pop(d, None)
            self.unreadable.discard(d)
            out.append(Record(d, DELETED, self.match(d), True, False, None, None, deleted_at, source))
            self._remember(d, None, now_mono)
        self.plan_dirty = True

    def drop_all(self, out: list[Record], source: Source) -> None:
        """The root is gone: report everything still indexed as deleted."""
        now, now_mono = time.time(), time.monotonic()
        root = self.dirs.get("")
        if root is not None:
            for name in sorted(root.files):
                self._drop_file(name, out, source, now, now_mono)
            for name in sorted(root.subdirs):
                self._drop_dir(name, out, source, now, now_mono)
        self.dirs.clear()
        self.prot.clear()
        self.unreadable.clear()
        self.root_ino = None
        self.plan_dirty = True

    # -- the event stream ------------------------------------------------------------

    def apply_raw(
        self,
        raw: Iterable[tuple[Any, str]],
        source: Source,
        out: list[Record],
        urgent: Callable[[list[Record]], None] | None = None,
    ) -> None:
        """Judge one batch of watchfiles changes (``(Change, absolute path)``).

        Protected paths are judged first and, with ``urgent``, handed over before the
        rest of the batch: in a burst of thousands of files they do not wait for it.
        """
        now, now_mono = time.time(), time.monotonic()
        self._expire_recent(now_mono)
        by_rel: dict[str, set[int]] = {}
        for change, path in raw:
            rel = self.rel(path)
            if rel:
                by_rel.setdefault(rel, set()).add(int(change))
        synced: set[str] = set()
        rest: list[tuple[str, str | None]] = []
        first: list[Record] = []
        for rel in sorted(by_rel):
            prot = self.match(rel)
            if prot is None:
                rest.append((rel, prot))
            else:
                self._apply_one(rel, by_rel[rel], source, first, now, now_mono, synced, prot)
        if urgent is not None and first:
            urgent(first)
        else:
            out.extend(first)
        for rel, prot in rest:
            self._apply_one(rel, by_rel[rel], source, out, now, now_mono, synced, prot)
        self._shaped(by_rel, out, source, now)

    def _nearest_known(self, rel: str) -> str | None:
        """The closest indexed ancestor directory of ``rel``, or None when an ancestor is a
        known file, a symlink or excluded (the path is not ours to report)."""
        parts = rel.split("/")[:-1]
        known = ""
        for i, name in enumerate(parts):
            node = self.dirs.get(known)
            if node is None:
                return None
            if name in node.excluded or name in node.files:
                return None
            nxt = "/".join(parts[: i + 1])
            if nxt not in self.dirs:
                return known
            known = nxt
        return known

    def _apply_one(
        self,
        rel: str,
        kinds: set[int],
        source: Source,
        out: list[Record],
        now: float,
        now_mono: float,
        synced: set[str],
        prot: str | None,
    ) -> None:
        st = lstat_or_none(self.abs(rel))
        key = key_of(st) if st is not None else None
        seen = self.recent.get(rel)
        if seen is not None and _same_state(seen[0], key):
            return  # a walk or a rescan already reported this very state
        parent, name = _split(rel)
        pnode = self.dirs.get(parent)
        if pnode is None:
            anchor = self._nearest_known(rel)
            if anchor is None or anchor in synced:
                return
            synced.add(anchor)
            self.sync_dir(anchor, deep=False, source=source, out=out)
            return  # the sync reported whatever is new under the anchor, this path included
        was_dir = name in pnode.subdirs
        was_file = name in pnode.files
        if st is None:
            if was_dir:
                self._drop_dir(rel, out, source, now, now_mono)
            elif was_file:
                self._drop_file(rel, out, source, now, now_mono)
            elif name in pnode.excluded:
                pnode.excluded.discard(name)
                self.plan_dirty = True
            elif RAW_ADDED in kinds and prot is not None and quiet_reason(rel) is None:
                # Created and removed within one batch: a protected file that existed for a
                # moment (a hook that ran and was deleted) is reported both ways. An
                # editor's temporary (an atomic save's, a vim probe) is not: the save is
                # the one "modified" of the file it was renamed over.
                when = self._deleted_at(rel, now)
                self.baselines.take_empty(rel)
                out.append(Record(rel, ADDED, prot, False, False, None, None, when, source))
                out.append(Record(rel, DELETED, prot, False, False, None, None, when, source))
            return
        assert key is not None
        if stat.S_ISDIR(st.st_mode):
            if self.scope.skips_dir(rel):
                if was_file:
                    self._drop_file(rel, out, source, now, now_mono)
                if was_dir:
                    self._drop_dir(rel, out, source, now, now_mono)
                if name not in pnode.excluded:
                    pnode.excluded.add(name)
                    self.plan_dirty = True
                return
            if was_dir:
                node = self.dirs[rel]
                if node.ino != st.st_ino or RAW_ADDED in kinds or RAW_DELETED in kinds:
                    self.renew(rel)
                    self.sync_dir(rel, deep=True, source=source, out=out)
                elif RAW_MODIFIED in kinds:
                    old = self.prot.get(rel)
                    if prot is not None and (old is None or _dir_key(old) != _dir_key(key)):
                        self.prot[rel] = key
                        out.append(self._record(rel, MODIFIED, st, source, now, prot))
                return
            if was_file:
                self._drop_file(rel, out, source, now, now_mono)
            self._add_dir(rel, st, out, source, now)
            return
        if was_dir:
            self._drop_dir(rel, out, source, now, now_mono)
            was_file = False
        if was_file:
            kind = MODIFIED
        else:
            kind = ADDED
            pnode.files.add(name)
            if prot is not None:
                self.baselines.take_empty(rel)
        if prot is not None:
            self.prot[rel] = key
        if stat.S_ISLNK(st.st_mode):
            is_dir_link = self._is_link_to_dir(rel)
            if is_dir_link != (name in pnode.excluded):
                (pnode.excluded.add if is_dir_link else pnode.excluded.discard)(name)
                self.plan_dirty = True
        elif name in pnode.excluded:
            pnode.excluded.discard(name)
            self.plan_dirty = True
        out.append(self._record(rel, kind, st, source, now, prot))

    def renew(self, rel: str) -> None:
        """The directory may have been replaced: give it a new generation (its watch, if
        it is watched on its own, must be started again) and refresh its protected key."""
        node = self.dirs.get(rel)
        if node is None:
            return
        node.gen = next(_generations)
        self.plan_dirty = True
        if rel in self.prot:
            st = lstat_or_none(self.abs(rel))
            if st is not None:
                self.prot[rel] = key_of(st)

    def _add_dir(self, rel: str, st: os.stat_result, out: list[Record], source: Source, now: float) -> None:
        parent, name = _split(rel)
        pnode = self.dirs[parent]
        pnode.subdirs.add(name)
        pnode.files.discard(name)
        pnode.excluded.discard(name)
        self.dirs[rel] = DirNode(st.st_ino, st.st_mtime_ns)
        prot = self.match(rel)
        if prot is not None:
            self.prot[rel] = key_of(st)
        out.append(self._record(rel, ADDED, st, source, now, prot))
        self._remember(rel, key_of(st), time.monotonic())
        self._populate(rel, report=True, baseline=False, out=out, source=source, now=now)
        self.plan_dirty = True

    # -- rescans ---------------------------------------------------------------------

    def sync_dir(
        self, rel: str, *, deep: bool, source: Source, out: list[Record], young: float | None = None
    ) -> None:
        """Compare a directory's listing with the index and report the difference; with
        ``deep``, do the same for every directory below it and re-stat protected entries.

        With ``young`` (a time), changes made at or after it are left alone: the event
        stream is probably about to report them, and the next rescan looks again.
        """
        now, now_mono = time.time(), time.monotonic()
        stack = [rel]
        while stack:
            d = stack.pop()
            node = self.dirs.get(d)
            if node is None:
                continue
            st = lstat_or_none(self.abs(d)) if d else stat_root(self.root)
            if st is None or not stat.S_ISDIR(st.st_mode):
                if d:
                    self._drop_dir(d, out, source, now, now_mono)
                continue
            try:
                entries = self._scan(d)
            except PermissionError:
                self._mark_unreadable(d)
                continue
            if entries is None:
                if d:
                    self._drop_dir(d, out, source, now, now_mono)
                continue
            settled = young is None or st.st_mtime < young
            if node.ino != st.st_ino:
                self.renew(d)
            node.mtime_ns = st.st_mtime_ns if settled else -1
            node.ino, node.listed_at = st.st_ino, now
            files: set[str] = set()
            subdirs: set[str] = set()
            excluded: set[str] = set()
            for name, is_dir, is_link in entries:
                child = _join(d, name)
                if is_dir:
                    if self.scope.skips_dir(child) or child in self.unreadable:
                        excluded.add(name)
                    else:
                        subdirs.add(name)
                else:
                    files.add(name)
                    if is_link and self._is_link_to_dir(child):
                        excluded.add(name)
            listed = files | subdirs | excluded
            self.unreadable -= {
                u for u in self.unreadable if _split(u)[0] == d and _split(u)[1] not in listed
            }
            if settled:
                for name in sorted(node.files - files):
                    self._drop_file(_join(d, name), out, source, now, now_mono)
                for name in sorted(node.subdirs - subdirs):
                    self._drop_dir(_join(d, name), out, source, now, now_mono)
            if excluded != node.excluded:
                node.excluded = excluded
                self.plan_dirty = True
            for name in sorted(files - node.files):
                child = _join(d, name)
                fst = lstat_or_none(self.abs(child))
                if fst is None or (young is not None and fst.st_ctime >= young):
                    continue
                node.files.add(name)
                prot = self.match(child)
                if prot is not None:
                    self.prot[child] = key_of(fst)
                    self.baselines.take_empty(child)
                out.append(self._record(child, ADDED, fst, source, now, prot))
                self._remember(child, key_of(fst), now_mono)
            for name in sorted(subdirs - node.subdirs):
                child = _join(d, name)
                cst = lstat_or_none(self.abs(child))
                if cst is None or not stat.S_ISDIR(cst.st_mode):
                    continue
                if young is not None and cst.st_ctime >= young:
                    continue
                if name in node.files:  # a file replaced by a directory
                    self._drop_file(child, out, source, now, now_mono)
                self._add_dir(child, cst, out, source, now)
            if deep:
                for name in sorted(files & node.files):
                    self._restat(_join(d, name), out, source, now, now_mono, young)
                for name in sorted(subdirs & node.subdirs):
                    child = _join(d, name)
                    cnode = self.dirs.get(child)
                    cst = lstat_or_none(self.abs(child))
                    if cnode is not None and cst is not None and cst.st_ino != cnode.ino:
                        self._drop_dir(child, out, source, now, now_mono)
                        if stat.S_ISDIR(cst.st_mode):
                            self._add_dir(child, cst, out, source, now)
                    else:
                        stack.append(child)

    def _restat(
        self, rel: str, out: list[Record], source: Source, now: float, now_mono: float, young: float | None
    ) -> None:
        old = self.prot.get(rel)
        if old is None:
            return
        st = lstat_or_none(self.abs(rel))
        if st is None:
            if young is not None and self._deleted_at(rel, now) >= young:
                return
            if rel in self.dirs:
                self._drop_dir(rel, out, source, now, now_mono)
            else:
                self._drop_file(rel, out, source, now, now_mono)
            return
        key = key_of(st)
        same = _dir_key(old) == _dir_key(key) if stat.S_ISDIR(old[0]) else old == key
        if same or (young is not None and st.st_ctime >= young):
            return
        if stat.S_ISDIR(old[0]) != stat.S_ISDIR(key[0]):
            # A protected file became a directory or back: the parent's listing will tell.
            parent = _split(rel)[0]
            if parent in self.dirs:
                self.sync_dir(parent, deep=False, source=source, out=out, young=young)
            return
        self.prot[rel] = key
        out.append(self._record(rel, MODIFIED, st, source, now, self.match(rel)))
        self._remember(rel, key, now_mono)

    def rescan(self, out: list[Record], *, young: float | None = None) -> None:
        """List every directory whose mtime moved (or that was listed too soon after a
        change to trust its mtime), then re-stat every protected entry."""
        source: Source = "rescan"
        now, now_mono = time.time(), time.monotonic()
        self._expire_recent(now_mono)
        self._retry_unreadable(out, source, now)
        for rel in sorted(self.dirs):
            node = self.dirs.get(rel)
            if node is None:
                continue
            st = lstat_or_none(self.abs(rel)) if rel else stat_root(self.root)
            if st is None or not stat.S_ISDIR(st.st_mode):
                parent = _split(rel)[0]
                if rel and parent in self.dirs:
                    self.sync_dir(parent, deep=False, source=source, out=out, young=young)
                continue
            if st.st_ino != node.ino:
                # Replaced by another directory under the same name while its events were
                # lost: its parent's listing cannot tell, and its watch died with the old
                # one. The deep listing reports what is inside and renews it, so the worker
                # watches it again; a protected directory keeps its old key for the re-stat
                # below, which reports the replacement itself once it has settled.
                old = self.prot.get(rel)
                self.sync_dir(rel, deep=True, source=source, out=out, young=young)
                if old is not None and rel in self.prot:
                    self.prot[rel] = old
                continue
            racy = node.mtime_ns / 1e9 >= node.listed_at - RACY_S
            if racy or st.st_mtime_ns != node.mtime_ns:
                self.sync_dir(rel, deep=False, source=source, out=out, young=young)
        for rel in sorted(self.prot):
            self._restat(rel, out, source, now, now_mono, young)

    # -- planning --------------------------------------------------------------------

    def plan(self) -> Plan:
        mixed: set[str] = set()
        for rel, node in self.dirs.items():
            if node.excluded:
                r = rel
                while r not in mixed:
                    mixed.add(r)
                    if not r:
                        break
                    r = _split(r)[0]
        self.plan_dirty = False
        if "" not in mixed:
            return Plan((), ("",)) if "" in self.dirs else Plan((), ())
        whole = sorted(_join(m, s) for m in mixed for s in self.dirs[m].subdirs if _join(m, s) not in mixed)
        return Plan(tuple(sorted(mixed)), tuple(whole))

    @property
    def file_count(self) -> int:
        return sum(len(n.files) for n in self.dirs.values())
