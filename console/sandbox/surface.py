"""What of the host a sandbox sees: an allowlist, never "everything but".

A denylist over a read-only root kept missing things: other projects, `/srv`,
`/var/www`, `/var/lib/postgresql`, sockets under `/run` (the system bus, systemd,
postgres), `/dev/shm`, and with a root operator every root-only file. So the sandbox's
root is an empty read-only tmpfs, and only these are bound into it, read-only:

- the system: ``/usr``, ``/etc``, ``/opt``, ``/nix`` and the top-level links into
  ``/usr`` (``/bin -> usr/bin`` on a merged-usr system is made again as a link; where it
  is a real directory it is bound);
- what the run adds itself (plan.py): the workspace and write dirs, the toolchains on
  its PATH, the policy's ``readable``, the approved executable, the console's own
  interpreter where the sandbox needs it.

Not bound, so absent: ``/run`` and ``/var/run`` (sockets of the system bus, systemd,
databases, container daemons, the user's runtime dir), ``/var`` but for a private
``/var/tmp``, ``/srv``, ``/mnt``, ``/media``, ``/home`` and ``/root`` (homes are empty
scratch mounts), ``/sys`` (cgroup control files: a session could thaw itself), and the
host's ``/tmp`` and ``/dev/shm`` (fresh, private ones instead).

Inside ``/etc``, entries that others may not read (``/etc/shadow``, ``/etc/gshadow``,
ssh host keys, ``/etc/ssl/private``, ``sudoers``) are covered too: bwrap runs as the
operator, and an operator that is root would otherwise show them. The walk is bounded
and cached for a minute; a file made root-only after that shows up at the next walk.
``/etc/hosts`` is replaced by one naming only localhost: names resolve through the
egress broker on the host, never inside (docs/security.md).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from dataclasses import dataclass

# Bound read-only when they are directories (a link at the top level is made again).
SYSTEM_DIRS = ("/usr", "/etc", "/opt", "/nix", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Directories made private (fresh tmpfs) inside every sandbox.
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
# Where a run with brokered network finds the broker's socket and the bridge (a neutral
# name: a program inside learns nothing of the console from it).
EGRESS_DIR = "/run/egress"

HOSTS_FILE = "/etc/hosts"
HOSTS = b"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"

ETC_WALK_LIMIT = 20_000
ETC_WALK_DEPTH = 8
CACHE_S = 60.0


@dataclass(frozen=True, slots=True)
class Surface:
    """The system part of a sandbox's view of the host.

    ``binds``: directories to bind read-only onto themselves; ``links``: (target, path)
    symbolic links to make; ``secret_dirs``/``secret_files``: entries inside the binds
    that others may not read, to cover.
    """

    binds: tuple[str, ...]
    links: tuple[tuple[str, str], ...]
    secret_dirs: tuple[str, ...]
    secret_files: tuple[str, ...]

    def shows(self, path: str) -> bool:
        """Whether ``path`` (canonical) lies in a bound system directory and is not covered."""
        if not any(_within(path, b) for b in self.binds):
            return False
        return not any(_within(path, s) for s in (*self.secret_dirs, *self.secret_files))


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _unreadable(st: os.stat_result) -> bool:
    """What others may not read: a file without o+r, a directory without o+rx."""
    if stat.S_ISDIR(st.st_mode):
        return st.st_mode & 0o005 != 0o005
    return not st.st_mode & stat.S_IROTH


def root_only(
    top: str, limit: int = ETC_WALK_LIMIT, depth: int = ETC_WALK_DEPTH
) -> tuple[list[str], list[str]]:
    """Directories and files under ``top`` that others may not read (not following links).

    Bounded: past ``limit`` entries the walk stops, and what it did not reach stays as it
    is on the host (unreadable to an operator who is not root, by those same bits).
    """
    dirs: list[str] = []
    files: list[str] = []
    seen = 0
    stack = [(top, 0)]
    while stack and seen < limit:
        here, level = stack.pop()
        try:
            entries = os.scandir(here)
        except OSError:
            continue
        with entries:
            for entry in entries:
                seen += 1
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISLNK(st.st_mode):
                    continue
                if _unreadable(st):
                    (dirs if stat.S_ISDIR(st.st_mode) else files).append(entry.path)
                elif stat.S_ISDIR(st.st_mode) and level < depth:
                    stack.append((entry.path, level + 1))
    return sorted(dirs), sorted(files)


_lock = threading.Lock()
_cached: tuple[float, Surface] | None = None


def system_surface(now: float | None = None) -> Surface:
    """The host's system surface (cached for :data:`CACHE_S` seconds)."""
    global _cached
    now = time.monotonic() if now is None else now
    with _lock:
        if _cached is not None and now - _cached[0] < CACHE_S:
            return _cached[1]
    binds: list[str] = []
    links: list[tuple[str, str]] = []
    for path in SYSTEM_DIRS:
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            with contextlib.suppress(OSError):
                target = os.readlink(path)
                real = os.path.realpath(path)
                if any(_within(real, b) for b in binds) or real in SYSTEM_DIRS:
                    links.append((target, path))
        elif stat.S_ISDIR(st.st_mode):
            binds.append(path)
    secret_dirs: list[str] = []
    secret_files: list[str] = []
    if "/etc" in binds:
        secret_dirs, secret_files = root_only("/etc")
    surface = Surface(tuple(binds), tuple(links), tuple(secret_dirs), tuple(secret_files))
    with _lock:
        _cached = (now, surface)
    return surface
