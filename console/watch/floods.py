"""Floods of protected changes become one item each, in the root's worker thread.

Without it, 20,000 files created under ``.git/hooks/flood/`` would be 20,000 protected
events: 20,000 attributions, history rows and frames. ``coalesce`` turns the protected records
of one batch that fall in one *group* into one ``Flood`` once there are more than
``FLOOD_MIN`` of them: a count, and the records themselves (the daemon keeps a bounded
sample). A group is the directory right below the protected directory the change is in
(``.git/hooks/flood`` for anything under it), or the change's own directory when no
directory above it is protected (``a/b`` for ``a/b/k1.pem``). Quiet records (noise.py)
and loud ones are never in the same flood.

Some changes always stand alone, so a flood cannot hide them: a path protected by a
literal pattern (``.env``, ``.git/config``), a name git runs as a hook
(``pre-commit``), and a modification of a file that had content when watching began.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from console.contract.outcome import ChangeKind
from console.policy.patterns import ProtectedPaths
from console.watch.baseline import Baselines
from console.watch.index import Record
from console.watch.noise import is_init_config, quiet_reason

FLOOD_MIN = 20  # more protected changes than this in one group of one batch: one flood

# The hook names git runs (githooks(5)); a file by one of these names is never folded.
GIT_HOOKS = frozenset(
    {
        "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
        "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
        "post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive",
        "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc",
        "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist",
        "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit", "post-index-change",
    }
)  # fmt: skip


class Flood(NamedTuple):
    """More than ``FLOOD_MIN`` protected changes of one batch in one group."""

    group: str
    records: list[Record]
    quiet: str | None


def _literal(pattern: str) -> bool:
    return not any(c in pattern for c in "*?[")


class _Groups:
    """Group keys, with the protected-ancestor search cached per directory."""

    def __init__(self, protected: ProtectedPaths) -> None:
        self.protected = protected
        self._by_dir: dict[str, str] = {}

    def of_dir(self, directory: str) -> str:
        hit = self._by_dir.get(directory)
        if hit is not None:
            return hit
        parts = directory.split("/") if directory else []
        group = directory
        for i in range(1, len(parts) + 1):
            if self.protected.match("/".join(parts[:i]), is_dir=True) is not None:
                group = "/".join(parts[: i + 1])
                break
        if len(self._by_dir) < 10_000:
            self._by_dir[directory] = group
        return group


MAX_SIBLINGS = 512  # entries looked at for a symlink onto a quiet name


def _linked_from_beside(root: str, rel: str) -> bool:
    """A symlink in the same directory points at ``rel``: a quiet name (``x.sample``,
    ``x~``) that a protected name runs through is not noise."""
    path = os.path.join(root, rel)
    directory = os.path.dirname(path)
    try:
        with os.scandir(directory) as entries:
            for i, entry in enumerate(entries):
                if i >= MAX_SIBLINGS:
                    return True  # too many to check: stay loud rather than guess
                if entry.is_symlink():
                    target = os.readlink(entry.path)
                    if os.path.normpath(os.path.join(directory, target)) == os.path.normpath(path):
                        return True
    except OSError:
        return False
    return False


def _new_since_watching(baselines: Baselines, rel: str) -> bool:
    previous = baselines.previous(rel)
    return previous is not None and not previous.exists


def annotate(rec: Record, groups: _Groups, baselines: Baselines) -> Record:
    """Set ``quiet`` and ``group`` on a protected record (None group: it stands alone)."""
    assert rec.protected is not None
    quiet = quiet_reason(rec.path, is_dir=rec.is_dir)
    if quiet is not None and _linked_from_beside(baselines.root, rec.path):
        quiet = None  # `pre-commit -> pre-commit.sample`: the "sample" is what git runs
    name = rec.path.rpartition("/")[2]
    if (
        quiet is None
        and name == "config"
        and (rec.kind is ChangeKind.ADDED or _new_since_watching(baselines, rec.path))
        and rec.path.endswith(".git/config")
        and is_init_config(os.path.join(baselines.root, rec.path))
    ):
        # (git init writes its config more than once: a later write of a config that did
        # not exist when watching began, and still holds only git init's keys, is as quiet)
        quiet = "new repository's default config (git init)"
    elif quiet is None and rec.is_dir and rec.kind is ChangeKind.ADDED:
        quiet = "new directory (each file in it is reported)"
    group: str | None
    if (
        _literal(rec.protected)
        or (name in GIT_HOOKS and quiet is None)
        or (rec.kind is ChangeKind.MODIFIED and not rec.is_dir and baselines.get(rec.path))
    ):
        group = None
    else:
        group = groups.of_dir(rec.path if rec.is_dir else rec.path.rpartition("/")[0])
    if quiet is None and group is None:
        return rec
    return rec._replace(quiet=quiet, group=group)


def coalesce(records: list[Record], protected: ProtectedPaths, baselines: Baselines) -> list[Record | Flood]:
    """The batch with each group's protected records folded into one Flood when there
    are more than ``FLOOD_MIN``; order kept (a flood stands where its first record was)."""
    groups = _Groups(protected)
    out: list[Record | tuple[str, bool]] = []
    members: dict[tuple[str, bool], list[Record]] = {}
    for rec in records:
        if rec.protected is None:
            out.append(rec)
            continue
        rec = annotate(rec, groups, baselines)
        if rec.group is None:
            out.append(rec)
            continue
        key = (rec.group, rec.quiet is not None)
        bucket = members.get(key)
        if bucket is None:
            members[key] = bucket = []
            out.append(key)
        bucket.append(rec)
    if not members:
        return list(out)  # type: ignore[arg-type]  # no keys in it
    final: list[Record | Flood] = []
    for entry in out:
        if isinstance(entry, Record):
            final.append(entry)
            continue
        bucket = members[entry]
        if len(bucket) > FLOOD_MIN:
            final.append(Flood(entry[0], bucket, bucket[0].quiet))
        else:
            final.extend(bucket)
    return final
