"""The small set of commands `approval = "untrusted"` lets through without asking.

Deliberately narrow (docs/policy.md lists it): a handful of programs that only read,
with arguments that keep them reading and inside the workspace. Anything else —
a global git option, an output file, a path that leaves the workspace — goes to review.
"""

from __future__ import annotations

import posixpath

from console.contract.operation import Mode, Operation, is_within

GIT_READ_SUBCOMMANDS = frozenset({"status", "diff", "log", "show", "ls-files", "rev-parse", "blame"})
# Options that make a reading git command write a file or run a configured program.
GIT_UNSAFE_PREFIXES = ("--output", "--ext-diff", "--textconv", "-o", "--exec", "--upload-pack")

FILE_READERS = frozenset({"ls", "cat", "head", "tail", "wc", "stat", "file"})
NO_ARG_COMMANDS = frozenset({"pwd", "true"})


def _paths_stay_inside(op: Operation, args: tuple[str, ...]) -> bool:
    for arg in args:
        if arg.startswith("-"):
            continue
        path = posixpath.normpath(posixpath.join(op.cwd_path, arg))
        if not is_within(path, op.workspace_root):
            return False
    return True


def is_read_only_command(op: Operation) -> bool:
    if op.mode is not Mode.CAPTURED or op.env or op.stdin or op.write_dirs:
        return False
    name = posixpath.basename(op.executable)
    args = op.args
    if name == "git":
        if not args or args[0] not in GIT_READ_SUBCOMMANDS:
            return False
        return not any(a.startswith(GIT_UNSAFE_PREFIXES) for a in args[1:])
    if name in FILE_READERS:
        return _paths_stay_inside(op, args)
    return name in NO_ARG_COMMANDS and not args
