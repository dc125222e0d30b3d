"""Which directories the kernel is really watching for this process.

notify adds a watch for each directory created inside a recursively watched tree, and
when the kernel refuses one (the inotify watch limit is reached) it says nothing: the
new directory is simply blind. ``/proc/self/fdinfo`` lists every watch of every
inotify descriptor, so the watcher can check that the directories it saw appear are
really watched, and fall back to polling when they are not.
"""

from __future__ import annotations

import os


def kernel_dev(st_dev: int) -> int:
    """``st_dev`` in the kernel's internal encoding, as fdinfo prints it."""
    return (os.major(st_dev) << 20) | os.minor(st_dev)


def watched_inodes() -> set[tuple[int, int]] | None:
    """(kernel device, inode) of every inotify watch this process holds; None when
    /proc does not tell."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    found: set[tuple[int, int]] = set()
    seen_any = False
    for fd in fds:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/self/fdinfo/{fd}", encoding="ascii", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        seen_any = True
        for line in text.splitlines():
            if not line.startswith("inotify "):
                continue
            fields = dict(part.split(":", 1) for part in line.split()[1:] if ":" in part)
            try:
                found.add((int(fields["sdev"], 16), int(fields["ino"], 16)))
            except (KeyError, ValueError):
                continue
    return found if seen_any else None
