"""The bubblewrap command line for one boundary.

A :class:`Boundary` says what a command may touch; :func:`bwrap_argv` turns it into
bwrap arguments. The probe and every run go through this one function, so what the
probe verified is what runs.

Every bind of a prepared run names an open ``O_PATH`` descriptor (``--bind-fd``,
``--ro-bind-fd``; console/sandbox/resolve.py), not a path: bwrap mounts the object that
was opened and checked, whatever the name points at by then. The spawn passes the
descriptors on (``Prepared.pass_fds``); bwrap closes each one after its mount.

Mount order matters, because bwrap applies its options in order and a later mount
covers an earlier one: the read-only root; fresh /dev, /proc and /tmp; the home masks
(empty tmpfs over /root, /home, $HOME) and the readable paths bound back into them; the
binds from shallow to deep so the more specific one wins — at equal depth a protected
pin after a writable bind, so a pin always wins; then the hidden paths, covered by empty
tmpfs mounts; then the private temp root; then the hidden tmpfs mounts are made
read-only (after the temp root, which may sit inside one of them, got its mount point;
the masks stay writable scratch space, emptied with the sandbox, as /tmp is); and last the data binds (pinned content, console/sandbox/content_pins.py),
on top of everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


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
    """What one sandboxed command is given. Paths are absolute and canonical."""

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
    out += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not boundary.share_network:
        out.append("--unshare-net")
    # As root bwrap would keep every capability, enough to unmount what hides the
    # console's state; nobody inside needs one.
    out += ["--cap-drop", "ALL", "--die-with-parent"]
    if boundary.info_fd >= 0 and boundary.block_fd >= 0:
        out += ["--info-fd", str(boundary.info_fd), "--block-fd", str(boundary.block_fd)]
    if boundary.new_session:
        out.append("--new-session")
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in boundary.masks:
        out += ["--perms", "0755", "--tmpfs", path]
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
    out += ["--chdir", cwd, "--", *argv]
    return out


def _bind_args(bind: Bind) -> list[str]:
    writable = bind.mode is BindMode.WRITABLE
    if bind.fd >= 0:
        return ["--bind-fd" if writable else "--ro-bind-fd", str(bind.fd), bind.path]
    return ["--bind" if writable else "--ro-bind", bind.path, bind.path]
