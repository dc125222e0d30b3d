"""The bubblewrap command line for one boundary.

A :class:`Boundary` says what a command may touch; :func:`bwrap_argv` turns it into
bwrap arguments. The probe and every run go through this one function, so what the
probe verified is what runs.

Mount order matters, because bwrap applies its options in order and a later mount
covers an earlier one: the read-only root; fresh /dev, /proc and /tmp; the binds
(workspace, write dirs, pins, protected paths) from shallow to deep so the more specific
one wins; then the hidden paths, covered by empty tmpfs mounts; then the private temp
root; and last the hidden tmpfs mounts are made read-only (after the temp root, which
may sit inside one of them, got its mount point).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class BindMode(StrEnum):
    READ_ONLY = "ro"
    WRITABLE = "rw"


@dataclass(frozen=True, slots=True)
class Bind:
    path: str
    mode: BindMode

    @property
    def depth(self) -> int:
        return self.path.rstrip("/").count("/")


@dataclass(frozen=True, slots=True)
class Boundary:
    """What one sandboxed command is given. Paths are absolute and canonical."""

    binds: tuple[Bind, ...] = ()
    hidden_dirs: tuple[str, ...] = ()
    hidden_files: tuple[str, ...] = ()
    temp_root: str = ""
    share_network: bool = False
    new_session: bool = True


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
    if boundary.new_session:
        out.append("--new-session")
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for bind in ordered(boundary.binds):
        flag = "--bind" if bind.mode is BindMode.WRITABLE else "--ro-bind"
        out += [flag, bind.path, bind.path]
    for path in boundary.hidden_dirs:
        out += ["--perms", "0700", "--tmpfs", path]
    for path in boundary.hidden_files:
        out += ["--ro-bind", "/dev/null", path]
    if boundary.temp_root:
        out += ["--bind", boundary.temp_root, boundary.temp_root]
    for path in boundary.hidden_dirs:
        out += ["--remount-ro", path]
    out += ["--chdir", cwd, "--", *argv]
    return out
