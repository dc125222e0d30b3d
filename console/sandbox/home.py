"""What of the operator's home a sandboxed command sees: by default nothing but the workspace.

A home holds ssh and cloud keys, package-registry tokens and shell history; a command's
output goes back to the agent, so reading is as much a leak as writing would be harmful.
The sandbox covers ``/root``, ``/home`` and ``$HOME`` with empty tmpfs mounts (*masks*:
scratch space that goes with the sandbox, as its /tmp does, so tools that write to
``$HOME`` still work) before anything is bound, then binds the workspace and the write dirs back
where they lie inside. Two policy keys change that (globs, ``~`` is the daemon's
``$HOME``):

- ``readable = ["~/.gitconfig", "~/.config/git/**"]``: bound back read-only;
- ``hidden = ["/srv/secrets", "~/work/*/.env.prod"]``: hidden as well, anywhere (an
  empty directory or ``/dev/null``); ``hidden`` wins over ``readable``.

Installed software is not a secret and commands need it: the default ``readable``
(console/policy/visibility.py) shows the usual per-user toolchain directories (pyenv,
nvm, rustup, ``~/.local/bin``, …) and never their credential files. The approved
executable itself is bound back when it lies in a mask, so it can start.

A home that is a system directory (``/``, ``/usr``, ``/var`` …, as service accounts
have) is not masked: that would hide the system itself.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Mapping

from console.contract.operation import is_within

MAX_MATCHES = 256
SYSTEM_DIRS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/lib",
        "/lib32",
        "/lib64",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/var",
    }
)


def home_of(env: Mapping[str, str]) -> str:
    home = env.get("HOME", "")
    return home if home.startswith("/") else os.path.expanduser("~")


def outermost(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(is_within(path, kept) for kept in out):
            out.append(path)
    return out


def home_masks(env: Mapping[str, str]) -> tuple[str, ...]:
    """The existing home directories to cover (canonical, outermost only)."""
    found = []
    for candidate in ("/root", "/home", home_of(env)):
        real = os.path.realpath(candidate)
        if real in SYSTEM_DIRS or not os.path.isdir(real):
            continue
        found.append(real)
    return tuple(outermost(found))


def expand(patterns: Iterable[str], env: Mapping[str, str], key: str) -> list[str]:
    """Existing paths matching ``patterns`` (``~`` expanded), as named (not resolved).

    Raises ValueError naming ``key`` when the patterns match more than MAX_MATCHES paths.
    """
    home = home_of(env)
    out: list[str] = []
    for pattern in patterns:
        if pattern == "~" or pattern.startswith("~/"):
            pattern = home + pattern[1:]
        if glob.has_magic(pattern):
            names = glob.glob(pattern, recursive=True, include_hidden=True)
        else:
            names = [pattern] if os.path.lexists(pattern) else []
        for name in names:
            name = os.path.normpath(name)
            if name not in out:
                out.append(name)
            if len(out) > MAX_MATCHES:
                raise ValueError(f"{key}: the patterns match more than {MAX_MATCHES} paths; name fewer")
    return out
