"""The small set of commands `approval = "untrusted"` lets through without asking.

Deliberately narrow (docs/policy.md lists it): a handful of programs that only read,
with arguments that keep them reading and inside the workspace. Three rules make
"read-only" mean read-only rather than "named like a reader":

- **The program is the system's.** The *resolved* executable must sit directly in a
  system directory (``/usr/bin``, ``/bin``); a workspace script called ``./cat`` or
  ``tools/git`` is not ``cat`` or ``git``, whatever its name.
- **Paths are checked resolved.** Every argument that could name a file is resolved
  (symlinks followed, by the caller's resolver) and must stay inside the workspace,
  so ``cat key`` with ``key -> ~/.ssh/id_rsa`` is not a workspace read. Without a
  resolver, a command with path arguments is not read-only.
- **No form that writes or runs something.** Only listed options; git without global
  options (``-c``, ``-C``, ``--exec-path``...) and only known reading subcommands (an
  alias is not one); no ``--output``, ``--ext-diff``, ``--textconv``, ``--no-index``.
  Programs whose ordinary options write or execute (``find -exec/-delete/-fprint``,
  ``sed -i``, ``awk`` with ``system()``, ``sort -o``, ``tee``, ``xargs``, ``env``,
  ``less``/``more`` via ``LESSOPEN``, ``man``) are not in the set at all.

Anything else goes to the operator. The set is not the boundary — the sandbox is —
but what it lets through runs without anyone looking.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from console.contract.operation import Mode, Operation, WorkspaceAccess, is_within

# Where a read-only program must live (its resolved path). Root-owned on every
# distribution; /usr/local/bin is not here because package managers and users write it.
SYSTEM_BIN_DIRS = frozenset({"/usr/bin", "/bin"})

GIT_READ_SUBCOMMANDS = frozenset({"status", "diff", "log", "show", "ls-files", "rev-parse", "blame"})
# Options that make a reading git command write a file, run a configured program, or
# read outside the repository.
GIT_UNSAFE_PREFIXES = (
    "--output",
    "--ext-diff",
    "--textconv",
    "-o",
    "--exec",
    "--upload-pack",
    "--no-index",
    "--open-files-in-pager",
    "-O",
    "--contents",
)

FILE_READERS = frozenset({"ls", "cat", "head", "tail", "wc", "stat", "file"})
NO_ARG_COMMANDS = frozenset({"pwd", "true"})
# Long options with a value that is never a path (the rest with '=' are refused).
_INERT_VALUE_OPTIONS = frozenset(
    {
        "--color",
        "--colour",
        "--sort",
        "--time-style",
        "--format",
        "--lines",
        "--bytes",
        "--block-size",
        "--indicator-style",
        "--quoting-style",
        "--width",
        "--tabsize",
        "--pretty",
        "--date",
        "--abbrev",
        "--max-count",
        "--since",
        "--until",
        "--author",
        "--grep",
        "--stat",
        "--unified",
        "--diff-filter",
        "--decorate",
        "--untracked-files",
        "--ignore-submodules",
        "--porcelain",
        "--mime-type",
        "--mime-encoding",
    }
)
# Per-program options that read or write files other than the arguments.
_REFUSED_OPTIONS = {
    "wc": ("--files0-from",),
    "file": ("-C", "--compile", "-m", "--magic-file", "-f", "--files-from"),
    "tail": ("-f", "-F", "--follow", "--pid", "--retry"),
}

Resolver = Callable[[str], str]


def system_program(executable: str) -> str | None:
    """The program name when ``executable`` (canonical) is directly in a system bin dir."""
    directory, name = posixpath.split(executable)
    return name if directory in SYSTEM_BIN_DIRS else None


def _option_ok(name: str, arg: str) -> bool:
    refused = _REFUSED_OPTIONS.get(name, ())
    for bad in refused:
        # "-f", "-fn5", "--follow", "--follow=name"
        if arg == bad or (bad.startswith("--") and arg.startswith(bad + "=")):
            return False
        if not bad.startswith("--") and not arg.startswith("--") and bad[1] in arg[1:]:
            return False
    if "=" in arg:
        return arg.startswith("--") and arg.split("=", 1)[0] in _INERT_VALUE_OPTIONS
    return True


def _path_stays_inside(op: Operation, arg: str, resolve: Resolver | None) -> bool:
    lexical = posixpath.normpath(posixpath.join(op.cwd_path, arg))
    if not is_within(lexical, op.workspace_root):
        return False
    if resolve is None:
        return False
    return is_within(resolve(lexical), op.workspace_root)


def _arguments_ok(name: str, op: Operation, args: tuple[str, ...], resolve: Resolver | None) -> bool:
    options_done = False
    for arg in args:
        if not options_done and arg == "--":
            options_done = True
            continue
        if not options_done and arg.startswith("-") and arg != "-":
            if not _option_ok(name, arg):
                return False
            continue
        if arg == "-" or not _path_stays_inside(op, arg, resolve):
            return False
    return True


def is_read_only_command(op: Operation, resolve: Resolver | None = None) -> bool:
    """Whether ``op`` only reads inside its workspace. ``resolve`` maps an absolute path to
    its canonical form with symlinks followed (the daemon's host); without it, path
    arguments cannot be checked and such commands are not read-only."""
    if op.mode is not Mode.CAPTURED or op.env or op.stdin or op.write_dirs or op.capabilities:
        return False
    if op.workspace_access is not WorkspaceAccess.READ_ONLY:
        return False
    name = system_program(op.executable)
    if name is None:
        return False
    args = op.args
    if name == "git":
        # No global options: `-c`, `-C`, `--exec-path`, `--git-dir`, `-p`... change what runs.
        if not args or args[0] not in GIT_READ_SUBCOMMANDS:
            return False
        rest = args[1:]
        if any(a.startswith(GIT_UNSAFE_PREFIXES) for a in rest if a.startswith("-")):
            return False
        return _arguments_ok(name, op, rest, resolve)
    if name in FILE_READERS:
        return _arguments_ok(name, op, args, resolve)
    return name in NO_ARG_COMMANDS and not args
