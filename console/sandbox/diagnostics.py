"""Recognising sandbox denials in a command's output.

A command that hits the boundary says so in its own words: `Read-only file system`,
Node's `EROFS: read-only file system, mkdir '/x'`, `Network is unreachable`, a failed
name lookup. These are turned into structured denials (capability, source
`platform_sandbox`, next action `request_approval`) so the agent can ask for exactly
what it lacked.

The text is the command's, so it could claim anything. A message becomes a denial only
when the boundary agrees: the path it names really is not writable inside this sandbox
(by the mounts :class:`~console.sandbox.plan.Prepared` describes), or the network
really was isolated. Reasons are fixed sentences plus at most a short, printable path;
nothing else of the output is repeated.
"""

from __future__ import annotations

import posixpath
import re

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.operation import is_within
from console.contract.outcome import Denial, DenialSource, NextAction
from console.sandbox.plan import Prepared

K = CapabilityKind

MAX_DENIALS = 8
MAX_PATH_CHARS = 160
MAX_LINE_CHARS = 4096
MAX_SCAN_BYTES = 256 * 1024

# Node and friends: `EROFS: read-only file system, mkdir '/x'` (EPERM/EACCES too).
_ERRNO_FORM = re.compile(r"\b(EROFS|EPERM|EACCES): [a-z -]{3,40}, [a-z_]{2,20} '([^'\n]{1,4096})'")
_READ_ONLY = re.compile(r"Read-only file system|\[Errno 30\]")
_PERMISSION = re.compile(r"Permission denied|\[Errno 13\]|Operation not permitted|\[Errno 1\]")
# A path that is not there: outside what the sandbox shows, it exists only on the host.
_MISSING = re.compile(r"Directory nonexistent|No such file or directory|\[Errno 2\]")
_NETWORK = re.compile(r"Network is unreachable|\[Errno 101\]|ENETUNREACH")
_RESOLVE = re.compile(
    r"Temporary failure in name resolution|Could not resolve host|Name or service not known"
    r"|getaddrinfo (?:EAI_AGAIN|ENOTFOUND)|nodename nor servname provided"
)
# A path in a message: quoted (ASCII or typographic quotes), or bare right before the
# error (`sh: 1: cannot create /x: Read-only file system`).
_QUOTED = re.compile(r"'([^'\n]{1,4096})'|\"([^\"\n]{1,4096})\"|‘([^’\n]{1,4096})’")
_BARE = re.compile(
    r"(?:^|\s)([^\s:'\"]{1,4096}): (?:Read-only file system|Permission denied|Operation not permitted)"
)


def _path_in(line: str, cwd: str) -> str | None:
    for m in _QUOTED.finditer(line):
        text = next(g for g in m.groups() if g is not None)
        if text.startswith("/") or not text.startswith(("-", " ")):
            return posixpath.normpath(posixpath.join(cwd, text))
    bare = _BARE.search(line)
    return posixpath.normpath(posixpath.join(cwd, bare.group(1))) if bare else None


_BARE_MISSING = re.compile(
    r"(?:^|\s)(/[^\s:'\"]{1,4096}): (?:Directory nonexistent|No such file or directory)"
)


def _missing_path(line: str, cwd: str) -> str | None:
    bare = _BARE_MISSING.search(line)
    return posixpath.normpath(posixpath.join(cwd, bare.group(1))) if bare else None


def _shown(path: str) -> str:
    """The path if short and printable, else nothing: a scope is never a payload."""
    if len(path) <= MAX_PATH_CHARS and path.isprintable():
        return path
    return ""


