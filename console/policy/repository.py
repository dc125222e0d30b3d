"""Git repositories by shape: a directory git takes for a repository, whatever its name.

``git`` looks for a repository in the current directory and each parent: a ``.git``
below it, or the directory itself when it has the shape of a git dir (``HEAD``,
``objects/`` and ``refs/``). A sandboxed run can therefore plant ``docs/HEAD``,
``docs/objects/``, ``docs/refs/`` and a ``docs/config`` with ``core.fsmonitor`` (or
``core.worktree = ..`` to reach the checkout), and the operator's next ``cd docs && git
status`` runs the payload outside any sandbox. Names alone cannot protect that, so the
watcher and the sandbox also ask this module, with the file system, whether a path is
one of a repository's own files.

A directory is a repository when it has ``HEAD`` (a file), ``objects/`` and ``refs/``
(directories), or a ``config`` whose sections include ``core``, ``include`` or
``includeIf`` (written first, before the rest of the shape). Its protected files are
what the protected set protects in ``.git``: ``config``, ``config.worktree``,
``commondir``, ``hooks/**``, ``info/attributes`` and ``objects/info/alternates``.
``.git`` directories themselves are left to the patterns.

Reads are bounded (a few ``lstat`` calls and at most 64 KiB of one config) and never
follow a symlink at the last step.
"""

from __future__ import annotations

import os
import re
import stat

REPOSITORY_PATTERN = "(a git repository by shape)"
MAX_CONFIG_BYTES = 64 * 1024
# What a repository's own files are, relative to it; "hooks" covers everything below it.
GIT_FILES: tuple[tuple[str, ...], ...] = (
    ("config",),
    ("config.worktree",),
    ("commondir",),
    ("hooks",),
    ("info", "attributes"),
    ("objects", "info", "alternates"),
)
SHAPE_NAMES = frozenset({"HEAD", "objects", "refs", "config"})  # a change here can make a repository
_LAST = frozenset(parts[-1] for parts in GIT_FILES)
_SECTION = re.compile(rb"^\s*\[\s*(core|include|includeif)\b", re.IGNORECASE | re.MULTILINE)


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None


def _config_runs(path: str) -> bool:
    """``path`` is a regular file whose sections include core, include or includeIf."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        data = os.read(fd, MAX_CONFIG_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    return _SECTION.search(data) is not None


def is_repository(directory: str) -> bool:
    """Whether git takes ``directory`` (absolute) for a repository by its shape."""
    head = _lstat(os.path.join(directory, "HEAD"))
    if head is not None and stat.S_ISREG(head.st_mode):
        objects = _lstat(os.path.join(directory, "objects"))
        refs = _lstat(os.path.join(directory, "refs"))
        if (
            objects is not None
            and refs is not None
            and stat.S_ISDIR(objects.st_mode)
            and stat.S_ISDIR(refs.st_mode)
        ):
            return True
    return _config_runs(os.path.join(directory, "config"))


def repository_of(root: str, rel: str) -> str | None:
    """The repository (relative to ``root``, ``""`` for the root itself) whose own file
    ``rel`` is, when a directory on its way has a repository's shape; else None.

    Directories named ``.git`` are the patterns' business and are not asked here."""
    parts = rel.split("/")
    if not (_LAST & set(parts)):
        return None  # the common case: no git file name anywhere in the path
    for i in range(len(parts) - 1, -1, -1):
        rest = parts[i:]
        if not any(
            tuple(rest[: len(names)]) == names and (len(rest) == len(names) or names == ("hooks",))
            for names in GIT_FILES
        ):
            continue
        repo = "/".join(parts[:i])
        if parts[i - 1 : i] == [".git"]:
            continue
        if is_repository(os.path.join(root, repo) if repo else root):
            return repo
    return None


def git_files(root: str, repo: str) -> list[str]:
    """The existing own files of repository ``repo`` (relative to ``root``): what the
    sandbox pins and what becomes protected when a directory takes the shape."""
    base = os.path.join(root, repo) if repo else root
    out: list[str] = []
    for names in GIT_FILES:
        rel = "/".join((repo, *names)) if repo else "/".join(names)
        if _lstat(os.path.join(base, *names)) is not None:
            out.append(rel)
    return out
