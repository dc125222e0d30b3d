"""Content binding: which files decide what an operation runs, and their digests.

A fingerprint must not carry an approval over to different code, so every file whose
bytes decide what runs is named in the operation's ``content`` with its SHA-256 (or
None when there is no regular file there yet, so creating it changes the fingerprint).
What cannot be bound is said in ``unbound`` (short fixed reasons, never agent text), and
a standing grant is refused for such an operation (docs/fingerprint.md §2).

What is bound, following the command through the forms that only pass it on:

- the executable, unless it lies in a system directory (:data:`SYSTEM_DIRS`), and the
  interpreter on its ``#!`` line under the same rule;
- wrappers are unwrapped to the command they run: ``env`` (``NAME=VALUE``, ``-i``,
  ``-u``, ``-C``, ``-S``), ``timeout``, ``nice``, ``nohup``, ``stdbuf``, ``ionice``,
  ``setsid``, ``time``, ``command``, ``exec``; ``sh -c``/``bash -c`` whose text is a
  list of simple commands of plain words (``a && ./b | c``); anything more is unbound;
- interpreters: the script (wherever it is), shell ``--rcfile``/``--init-file`` files,
  python ``-m`` modules found from the working directory, node ``-r``/``--require``/
  ``--import``/``--loader`` and ruby ``-r`` when they name a path;
- files a shell script sources with a literal path (``. ./lib.sh``, ``source lib.sh``),
  one level deep: what those files source in turn is reported unbound;
- ``make``: the makefile it would read (``-f``, ``-C``, else the first of
  ``GNUmakefile makefile Makefile``; the ones before it are bound as absent) and the
  literal paths of its ``include``/``-include``/``sinclude`` lines, recursively.

Binding is pure given the :class:`~console.contract.host.Host`: the daemon binds with the
real filesystem at submit time, at decide time and, from the bytes it is about to run,
at run time (console/sandbox/content_pins.py); any difference is ``content_changed``.

Entry points only: code that a bound file runs or imports by other means (a script
that runs ``./other.sh``, a Python module's imports, a recursive ``$(MAKE) -C sub``) is
not followed.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache

from console.contract.host import Host
from console.contract.package_managers import bind_manager, manager_of, pip
from console.contract.problem import invalid

# Root-owned trees an agent cannot write without root: executables here are identified
# by their path alone. /opt and /usr/local-like trees elsewhere are often group- or
# user-writable, so they are hashed like any other file. (/usr/local is under /usr.)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

MAX_BOUND_FILES = 64
MAX_SCAN_BYTES = 1 << 20  # scripts and makefiles read for what they source/include
MAX_DEPTH = 8  # wrappers within wrappers
# A dotted module name deeper than this is not followed: each part is a directory to
# resolve, and a name of a thousand parts kept the daemon's loop busy for seconds.
MAX_MODULE_PARTS = 32

# The reasons (fixed text: what the operator reads after "content not bound: ").
NOT_SIMPLE = "content not bound: the -c script is not a list of simple commands of plain words"
DYNAMIC_WORD = "content not bound: a command or script is named by an expansion resolved at run time"
PATH_OVERRIDE = "content not bound: the command is looked up on a PATH set in its own arguments"
PYTHON_MODULE = "content not bound: python -m module resolved at run time"
NODE_MODULE = "content not bound: node preloads a module resolved at run time"
RUBY_LIBRARY = "content not bound: ruby -r library resolved at run time"
PERL_MODULE = "content not bound: perl -M/-m module resolved at run time"
SOURCE_DYNAMIC = "content not bound: a script sources a file named at run time"
SOURCE_NESTED = "content not bound: files sourced by sourced files (one level is bound)"
MAKE_COMPUTED = "content not bound: make includes computed at run time"
MAKE_EVAL = "content not bound: make --eval text may include makefiles"
ENV_SPLIT = "content not bound: env -S text is not plain words"
UNREADABLE = "content not bound: a script or makefile is too large or unreadable to scan"
TOO_MANY = f"content not bound: more than {MAX_BOUND_FILES} files"
TOO_DEEP = "content not bound: wrappers nested too deeply"
STDIN_SCRIPT = "content not bound: an interpreter reads its script from a redirection"
CWD_UNKNOWN = "content not bound: the -c script changes directory to a computed path"


@dataclass
class Binding:
    """The files bound (path -> digest or None), what could not be, and the entry points:
    argv positions whose file is opened by path to start the run (for private copies)."""

    content: dict[str, str | None] = field(default_factory=dict)
    unbound: list[str] = field(default_factory=list)
    entries: dict[int, str] = field(default_factory=dict)

    def note(self, reason: str) -> None:
        if reason not in self.unbound:
            self.unbound.append(reason)


_SYSTEM_PREFIXES = tuple(d + "/" for d in SYSTEM_DIRS)


def in_system_dir(path: str) -> bool:
    return path.startswith(_SYSTEM_PREFIXES) or path in SYSTEM_DIRS


# ----------------------------------------------------------------------------- families

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "rbash"})
_PYTHON_RE = re.compile(r"python[0-9.]*")
_RUBY_RE = re.compile(r"ruby[0-9.]+")
_PERL_RE = re.compile(r"perl[0-9.]+")
# A dotted module name (python -m): identifiers joined by dots.
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
# Options after which the next argument is inline code (so there is no script file),
# and options that take a separate value (so the next argument is not the script).
_INLINE_CODE = {
    "python": frozenset({"-c", "-m"}),
    "node": frozenset({"-e", "--eval", "-p", "--print"}),
    "ruby": frozenset({"-e"}),
    "perl": frozenset({"-e", "-E"}),
}
_TAKES_VALUE = {
    "python": frozenset({"-W", "-X", "--check-hash-based-pycs"}),
    "node": frozenset(
        {"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions"}
    ),
    "ruby": frozenset({"-I", "-r", "-C", "-E"}),
    "perl": frozenset({"-I", "-M", "-m"}),
    "shell": frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}),
}


def interpreter_family(*names: str) -> str | None:
    """The known interpreter family of an executable, judged by any of its names."""
    for name in names:
        family = _family(name)
        if family is not None:
            return family
    return None


@lru_cache(maxsize=1024)
def _family(name: str) -> str | None:
    """One name's family (a pure function of the text, asked on every request)."""
    base = posixpath.basename(name)
    if base in _SHELLS:
        return "shell"
    if _PYTHON_RE.fullmatch(base):
        return "python"
    if base in ("node", "nodejs"):
        return "node"
    if base == "ruby" or _RUBY_RE.fullmatch(base):
        return "ruby"
    if base == "perl" or _PERL_RE.fullmatch(base):
        return "perl"
    return None