def _write_denial(path: str, prepared: Prepared, errno_only_permission: bool) -> Denial | None:
    if prepared.writable(path):
        return None
    if any(is_within(path, h) for h in prepared.hidden):
        return Denial(
            Capability(K.WORKSPACE_WRITE),
            DenialSource.PLATFORM_SANDBOX,
            "the console's own directories are hidden from sandboxed commands",
            recoverable=False,
            next_action=NextAction.NONE,
        )
    for p in prepared.protected:
        if is_within(path, p):
            return Denial(
                Capability(K.PROTECTED_METADATA, _shown(p)),
                DenialSource.PLATFORM_SANDBOX,
                "a protected path is read-only in the sandbox",
                recoverable=True,
                next_action=NextAction.REQUEST_APPROVAL,
            )
    root = prepared.workspace_root
    if is_within(path, root):
        if errno_only_permission:
            return None  # inside a read-only workspace the sandbox says EROFS; this is file modes
        return Denial(
            Capability(K.WORKSPACE_WRITE, _shown(root)),
            DenialSource.PLATFORM_SANDBOX,
            "the workspace is read-only for this operation",
            recoverable=True,
            next_action=NextAction.REQUEST_APPROVAL,
        )
    return Denial(
        Capability(K.WORKSPACE_WRITE, _shown(path)),
        DenialSource.PLATFORM_SANDBOX,
        "a write outside the workspace and the approved write dirs was blocked",
        recoverable=True,
        next_action=NextAction.REQUEST_APPROVAL,
    )


_NETWORK_DENIAL = Denial(
    Capability(K.EXTERNAL_NETWORK),
    DenialSource.PLATFORM_SANDBOX,
    "the sandbox has no network (only a private loopback)",
    recoverable=True,
    next_action=NextAction.REQUEST_APPROVAL,
)


def recognise(texts: list[bytes], prepared: Prepared, cwd: str) -> list[Denial]:
    """Denials the boundary confirms, in order of appearance, one per capability."""
    if not prepared.sandboxed:
        return []
    found: dict[Capability, Denial] = {}
    for data in texts:
        text = data[:MAX_SCAN_BYTES].decode("utf-8", "replace")
        for line in text.splitlines():
            line = line[:MAX_LINE_CHARS]
            denial = _line_denial(line, prepared, cwd)
            if denial is not None and denial.capability not in found:
                found[denial.capability] = denial
                if len(found) >= MAX_DENIALS:
                    return list(found.values())
    return list(found.values())


_HIDDEN_READ = "the sandbox shows only the system, the workspace, toolchains and the policy's `readable`"


def _not_shown(path: str, prepared: Prepared, write: bool) -> Denial | None:
    """A path the command found missing that exists on the host, outside the sandbox's view."""
    if prepared.shows(path) or any(is_within(path, h) for h in prepared.hidden):
        return None
    parent = posixpath.dirname(path)
    if not (posixpath.lexists(path) or (write and parent != "/" and posixpath.isdir(parent))):
        return None
    if write:
        return Denial(
            Capability(K.WORKSPACE_WRITE, _shown(path)),
            DenialSource.PLATFORM_SANDBOX,
            "a write outside the workspace and the approved write dirs was blocked",
            recoverable=True,
            next_action=NextAction.REQUEST_APPROVAL,
        )
    return Denial(
        Capability(K.FILESYSTEM_READ, _shown(path)),
        DenialSource.PLATFORM_SANDBOX,
        _HIDDEN_READ,
        recoverable=False,
        next_action=NextAction.NONE,
    )


def _line_denial(line: str, prepared: Prepared, cwd: str) -> Denial | None:
    # A brokered run is told by the broker itself (a 403 naming the reason).
    if (
        prepared.network_isolated
        and not prepared.brokered
        and (_NETWORK.search(line) or _RESOLVE.search(line))
    ):
        return _NETWORK_DENIAL
    m = _ERRNO_FORM.search(line)
    if m is not None:
        path = posixpath.normpath(posixpath.join(cwd, m.group(2)))
        return _write_denial(path, prepared, errno_only_permission=m.group(1) != "EROFS")
    read_only = _READ_ONLY.search(line) is not None
    if not read_only and _MISSING.search(line) is not None:
        named = _path_in(line, cwd) or _missing_path(line, cwd)
        if named is None:
            return None
        return _not_shown(named, prepared, write="cannot create" in line or "can't create" in line)
    if not read_only and _PERMISSION.search(line) is None:
        return None
    named = _path_in(line, cwd)
    if named is None:
        return None
    return _write_denial(named, prepared, errno_only_permission=not read_only)
