"""Which directories can never be a workspace, and whether a workspace is trusted.

A workspace is what the sandbox makes readable (and, with workspace access ``write``,
writable) for a command. An agent that could name any directory as its workspace
could make ``~`` writable and append to ``~/.ssh/authorized_keys`` within the
ceiling. So two rules apply, both pure (the daemon supplies the facts):

- **Refused outright** (a problem at parse time, whatever the operator trusts): the
  filesystem root; a directory that *is* or *contains* a home directory, ``/tmp``,
  a system directory or the console's own state; and anything *inside* a system
  directory (``/etc/nginx``, ``/usr/lib``) or inside the console's state.
- **Trusted or not**: a workspace under one of the operator's trusted roots (the
  policy's ``workspaces`` plus those added with ``agent-console workspaces add`` or an
  "always" approval) is an ordinary workspace; any other is the escalation
  ``new_workspace``, which only the operator can approve. A trusted root obeys the
  same refusals as a workspace: trusting ``/tmp`` would trust every directory in it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

# Directories a workspace may be neither equal to nor inside of: the system's own.
SYSTEM_TREES: tuple[str, ...] = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/backups",
    "/var/cache",
    "/var/lib",
    "/var/log",
    "/var/mail",
    "/var/run",
    "/var/spool",
)
# Directories a workspace may be inside of but neither equal to nor an ancestor of:
# shared parents whose other children belong to someone or something else.
SHARED_PARENTS: tuple[str, ...] = (
    "/home",
    "/media",
    "/mnt",
    "/opt",
    "/root",
    "/srv",
    "/tmp",
    "/var",
    "/var/tmp",
)


_SYSTEM_HINT = "a system directory (or one containing it) cannot be a workspace; name the project directory"
_HOME_HINT = (
    "a home directory (or one containing homes) cannot be a workspace; "
    "name the project directory inside it, e.g. ~/src/project"
)
_SHARED_HINT = "a shared directory like /tmp or /var cannot be a workspace; name a directory inside it"
_PRIVATE_HINT = "must not contain or be inside the console's own state directory; name the project directory"


def _ancestors(path: str) -> list[str]:
    """``path`` and every directory above it but ``/``: /a/b -> [/a/b, /a]."""
    out = []
    while path not in ("/", ""):
        out.append(path)
        path = posixpath.dirname(path)
    return out


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclass(frozen=True)
class WorkspaceLimits:
    """The facts behind the refusals: home directories and the console's private dirs
    come from the host (``/etc/passwd``, ``$HOME``, ``--state-dir``)."""

    homes: tuple[str, ...] = ()
    private: tuple[str, ...] = ()  # the state and runtime directories
    system: tuple[str, ...] = SYSTEM_TREES
    shared: tuple[str, ...] = SHARED_PARENTS

    @classmethod
    def of(cls, homes: Iterable[str] = (), private: Iterable[str] = ()) -> WorkspaceLimits:
        def clean(paths: Iterable[str]) -> tuple[str, ...]:
            return tuple(sorted({posixpath.normpath(p) for p in paths if p.startswith("/")}))

        return cls(homes=clean(homes), private=clean(private))

    @cached_property
    def _index(self) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
        """(directories whose *inside* is refused, directories refused *as or around* a
        listed one), each mapping to its (reason code, hint); worked out once, so a check is
        a few dictionary lookups over the root's own ancestors."""
        system = ("workspace_is_system_directory", _SYSTEM_HINT)
        home = ("workspace_is_home", _HOME_HINT)
        shared = ("workspace_is_shared_directory", _SHARED_HINT)
        private = ("workspace_is_console_state", _PRIVATE_HINT)
        inside: dict[str, tuple[str, str]] = {}
        around: dict[str, tuple[str, str]] = {}
        # Lowest priority first: a later, more specific reason overwrites an earlier one.
        for paths, why, refuse_inside in (
            (self.private, private, True),
            (self.shared, shared, False),
            (self.homes, home, False),
            (self.system, system, True),
        ):
            for path in paths:
                if refuse_inside:
                    inside[path] = why
                for ancestor in _ancestors(path):
                    around[ancestor] = why
        return inside, around

    @cached_property
    def _refusals(self) -> dict[str, tuple[str, str] | None]:
        return {}

    def refusal(self, root: str) -> tuple[str, str] | None:
        """Why canonical ``root`` cannot be a workspace, as (reason code, hint); None if it can.
        Remembered per root: the limits never change, and every request asks it."""
        known = self._refusals
        if root in known:
            return known[root]
        if len(known) > 4096:
            known.clear()
        found = known[root] = self._refusal(root)
        return found

    def _refusal(self, root: str) -> tuple[str, str] | None:
        if root == "/":
            return (
                "workspace_is_root",
                "the filesystem root cannot be a workspace; name the project directory",
            )
        inside, around = self._index
        found = around.get(root)
        for ancestor in _ancestors(root):
            why = inside.get(ancestor)
            if why is not None and (found is None or why[0] == "workspace_is_system_directory"):
                found = why
        return found

    def trust_refusal(self, root: str) -> str | None:
        """Why canonical ``root`` cannot be a *trusted root* (a parent of workspaces), as
        one line for the operator; None if it can.

        The same set as :meth:`refusal`: trusting ``/tmp`` or ``~`` would make every
        directory below it (another user's checkout, ``~/.ssh``) an ordinary workspace
        with no question asked, which is what refusing them as workspaces prevents.
        """
        found = self.refusal(root)
        if found is None:
            return None
        code, hint = found
        return f"{hint} ({code})"


def is_trusted(root: str, trusted: Iterable[str]) -> bool:
    """Whether canonical workspace ``root`` is one of, or inside one of, ``trusted``."""
    return any(_within(root, t) for t in trusted)