def script_argument(family: str, args: tuple[str, ...]) -> str | None:
    """The script file an interpreter would run, or None when it runs inline code."""
    found = _script_index(family, args)
    return args[found] if found is not None else None


def _script_index(family: str, args: tuple[str, ...] | list[str]) -> int | None:
    inline = _INLINE_CODE.get(family, frozenset())
    takes_value = _TAKES_VALUE.get(family, frozenset())
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return i + 1 if i + 1 < len(args) else None
        if arg == "-":
            return None
        is_option = arg.startswith("-") or (family == "shell" and arg.startswith("+"))
        if not is_option:
            return i
        if family == "shell" and not arg.startswith("--"):
            cluster = arg[1:]
            if arg.startswith("-") and ("c" in cluster or "s" in cluster):
                return None
            i += 1 + cluster.count("o") + cluster.count("O")
            continue
        if arg in inline or (family == "python" and arg.startswith(("-c", "-m")) and len(arg) > 2):
            return None
        if arg in takes_value:
            i += 1
        i += 1
    return None


# ----------------------------------------------------------------------------- wrappers

_PLAIN_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_NAME_VALUE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)
_DYNAMIC = re.compile(r"[$`*?\[~]")
# Shell words that make a command not simple (or are not commands at all).
_RESERVED = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "function",
        "select",
        "coproc",
        "{",
        "}",
        "[[",
        "]]",
        "!",
        "eval",
        "trap",
        "alias",
    ]
)
_LIST_OPERATORS = frozenset({";", "&", "&&", "|", "||", "|&"})


