"""Which directories the watcher skips.

Dependency trees, virtualenvs, caches and git's object store hold most of a
workspace's files and almost none of its risk; watching them would spend inotify
watches and drown the operator in events. They are skipped, except where a protected
pattern reaches into them: ``.git`` itself is never skipped (hooks and config live
there), and a pattern that names a skipped directory literally keeps exactly the part
it names watched: with ``node_modules/.bin/**``, ``node_modules`` is entered,
``node_modules/.bin`` is watched, ``node_modules/left-pad`` stays skipped.

A pattern that reaches a skipped directory only through wildcards (``**/*.pem``) does
not keep it watched: every default pattern starts with ``**`` or matches at any depth,
so honouring them would skip nothing. A skipped directory that is itself protected
(a pattern ``node_modules``) is watched, with everything below it.
"""

from __future__ import annotations

import fnmatch

from console.policy.patterns import ProtectedPaths

# Skipped wherever they appear.
DEFAULT_SKIP_NAMES: frozenset[str] = frozenset(
    {
        "node_modules",
        "bower_components",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        ".eggs",
        "target",
        "dist",
        "build",
        ".gradle",
        ".next",
        ".nuxt",
        ".turbo",
        ".parcel-cache",
        ".cache",
        ".terraform",
    }
)
# Skipped only at these places (relative to a ``.git`` directory at any depth).
DEFAULT_SKIP_IN_GIT: frozenset[str] = frozenset({"objects", "logs", "lfs"})

_GLOB = frozenset("*?[")


def _segments(pattern: str) -> list[str]:
    segs = pattern.strip("/").split("/")
    if "/" not in pattern.rstrip("/"):  # unanchored: matches at any depth
        segs = ["**", *segs]
    return segs


def _reaches(segs: list[str], i: int, parts: list[str], j: int, h: int) -> bool:
    """Can pattern segments ``segs[i:]`` match a path below ``parts`` (from ``j``), with
    the skipped directory ``parts[h]`` matched by a literal segment and every directory
    below it matched by a segment of its own?"""
    if j == len(parts):
        return i < len(segs)
    if i == len(segs):
        return False
    seg = segs[i]
    if seg == "**":
        if j > h:
            return True  # inside the skipped directory, ``**`` reaches anything
        # ``**`` may swallow the directories above the skipped one, never the skipped one.
        return any(_reaches(segs, i + 1, parts, k, h) for k in range(j, h + 1))
    if not fnmatch.fnmatchcase(parts[j], seg):
        return False
    if j == h and _GLOB & set(seg):
        return False
    return _reaches(segs, i + 1, parts, j + 1, h)


class Scope:
    """Skip decisions for one workspace under one set of protected patterns.

    Decisions are cached per directory; build a new ``Scope`` when the patterns change.
    """

    def __init__(
        self,
        protected: ProtectedPaths,
        skip_names: frozenset[str] = DEFAULT_SKIP_NAMES,
        skip_in_git: frozenset[str] = DEFAULT_SKIP_IN_GIT,
    ) -> None:
        self.protected = protected
        self.skip_names = skip_names
        self.skip_in_git = skip_in_git
        self._segs = [_segments(p) for p in protected.patterns]
        self._cache: dict[str, bool] = {}

    def _first_heavy(self, parts: list[str]) -> int | None:
        for k, name in enumerate(parts):
            if name in self.skip_names or (k and parts[k - 1] == ".git" and name in self.skip_in_git):
                return k
        return None

    def skips_dir(self, rel: str) -> bool:
        """True when the directory ``rel`` (relative, ``/``-separated) is skipped: it is a
        skipped directory or lies inside one, is not protected, and no pattern reaches
        into it. Only meaningful when its parent is not skipped."""
        found = self._cache.get(rel)
        if found is None:
            parts = rel.split("/")
            h = self._first_heavy(parts)
            found = (
                h is not None
                and self.protected.match(rel) is None
                and not any(_reaches(s, 0, parts, 0, h) for s in self._segs)
            )
            if len(self._cache) > 65_536:
                self._cache.clear()
            self._cache[rel] = found
        return found

    def under_skipped(self, rel: str) -> bool:
        """True when ``rel`` is a skipped directory or lies below one."""
        parts = rel.split("/")
        h = self._first_heavy(parts)
        if h is None:
            return False
        return any(self.skips_dir("/".join(parts[:end])) for end in range(h + 1, len(parts) + 1))
