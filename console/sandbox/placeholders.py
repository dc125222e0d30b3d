"""Protected files that do not exist yet, made to exist so that they can be pinned.

bubblewrap can only mount over what exists, so a protected name that is missing could be
created by the sandboxed command. For most names that is a change the watcher reports;
for a few it is worse: ``.git/commondir`` (git then reads config and hooks from the
directory it names) or ``.git/config.worktree``, created by one command, make the
operator's next plain ``git status`` run the agent's code.

So before the walk, inside a writable workspace whose ``.git`` is a directory, these are
created when missing, each with content that means to git exactly what its absence
means, and then pinned like any protected path:

- ``.git/commondir`` containing ``.`` (the common dir is this git dir);
- ``.git/config.worktree``, ``.git/info/attributes``, ``.git/objects/info/alternates``
  (when ``objects/info`` exists): empty;
- ``.git/hooks/``: an empty directory;
- ``.claude/``: an empty directory (git does not show it; Claude Code's settings there
  could otherwise be created to switch this console's hook off).

They are left in place: removing one later would unmount it from a sandbox that started
meanwhile. Created without following symlinks, below the workspace's open descriptor.
"""

from __future__ import annotations

import contextlib
import os
import stat

FILES: tuple[tuple[str, bytes], ...] = (
    (".git/commondir", b".\n"),
    (".git/config.worktree", b""),
    (".git/info/attributes", b""),
    (".git/objects/info/alternates", b""),
)
DIRS: tuple[str, ...] = (".git/hooks", ".git/info", ".claude")


def _dir_fd(root_fd: int, rel: str) -> int | None:
    """``rel`` (a directory below the workspace) opened without following symlinks."""
    fd = os.dup(root_fd)
    for part in rel.split("/"):
        try:
            nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = nfd
    return fd


def ensure(root_fd: int) -> list[str]:
    """Create the missing placeholders below the workspace opened as ``root_fd`` (a
    directory descriptor); returns what was created (relative). Failures are ignored:
    what cannot be created is left to the watcher, which reports its creation."""
    try:
        st = os.stat(".git", dir_fd=root_fd, follow_symlinks=False)
    except OSError:
        return []
    if not stat.S_ISDIR(st.st_mode):
        return []
    made: list[str] = []
    for rel in DIRS:
        parent, _, name = rel.rpartition("/")
        fd = _dir_fd(root_fd, parent) if parent else os.dup(root_fd)
        if fd is None:
            continue
        try:
            os.mkdir(name, 0o755, dir_fd=fd)
            made.append(rel)
        except OSError:
            pass
        finally:
            os.close(fd)
    for rel, content in FILES:
        parent, _, name = rel.rpartition("/")
        fd = _dir_fd(root_fd, parent)
        if fd is None:
            continue
        try:
            out = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd
            )
        except OSError:
            os.close(fd)
            continue
        try:
            with contextlib.suppress(OSError):
                os.write(out, content)
            made.append(rel)
        finally:
            os.close(out)
            os.close(fd)
    return made


def is_placeholder(workspace_root: str, rel: str, is_dir: bool) -> bool:
    """Whether ``rel`` is one of the placeholders as :func:`ensure` makes it.

    The watcher reports nothing for their creation: it is the console's own write, and a
    placeholder means to git exactly what its absence means. Whatever is later written
    into a placeholder directory, or over a placeholder file, is reported as usual.
    """
    if is_dir:
        return rel in DIRS
    wanted = dict(FILES).get(rel)
    if wanted is None:
        return False
    try:
        fd = os.open(os.path.join(workspace_root, rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.read(fd, len(wanted) + 1) == wanted
    finally:
        os.close(fd)