def _split_wrapper(name: str, args: list[str]) -> tuple[int, dict[str, str]] | None:
    """For a wrapper, the index of the command it runs in ``args`` and what it changes
    (``chdir``, ``path``); None when ``name`` is not a wrapper or runs nothing."""
    spec = _WRAPPERS.get(name)
    if spec is None:
        return None
    with_value, positional = spec
    changes: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if name == "env" and _NAME_VALUE.fullmatch(arg):
            if arg.startswith("PATH="):
                changes["path"] = arg[5:]
            i += 1
            continue
        if not arg.startswith("-") or arg == "-":
            if name == "env" and arg == "-":  # same as -i
                i += 1
                continue
            break
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            if key in with_value and not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            if key in ("--chdir",):
                changes["chdir"] = value
            if key == "--split-string":
                changes["split"] = value
            i += 1
            continue
        # A short-option cluster: the first option that takes a value ends it.
        j = 1
        while j < len(arg):
            opt = "-" + arg[j]
            if opt in with_value:
                value = arg[j + 1 :]
                if not value:
                    value = args[i + 1] if i + 1 < len(args) else ""
                    i += 1
                if opt == "-C" and name == "env":
                    changes["chdir"] = value
                if opt == "-S" and name == "env":
                    changes["split"] = value
                break
            j += 1
        i += 1
    if name == "command" and any(a in ("-v", "-V") for a in args[:i]):
        return len(args), changes  # prints what the name is; runs nothing
    return i + positional, changes


# name -> (options taking a value, positional arguments before the command)
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string", "-P"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "nohup": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata"}), 0),
    "setsid": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "command": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "chrt": (frozenset(), 1),
    "taskset": (frozenset(), 1),
}


# ----------------------------------------------------------------------------- binder


