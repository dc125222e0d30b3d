"""Codex's ``apply_patch`` text, read into what each file will hold.

The model writes a patch in Codex's own format::

    *** Begin Patch
    *** Add File: path          (then ``+`` lines: the file)
    *** Delete File: path
    *** Update File: path       (optionally ``*** Move to: other``)
    @@ optional header
     context
    -old line
    +new line
    *** End Patch

The hook asks the console about each file the patch touches, with what the file will
hold afterwards (so the operator sees the daemon's diff and a grant binds the content).
A hunk whose lines are not found in the file leaves that file's result unknown (None):
the request then binds and shows the patch text itself.
"""

from __future__ import annotations

import os

MAX_FILE_BYTES = 1 << 20


class PatchError(ValueError):
    pass


class FileChange:
    """One file of a patch: ``kind`` add, update or delete; ``new`` what it will hold
    (None when that cannot be computed; ``b""`` for a delete)."""

    __slots__ = ("kind", "move_to", "new", "path", "text")

    def __init__(self, kind: str, path: str) -> None:
        self.kind = kind
        self.path = path
        self.move_to = ""
        self.text: list[str] = []  # the patch's own lines for this file
        self.new: bytes | None = None


def parse(patch: str) -> list[FileChange]:
    lines = patch.replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or lines[0].strip() != "*** Begin Patch" or lines[-1].strip() != "*** End Patch":
        raise PatchError("an apply_patch input starts with '*** Begin Patch' and ends with '*** End Patch'")
    changes: list[FileChange] = []
    for line in lines[1:-1]:
        for prefix, kind in (
            ("*** Add File: ", "add"),
            ("*** Delete File: ", "delete"),
            ("*** Update File: ", "update"),
        ):
            if line.startswith(prefix):
                changes.append(FileChange(kind, line[len(prefix) :].strip()))
                break
        else:
            if not changes:
                raise PatchError(f"a patch line before any file: {line[:80]!r}")
            if line.startswith("*** Move to: "):
                changes[-1].move_to = line[len("*** Move to: ") :].strip()
            else:
                changes[-1].text.append(line)
    if not changes:
        raise PatchError("the patch names no file")
    return changes


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_FILE_BYTES:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _hunks(text: list[str]) -> list[list[str]]:
    hunks: list[list[str]] = [[]]
    for line in text:
        if line.startswith("@@"):
            if hunks[-1]:
                hunks.append([])
        elif line.strip() == "*** End of File":
            continue
        else:
            hunks[-1].append(line)
    return [h for h in hunks if h]


def _apply(old: str, text: list[str]) -> str | None:
    lines = old.split("\n")
    trailing = lines[-1] == ""
    if trailing:
        lines.pop()
    at = 0
    for hunk in _hunks(text):
        before = [ln[1:] for ln in hunk if ln[:1] in (" ", "-") or ln == ""]
        after = [ln[1:] for ln in hunk if ln[:1] in (" ", "+") or ln == ""]
        found = next(
            (i for i in range(at, len(lines) - len(before) + 1) if lines[i : i + len(before)] == before), -1
        )
        if found < 0 or not before:
            return None
        lines[found : found + len(before)] = after
        at = found + len(after)
    return "\n".join(lines) + ("\n" if trailing or not lines else "")


def resolve(changes: list[FileChange], cwd: str) -> None:
    """Fill in each change's ``new`` (paths relative to ``cwd``)."""
    for change in changes:
        path = change.path if change.path.startswith("/") else os.path.join(cwd, change.path)
        if change.kind == "add":
            body = [ln[1:] if ln.startswith("+") else None for ln in change.text]
            change.new = None if None in body else ("\n".join(ln or "" for ln in body) + "\n").encode()
        elif change.kind == "delete":
            change.new = b""
        else:
            old = _read(path)
            result = None if old is None else _apply(old, change.text)
            change.new = None if result is None else result.encode("utf-8", "surrogatepass")
