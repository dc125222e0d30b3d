"""Protected-path patterns.

Patterns are relative to the workspace root and follow .gitignore's rules where they
matter here: a pattern without ``/`` matches a name at any depth (``.env`` protects
``backend/.env`` too), a pattern with ``/`` is anchored at the root (a leading ``/``
anchors a single name: ``/conftest.py`` is the root's only), ``*`` stays inside
one path segment and ``**`` spans any number of them. A path is protected when it or
any of its ancestors matches, so a directory pattern covers everything below it.

Names are matched as they are: a newline or any other character in a directory name is
just a character (the expressions are compiled with DOTALL, so ``.*`` crosses it and
``backend\\n/.env`` is still protected by ``.env``).

One rule is not a pattern: a ``.git`` that is not a directory (a gitfile, which points
git at another git dir) is protected wherever it is (console/policy/protected_set.py).
"""

from __future__ import annotations

import re

from console.policy.repository import REPOSITORY_PATTERN, repository_of


class PatternError(ValueError):
    pass


def _translate(pattern: str) -> str:
    anchored = "/" in pattern.rstrip("/")
    pat = pattern.strip("/")
    out: list[str] = []
    i = 0
    while i < len(pat):
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("/**", i) and i + 3 == len(pat):
            out.append("(?:/.*)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif pat[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pat[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pat[i]))
            i += 1
    body = "".join(out)
    if not anchored:
        body = "(?:.*/)?" + body
    return body


def validate_pattern(pattern: str) -> None:
    body = pattern[1:] if pattern.startswith("/") else pattern
    if not body or "\x00" in pattern or (pattern.startswith("/") and "/" in body.rstrip("/")):
        # A leading / only anchors a single name (a pattern with / is anchored anyway);
        # "/etc/passwd" is someone meaning an absolute path.
        raise PatternError(
            "a protected pattern is a non-empty path relative to the workspace "
            "(a leading / only anchors a single name: /conftest.py)"
        )
    if ".." in pattern.split("/"):
        raise PatternError("a protected pattern must not contain '..'")


GITFILE_PATTERN = ".git"


class ProtectedPaths:
    """A compiled set of protected patterns (plus the gitfile rule unless ``gitfiles=False``)."""

    __slots__ = ("_each", "_regex", "gitfiles", "patterns")

    def __init__(self, patterns: tuple[str, ...] | list[str], *, gitfiles: bool = True) -> None:
        for p in patterns:
            validate_pattern(p)
        self.patterns = tuple(patterns)
        self.gitfiles = gitfiles
        self._each = tuple((p, re.compile(_translate(p), re.DOTALL)) for p in self.patterns)
        joined = "|".join(f"(?:{_translate(p)})" for p in self.patterns) or "(?!)"
        self._regex = re.compile(joined, re.DOTALL)

    def match(self, relative: str, *, is_dir: bool | None = None) -> str | None:
        """The first pattern protecting ``relative`` (or an ancestor of it), else None.

        ``is_dir``: what ``relative`` is, when the caller knows; a ``.git`` that is not
        known to be a directory is a gitfile (protected, pattern ``.git``).
        """
        parts = relative.strip("/").split("/")
        if self.gitfiles and is_dir is not True and parts[-1] == GITFILE_PATTERN:
            return GITFILE_PATTERN
        for end in range(len(parts), 0, -1):
            candidate = "/".join(parts[:end])
            if self._regex.fullmatch(candidate):
                return next(p for p, rx in self._each if rx.fullmatch(candidate))
        return None

    def is_protected(self, relative: str, *, is_dir: bool | None = None) -> bool:
        return self.match(relative, is_dir=is_dir) is not None

    def match_in(self, root: str, relative: str, *, is_dir: bool | None = None) -> str | None:
        """:meth:`match`, then the rule that needs the file system: ``relative`` is a
        file of a directory that has a git repository's shape (repository.py). For the
        watcher and the sandbox, which look at ``root`` as it is."""
        found = self.match(relative, is_dir=is_dir)
        if found is None and self.gitfiles and repository_of(root, relative.strip("/")) is not None:
            return REPOSITORY_PATTERN
        return found