class _Binder:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.out = Binding()
        self._scanned: set[str] = set()
        self.field = "executable"  # what a problem names: the argument being followed
        # Directories a package manager puts first on a script's PATH (node_modules/.bin).
        self.bin_dirs: tuple[str, ...] = ()

    # -- what console/contract/package_managers.py uses ---------------------------------

    def note(self, reason: str) -> None:
        self.out.note(reason)

    def exists(self, path: str) -> str | None:
        """What is at ``path`` (dir, exec, file, other), or None when nothing is."""
        kind = self.host.resolve(posixpath.normpath(path)).kind
        return None if kind == "missing" else kind

    def shell_text(self, text: str, cwd: str, depth: int) -> None:
        self._text(text, cwd, depth)

    def run(self, exe: str, args: list[str], cwd: str, depth: int) -> None:
        self.command(exe, args, cwd, None, depth)

    def listing(self, directory: str) -> list[str]:
        return self.host.listdir(directory)

    # -- files ---------------------------------------------------------------------

    def file(self, path: str, cwd: str) -> tuple[str, str | None]:
        """Bind the file at ``path`` (joined to ``cwd``, symlinks resolved)."""
        full = path if path[:1] == "/" else f"{cwd.rstrip('/')}/{path}"
        # An absolute path with no empty, "." or ".." component (no "//", no "/." and no
        # trailing "/") is what normpath would return: most are, and this is per file.
        if full[:1] != "/" or "//" in full or "/." in full or full[-1] == "/":
            full = posixpath.normpath(full)
        found = self.host.resolve(full)
        real = found.path
        if real not in self.out.content:
            if len(self.out.content) >= MAX_BOUND_FILES:
                self.out.note(TOO_MANY)
                return real, None
            # Missing when resolved is bound as missing: a file created since is a change
            # of content, which the run's check refuses (console/sandbox/content_pins.py).
            digest = None if found.kind == "missing" else self.host.file_sha256(real)
            if (
                digest is None
                and found.kind != "missing"
                and self.host.resolve(real).kind in ("exec", "file")
            ):
                raise invalid(
                    self.field,
                    "content_unreadable",
                    "a file this command runs exists but the console cannot read it to bind its"
                    " content; make it readable (or run something else)",
                )
            self.out.content[real] = digest
        return real, self.out.content[real]

    def text(self, path: str) -> str | None:
        if self.out.content.get(path) is None:
            return None
        text = self.host.read_small_text(path, MAX_SCAN_BYTES)
        if text is None:
            self.out.note(UNREADABLE)
        return text

    # -- commands ------------------------------------------------------------------

    def command(self, exe: str, args: list[str], cwd: str, pos: int | None, depth: int) -> None:
        """``exe`` (canonical) runs with ``args`` in ``cwd``; ``pos``: argv index of exe."""
        if depth > MAX_DEPTH:
            self.out.note(TOO_DEEP)
            return
        self.field = "args" if pos is None else "executable" if pos == 0 else f"args[{pos - 1}]"
        if not in_system_dir(exe):
            self.file(exe, "/")
            if pos is not None:
                self.out.entries[pos] = exe
        name = exe[exe.rfind("/") + 1 :]  # posixpath.basename
        wrapped = _split_wrapper(name, args) if name in _WRAPPERS else None
        if wrapped is not None:
            self._wrapper(name, args, wrapped, cwd, pos, depth)
            return
        manager = manager_of(name)
        if manager is not None:
            bind_manager(self, manager, args, cwd, depth)
            return
        family = interpreter_family(exe)
        if family is not None:
            self._interpreter(family, args, cwd, pos, depth)
        elif name in ("make", "gmake"):
            self._make(args, cwd)
        elif not in_system_dir(exe) and self._shebang(exe) == "shell":
            # A shell script run as the executable: what it sources counts too.
            self._sources(exe, cwd)

    def _shebang(self, exe: str) -> str | None:
        """The family of a script's ``#!`` interpreter, binding that interpreter."""
        text = self.host.read_small_text(exe, MAX_SCAN_BYTES) if self.out.content.get(exe) else None
        if text is None or not text.startswith("#!"):
            return None  # a binary (or a script too large to be one we scan)
        words = text[2:].split("\n", 1)[0].split()
        if not words:
            return None
        interp = self.host.resolve(posixpath.normpath(words[0])).path
        if not in_system_dir(interp):
            self.file(interp, "/")
        if posixpath.basename(interp) == "env" and len(words) > 1:
            inner = [w for w in words[1:] if not w.startswith("-")]
            return interpreter_family(inner[0]) if inner else None
        return interpreter_family(interp)

    def _resolve_command(self, word: str, cwd: str, path_override: bool) -> str | None:
        if "/" in word:
            res = self.host.resolve(posixpath.normpath(posixpath.join(cwd, word)))
            if res.kind != "exec":
                self.file(res.path, "/")  # absent now: creating it changes the fingerprint
                return None
            return res.path
        if path_override:
            self.out.note(PATH_OVERRIDE)
            return None
        for directory in self.bin_dirs:
            local = self.host.resolve(posixpath.join(directory, word))
            if local.kind == "exec":
                return local.path
            # Absent now, it would come first: installing it there changes the fingerprint.
            self.file(posixpath.join(directory, word), "/")
        found = self.host.which(word)
        if found is None:
            return None
        res = self.host.resolve(posixpath.normpath(found))
        return res.path if res.kind == "exec" else None

    def _wrapper(
        self,
        name: str,
        args: list[str],
        wrapped: tuple[int, dict[str, str]],
        cwd: str,
        pos: int | None,
        depth: int,
    ) -> None:
        start, changes = wrapped
        inner = args[start:]
        inner_pos = None if pos is None else pos + 1 + start
        if "split" in changes:
            words = _plain_words(changes["split"])
            if words is None:
                self.out.note(ENV_SPLIT)
                return
            inner = words + inner
            inner_pos = None
        if "chdir" in changes:
            if _DYNAMIC.search(changes["chdir"]):
                self.out.note(CWD_UNKNOWN)
                return
            cwd = posixpath.normpath(posixpath.join(cwd, changes["chdir"]))
        if not inner:
            return
        exe = self._resolve_command(inner[0], cwd, "path" in changes)
        if exe is not None:
            self.command(exe, inner[1:], cwd, inner_pos, depth + 1)

    # -- interpreters ----------------------------------------------------------------

    def _interpreter(self, family: str, args: list[str], cwd: str, pos: int | None, depth: int) -> None:
        if family == "shell":
            self._shell(args, cwd, pos, depth)
        elif family == "python":
            self._python(args, cwd, pos)
        else:
            self._other(family, args, cwd, pos)

    def _entry(self, args: list[str], index: int, cwd: str, pos: int | None) -> str:
        self.field = f"args[{pos + index}]" if pos is not None else "args"
        real, _ = self.file(args[index], cwd)
        if pos is not None:
            self.out.entries[pos + 1 + index] = real
        return real

    def _shell(self, args: list[str], cwd: str, pos: int | None, depth: int) -> None:
        inline = False
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in ("--rcfile", "--init-file") and i + 1 < len(args):
                self.file(args[i + 1], cwd)
                i += 2
                continue
            if arg == "--":
                i += 1
                break
            if arg == "-":
                return  # the script is standard input, which the fingerprint binds
            if arg.startswith("--"):
                i += 1
                continue
            if arg[:1] in ("-", "+") and len(arg) > 1:
                cluster = arg[1:]
                if arg[0] == "-" and "s" in cluster:
                    return  # commands from standard input
                if arg[0] == "-" and "c" in cluster:
                    inline = True
                i += 1 + cluster.count("o") + cluster.count("O")
                continue
            break
        if i >= len(args):
            return
        if inline:
            self._text(args[i], cwd, depth)
            return
        real = self._entry(args, i, cwd, pos)
        self._sources(real, cwd)

    def _python(self, args: list[str], cwd: str, pos: int | None) -> None:
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                if i + 1 < len(args):
                    self._entry(args, i + 1, cwd, pos)
                return
            if arg == "-":
                return
            if not arg.startswith("-"):
                self._entry(args, i, cwd, pos)
                return
            if arg.startswith("--"):
                i += 2 if arg in _TAKES_VALUE["python"] else 1
                continue
            j = 1
            consumed_next = False
            while j < len(arg):
                ch = arg[j]
                rest = arg[j + 1 :]
                if ch in "cm":
                    value = rest or (args[i + 1] if i + 1 < len(args) else "")
                    if ch == "m":
                        self._module(value, cwd)
                        if value == "pip":  # python -m pip install -e .
                            pip(self, args[i + (1 if rest else 2) :], cwd)
                    return
                if ch in "WX":
                    consumed_next = not rest
                    break
                j += 1
            i += 2 if consumed_next else 1

    def _module(self, name: str, cwd: str) -> None:
        """``python -m name`` from ``cwd`` (first on sys.path): bind what is there."""
        parts = name.split(".")
        if len(parts) > MAX_MODULE_PARTS or not _DOTTED_NAME.fullmatch(name):
            self.out.note(PYTHON_MODULE)
            return
        for k in range(1, len(parts)):
            self.file("/".join(parts[:k]) + "/__init__.py", cwd)
        base = "/".join(parts)
        found = False
        for candidate in (f"{base}.py", f"{base}/__init__.py", f"{base}/__main__.py"):
            _, digest = self.file(candidate, cwd)
            found = found or digest is not None
        if not found:
            self.out.note(PYTHON_MODULE)

    def _other(self, family: str, args: list[str], cwd: str, pos: int | None) -> None:
        """node, ruby, perl: preloads that name files are bound, module names are not."""
        preload = {
            "node": ({"-r", "--require", "--import", "--loader", "--experimental-loader"}, NODE_MODULE),
            "ruby": ({"-r"}, RUBY_LIBRARY),
            "perl": ({"-M", "-m"}, PERL_MODULE),
        }[family]
        takes_value = _TAKES_VALUE[family]
        inline = _INLINE_CODE[family]
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                if i + 1 < len(args):
                    self._entry(args, i + 1, cwd, pos)
                return
            if arg == "-" or arg in inline:
                return
            if not arg.startswith("-"):
                self._entry(args, i, cwd, pos)
                return
            key, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            if key in inline:
                return
            if not arg.startswith("--") and len(arg) > 2:
                if arg[:2] in takes_value:
                    key, value, eq = arg[:2], arg[2:], "attached"
                elif family != "node" and any(c in arg[1:] for c in "eE"):
                    return  # a cluster such as -ne 'code': inline code
            if key in takes_value:
                if not eq:
                    value = args[i + 1] if i + 1 < len(args) else ""
                    i += 1
                if key in preload[0]:
                    if family != "perl" and value.startswith(("/", "./", "../")):
                        self.file(value, cwd)
                    else:
                        self.out.note(preload[1])
                if family == "ruby" and key == "-C":
                    cwd = posixpath.normpath(posixpath.join(cwd, value))
            i += 1

    # -- what scripts and makefiles pull in --------------------------------------------

    def _sources(self, script: str, cwd: str, *, level: int = 0) -> None:
        if script in self._scanned:
            return
        self._scanned.add(script)
        text = self.text(script)
        if text is None:
            return
        for target in _sourced(text):
            if target is None:
                self.out.note(SOURCE_DYNAMIC)
                continue
            if level >= 1:
                self.out.note(SOURCE_NESTED)
                return
            real, _ = self.file(target, cwd)
            self._sources(real, cwd, level=level + 1)

    def _make(self, args: list[str], cwd: str) -> None:
        makefiles: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                break
            if arg.startswith("--"):
                key, eq, value = arg.partition("=")
                if key in ("--file", "--makefile", "--directory", "--include-dir", "--eval") and not eq:
                    value = args[i + 1] if i + 1 < len(args) else ""
                    i += 1
                if key in ("--file", "--makefile"):
                    makefiles.append(value)
                elif key == "--directory":
                    cwd = posixpath.normpath(posixpath.join(cwd, value))
                elif key == "--eval" and "include" in value:
                    self.out.note(MAKE_EVAL)
                i += 1
                continue
            if arg.startswith("-") and len(arg) > 1:
                j = 1
                while j < len(arg):
                    ch, rest = arg[j], arg[j + 1 :]
                    if ch in "fCIoW":
                        value = rest
                        if not value:
                            value = args[i + 1] if i + 1 < len(args) else ""
                            i += 1
                        if ch == "f":
                            makefiles.append(value)
                        elif ch == "C":
                            cwd = posixpath.normpath(posixpath.join(cwd, value))
                        break
                    if ch in "jl":
                        if not rest and i + 1 < len(args) and args[i + 1].isdigit():
                            i += 1
                        break
                    j += 1
            i += 1
        bound: list[str] = []
        if makefiles:
            for m in makefiles:
                if m != "-":
                    bound.append(self.file(m, cwd)[0])
        else:
            for name in ("GNUmakefile", "makefile", "Makefile"):
                real, digest = self.file(name, cwd)
                if digest is not None:
                    bound.append(real)
                    break
        seen: set[str] = set()
        while bound:
            path = bound.pop()
            if path in seen:
                continue
            seen.add(path)
            text = self.text(path)
            if text is None:
                continue
            for target in _make_includes(text):
                if target is None:
                    self.out.note(MAKE_COMPUTED)
                    continue
                real, digest = self.file(target, cwd)
                if digest is not None:
                    bound.append(real)

    # -- sh -c text --------------------------------------------------------------------

    def _text(self, text: str, cwd: str, depth: int) -> None:
        commands = simple_commands(text)
        if commands is None:
            self.out.note(NOT_SIMPLE)
            return
        known_cwd: str | None = cwd
        for words in commands:
            path_override = False
            while words and _NAME_VALUE.fullmatch(words[0]):
                path_override = path_override or words[0].startswith("PATH=")
                words = words[1:]
            words = _strip_builtin_prefixes(words)
            if not words:
                continue
            head = words[0]
            if head in ("cd", "pushd"):
                target = words[1] if len(words) > 1 else None
                if known_cwd is not None and target and not _DYNAMIC.search(target) and target != "-":
                    known_cwd = posixpath.normpath(posixpath.join(known_cwd, target))
                else:
                    known_cwd = None
                continue
            if head in ("export", "set", "unset", "true", ":", "echo", "printf", "test", "["):
                if head == "export" and any(w.startswith("PATH=") for w in words):
                    path_override = True
                    self.out.note(PATH_OVERRIDE)
                continue
            if _DYNAMIC.search(head):
                self.out.note(DYNAMIC_WORD)
                continue
            if known_cwd is None:
                self.out.note(CWD_UNKNOWN)
                continue
            if head in (".", "source"):
                if len(words) < 2 or _DYNAMIC.search(words[1]):
                    self.out.note(SOURCE_DYNAMIC)
                    continue
                real, _ = self.file(words[1], known_cwd)
                self._sources(real, known_cwd, level=1)
                continue
            exe = self._resolve_command(head, known_cwd, path_override)
            if exe is None:
                continue
            rest = words[1:]
            if _runs_by_argument(exe) and any(_DYNAMIC.search(w) for w in rest):
                self.out.note(DYNAMIC_WORD)
                continue
            self.command(exe, rest, known_cwd, None, depth + 1)


