"""The bubblewrap command line for one boundary.

A :class:`Boundary` says what a command may touch; :func:`bwrap_argv` turns it into
bwrap arguments. The probe and every run go through this one function, so what the
probe verified is what runs.

Every bind of a prepared run names an open ``O_PATH`` descriptor (``--bind-fd``,
``--ro-bind-fd``; console/sandbox/resolve.py), not a path: bwrap mounts the object that
was opened and checked, whatever the name points at by then. The spawn passes the
descriptors on (``Prepared.pass_fds``); bwrap closes each one after its mount.

Mount order matters, because bwrap applies its options in order and a later mount
covers an earlier one: the system directories bound read-only into bwrap's empty root
(console/sandbox/surface.py: an allowlist, not the whole host); fresh /dev, /proc, /tmp,
/var/tmp and /dev/shm; the home masks
(empty tmpfs over /root, /home, $HOME) and the readable paths bound back into them; the
binds from shallow to deep so the more specific one wins — at equal depth a protected
pin after a writable bind, so a pin always wins; then the hidden paths, covered by empty
tmpfs mounts; then the private temp root; then the hidden tmpfs mounts are made
read-only (after the temp root, which may sit inside one of them, got its mount point;
the masks stay writable scratch space, emptied with the sandbox, as /tmp is); then the
data binds (pinned content, console/sandbox/content_pins.py), on top of everything; and
last the root itself made read-only.

bwrap's options go to it through a sealed memfd (``--args FD``, :func:`through_fd`):
bwrap stays the sandbox's pid 1, and its ``/proc/1/cmdline``, which every process inside
can read, would otherwise list the workspace, the console's state directory and every
path the sandbox hides. Only the command itself stays on it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum

from console.sandbox.memfd import sealed
from console.sandbox.surface import PRIVATE_DIRS


class BindMode(StrEnum):
    READ_ONLY = "ro"
    WRITABLE = "rw"


@dataclass(frozen=True, slots=True)
class Bind:
    """``path`` bound onto itself; from the descriptor ``fd`` when one is given (>= 0)."""

    path: str
    mode: BindMode
    fd: int = -1

    @property
    def depth(self) -> int:
        return self.path.rstrip("/").count("/")


@dataclass(frozen=True, slots=True)
class DataBind:
    """Bytes from an open descriptor, mounted read-only as a file at ``dest`` with
    ``mode`` (bwrap copies them in: ``--perms MODE --ro-bind-data FD DEST``)."""

    fd: int
    dest: str
    mode: int = 0o644


@dataclass(frozen=True, slots=True)
class Boundary:
    """What one sandboxed command is given. Paths are absolute and canonical.

    ``system``: the read-only view of the host's system directories, and ``links`` the
    top-level symbolic links into them (surface.py); nothing else of the host is there
    unless bound below. ``seccomp_fd``: a compiled filter for ``--seccomp`` (seccomp.py).
    """

    system: tuple[Bind, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    # Directories made 0700 before the binds (where the agent socket is bound: its
    # clients check that the directory is private).
    private_dirs: tuple[str, ...] = ()
    binds: tuple[Bind, ...] = ()
    masks: tuple[str, ...] = ()  # home directories covered (empty, scratch) before any bind
    readable: tuple[Bind, ...] = ()  # bound back read-only into the masks
    hidden_dirs: tuple[str, ...] = ()
    hidden_files: tuple[str, ...] = ()
    temp_root: str = ""
    share_network: bool = False
    new_session: bool = True
    # Mounted after everything else, so they land on top (content pins).
    data_binds: tuple[DataBind, ...] = ()
    # bwrap's --info-fd and --block-fd: the sandbox waits, set up, until its mounts are
    # checked (console/sandbox/verify.py).
    info_fd: int = -1
    block_fd: int = -1
    seccomp_fd: int = -1


@dataclass(frozen=True, slots=True)
class Launcher:
    """The bwrap binary and the namespace options the probe found working."""

    path: str
    user_ns: bool = True
    disable_userns: bool = True


def ordered(binds: list[Bind] | tuple[Bind, ...]) -> tuple[Bind, ...]:
    """Shallow before deep (stable), so a nested bind lands on top of its parent."""
    return tuple(sorted(binds, key=lambda b: b.depth))


def bwrap_argv(launcher: Launcher, boundary: Boundary, cwd: str, argv: tuple[str, ...]) -> list[str]:
    out = [launcher.path]
    if launcher.user_ns:
        out.append("--unshare-user")
        if launcher.disable_userns:
            out.append("--disable-userns")
    # Its own cgroup namespace: /proc/self/cgroup names no host path (the session's cgroup).
    out += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not boundary.share_network:
        out.append("--unshare-net")
    # As root bwrap would keep every capability, enough to unmount what hides the
    # console's state; nobody inside needs one.
    out += ["--cap-drop", "ALL", "--die-with-parent"]
    if boundary.info_fd >= 0 and boundary.block_fd >= 0:
        out += ["--info-fd", str(boundary.info_fd), "--block-fd", str(boundary.block_fd)]
    if boundary.new_session:
        out.append("--new-session")
    for bind in boundary.system:
        out += _bind_args(bind)
    for target, path in boundary.links:
        out += ["--symlink", target, path]
    out += ["--dev", "/dev", "--proc", "/proc"]
    for path in PRIVATE_DIRS:
        out += ["--tmpfs", path]
    for path in boundary.masks:
        out += ["--perms", "0755", "--tmpfs", path]
    for path in boundary.private_dirs:
        out += ["--perms", "0700", "--dir", path]
    for bind in (*boundary.readable, *ordered(boundary.binds)):
        out += _bind_args(bind)
    for path in boundary.hidden_dirs:
        out += ["--perms", "0700", "--tmpfs", path]
    for path in boundary.hidden_files:
        out += ["--ro-bind", "/dev/null", path]
    if boundary.temp_root:
        out += ["--bind", boundary.temp_root, boundary.temp_root]
    for path in boundary.hidden_dirs:
        out += ["--remount-ro", path]
    for data in boundary.data_binds:
        out += ["--perms", f"{data.mode & 0o7777:04o}", "--ro-bind-data", str(data.fd), data.dest]
    out += ["--remount-ro", "/"]
    if boundary.seccomp_fd >= 0:
        out += ["--seccomp", str(boundary.seccomp_fd)]
    out += ["--chdir", cwd, "--", *argv]
    return out


def through_fd(argv: list[str]) -> tuple[list[str], int]:
    """``argv`` as ``bwrap --args FD -- COMMAND``: bwrap's options in a sealed memfd
    (returned, to pass on and close after the spawn), the command after them (bwrap takes
    the command only from its real argv). Raises OSError when no memfd can be made."""
    end = argv.index("--")
    payload = b"".join(os.fsencode(a) + b"\0" for a in argv[1:end])
    fd = sealed(payload, "agent-console-args")
    return [argv[0], "--args", str(fd), *argv[end:]], fd


def _bind_args(bind: Bind) -> list[str]:
    writable = bind.mode is BindMode.WRITABLE
    if bind.fd >= 0:
        return ["--bind-fd" if writable else "--ro-bind-fd", str(bind.fd), bind.path]
    return ["--bind" if writable else "--ro-bind", bind.path, bind.path]
