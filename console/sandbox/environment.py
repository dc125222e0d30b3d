"""The child environment: a fixed allowlist from the daemon, the approved overrides, and
private temp and cache directories.

The daemon's environment holds things a command must not see (tokens, agent sockets,
credentials an operator exported), so nothing is inherited unless its name is on the
list below. The operation's own overrides were part of what the operator approved and
are applied on top. The private directories are set last: they are where the sandbox
lets a command write scratch files, and pointing them elsewhere would only break it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from console.contract.host import DEFAULT_TRUSTED_PATH
from console.sandbox.tempdir import PrivateTempRoot

# PATH is not inherited: the daemon's may start with a directory the user (or an agent)
# can write, e.g. ~/.local/bin, where a `git` dropped by an earlier command would win.
# Commands always get the trusted PATH; an operation that overrides PATH asked for the
# `environment` capability on it, and the operator approved that.
INHERITED = frozenset(
    {
        "HOME",
        "LANG",
        "LANGUAGE",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "USER",
        "LOGNAME",
        "SHELL",
        "TZ",
    }
)
INHERITED_PREFIXES = ("LC_",)


def inherited(name: str) -> bool:
    return name in INHERITED or name.startswith(INHERITED_PREFIXES)


def private_variables(root: PrivateTempRoot) -> dict[str, str]:
    """TMPDIR and friends in ``root/tmp``; the root itself (0700, this user's, gone after
    the run) is the runtime dir; the cache dir is made on first use, as the XDG base
    directory spec has programs do. Few directories, because on some disks each one
    created and removed costs milliseconds per run."""
    return {
        "TMPDIR": root.tmp,
        "TMP": root.tmp,
        "TEMP": root.tmp,
        "XDG_CACHE_HOME": os.path.join(root.path, "cache"),
        "XDG_RUNTIME_DIR": root.path,
    }


def validate_overrides(overrides: tuple[tuple[str, str], ...]) -> None:
    """Re-check what the contract already validated: a malformed name would corrupt envp."""
    for name, value in overrides:
        if not name or "=" in name or "\x00" in name or "\x00" in value:
            raise ValueError("an environment override has an invalid name or a NUL in its value")


def child_environment(
    daemon_env: Mapping[str, str],
    overrides: tuple[tuple[str, str], ...],
    root: PrivateTempRoot,
) -> dict[str, str]:
    """The complete environment of a sandboxed command, sorted by name."""
    validate_overrides(overrides)
    env = {k: v for k, v in daemon_env.items() if inherited(k) and "\x00" not in v}
    env["PATH"] = DEFAULT_TRUSTED_PATH
    env.update(overrides)
    env.update(private_variables(root))
    return dict(sorted(env.items()))