def _strip_builtin_prefixes(words: list[str]) -> list[str]:
    """``exec [-cl] [-a NAME]``, ``command [-p]``, ``builtin``, ``time [-p]`` run what
    follows them; ``command -v``/``-V`` runs nothing."""
    while words and words[0] in ("exec", "command", "builtin", "time"):
        head, words = words[0], words[1:]
        while words and words[0].startswith("-") and words[0] != "--":
            if head == "command" and words[0] in ("-v", "-V"):
                return []
            if head == "exec" and words[0] == "-a":
                words = words[1:]
            words = words[1:]
        if words and words[0] == "--":
            words = words[1:]
    return words


def _runs_by_argument(exe: str) -> bool:
    """Programs whose arguments can name code to run (where an expansion matters)."""
    name = posixpath.basename(exe)
    return interpreter_family(exe) is not None or name in _WRAPPERS or name in ("make", "gmake")


def _plain_words(text: str) -> list[str] | None:
    words = text.split()
    if all(_PLAIN_WORD.fullmatch(w) for w in words):
        return words
    return None


def simple_commands(text: str) -> list[list[str]] | None:
    """The simple commands of a ``-c`` text that is a list of them (``;``, ``&&``,
    ``||``, ``|``, ``&``) with words quoted at most plainly; None for anything else
    (substitutions, redirections, groups, here-documents, keywords, escapes).

    Words may still contain ``$`` or glob characters (kept as written); the caller
    decides where that matters. Output redirections (``> f``, ``>> f``, ``2>&1``,
    ``&> f``) do not change what runs and are dropped, when the text has no quotes to
    make their reading uncertain; any ``<`` (input, here-documents) is refused.
    Leading comment lines are dropped (bash ignores them; they are where an agent asks
    for more, console/adapters/escalation.py); any other ``#`` or newline is refused.
    """
    text = _without_leading_comments(text)
    if ">" in text and "<" not in text and "'" not in text and '"' not in text:
        text = _OUTPUT_REDIRECT.sub(" ", text)
    if any(c in text for c in "\\`()<>{}\n\r#"):
        return None
    if "$(" in text or "${" in text:
        return None
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in _LIST_OPERATORS:
            if not commands[-1]:
                return None
            commands.append([])
            continue
        if set(token) <= set(";&|"):
            return None  # ;; or a stray operator
        if not commands[-1] and token in _RESERVED:
            return None
        commands[-1].append(token)
    return [c for c in commands if c]


