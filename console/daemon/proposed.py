"""The change a file-writing tool call proposes, as a diff against the file as it is.

Claude Code's Write/Edit/MultiEdit are submitted by the hook as ``true PATH sha256:D``
(the write is Claude Code's own; the content's digest makes the grant bind path and
content) with the new content as the operation's ``stdin``. The operator must see what
will be written, not a hash: the daemon, which can read the file, diffs the current
bytes against that content — only when the content is the one the digest names, so what
is shown is what a grant binds.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
from typing import Any

# Every agent's file writes have this shape (console/adapters/calls.py write_operation):
# ``true PATH sha256:D`` (``true`` resolved to its path), a workspace_write scoped to
# PATH, and the content as stdin.
MAX_DIFF_INPUT_BYTES = 256 * 1024  # each side; beyond it, sizes and the digest only
MAX_DIFF_LINES = 2000


def proposed_change(op: Any) -> dict[str, Any] | None:
    """``{"path", "diff", "new_file", "old_bytes", "new_bytes", "note"}`` or None when the
    operation proposes no file content."""
    if not is_file_write(op):
        return None
    path, digest = op.args
    if digest != "sha256:" + hashlib.sha256(op.stdin).hexdigest():
        return {
            "path": path,
            "diff": "",
            "new_file": False,
            "old_bytes": 0,
            "new_bytes": len(op.stdin),
            "note": "the content sent does not match the digest the grant binds: not shown",
        }
    old, note = _current(path)
    change: dict[str, Any] = {
        "path": path,
        "diff": "",
        "new_file": old is None,
        "old_bytes": len(old or b""),
        "new_bytes": len(op.stdin),
        "note": note,
    }
    if note or len(op.stdin) > MAX_DIFF_INPUT_BYTES:
        change["note"] = note or f"the new content is over {MAX_DIFF_INPUT_BYTES // 1024} KiB: no diff"
        return change
    try:
        before = (old or b"").decode("utf-8").splitlines(keepends=True)
        after = op.stdin.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        change["note"] = "binary content: no diff"
        return change
    lines = list(
        difflib.unified_diff(before, after, "a" + path if old is not None else "/dev/null", "b" + path, n=3)
    )
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"… {len(lines) - MAX_DIFF_LINES} more diff lines not shown\n"]
    change["diff"] = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return change


def is_file_write(op: Any) -> bool:
    """Whether ``op`` proposes a file's new content, whichever agent sent it."""
    if len(op.args) != 2 or not op.stdin:
        return False
    path, digest = op.args
    if not str(digest).startswith("sha256:"):
        return False
    return any(c.kind.value == "workspace_write" and c.scope == path for c in op.capabilities)


def _current(path: str) -> tuple[bytes | None, str]:
    """The file's bytes now (None: no file yet) and a note when they cannot be diffed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return b"", f"the current file cannot be read ({exc.strerror}): no diff"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b"", "not a regular file: no diff"
        data = os.read(fd, MAX_DIFF_INPUT_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_DIFF_INPUT_BYTES:
        return b"", f"the current file is over {MAX_DIFF_INPUT_BYTES // 1024} KiB: no diff"
    return data, ""