def _without_leading_comments(text: str) -> str:
    """``text`` without its leading blank and comment lines. With nothing before it, a
    line whose first word starts with ``#`` is a comment to its newline (a backslash in a
    comment continues nothing)."""
    lines = text.split("\n")
    while len(lines) > 1 and (not lines[0].strip(" \t") or lines[0].lstrip(" \t").startswith("#")):
        lines.pop(0)
    return "\n".join(lines)


# An output redirection at a word boundary: [N|&]> or >> or >|, then &N / &- or a target.
_OUTPUT_REDIRECT = re.compile(r"(?<![^\s;&|])(\d*|&)(>>?|>\|)(&\d+|&-)?[ \t]*(?(3)|([^\s;&|<>]+))")

_SOURCE_HEAD = frozenset({".", "source"})
_COMMAND_START = frozenset({"then", "do", "else", "elif", "if", "while", "until", "!", "{", "time"})


def _sourced(text: str) -> list[str | None]:
    """The files a shell script sources with ``.``/``source``: a literal path, or None
    for one named by an expansion. Line by line, at command positions."""
    found: list[str | None] = []
    for line in text.splitlines():
        stripped = line.strip()
        if "source" not in stripped and ". " not in stripped and not stripped.startswith(".\t"):
            continue
        lexer = shlex.shlex(stripped, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            tokens = list(lexer)
        except ValueError:
            if re.search(r"(^|[;&|]\s*)(\.|source)\s", stripped):
                found.append(None)
            continue
        start = True
        for k, token in enumerate(tokens):
            if start and token in _SOURCE_HEAD:
                target = tokens[k + 1] if k + 1 < len(tokens) else ""
                if not target or _DYNAMIC.search(target) or set(target) <= set(";&|()"):
                    found.append(None)
                else:
                    found.append(target)
            start = token in _COMMAND_START or set(token) <= set(";&|()")
    return found


_INCLUDE = re.compile(r"(?:-include|sinclude|include)[ \t]+(.*)")


def _make_includes(text: str) -> list[str | None]:
    """The literal file names of a makefile's include lines; None for a computed one."""
    found: list[str | None] = []
    joined = re.sub(r"\\\n", " ", text)
    for line in joined.splitlines():
        if line.startswith("\t"):
            continue  # a recipe line
        line = line.split("#", 1)[0].strip()
        m = _INCLUDE.fullmatch(line)
        if m is None:
            continue
        for word in m.group(1).split():
            found.append(None if re.search(r"[$*?\[%~]", word) else word)
    return found


def bind(host: Host, executable: str, args: tuple[str, ...], cwd: str) -> Binding:
    """Everything ``executable args`` run in ``cwd`` depends on (all paths canonical)."""
    binder = _Binder(host)
    binder.command(executable, list(args), cwd, 0, 0)
    binder.out.unbound.sort()
    return binder.out
