"""Content binding for package managers: the manifests and config they execute.

A package manager runs code it reads from files in the project: ``npm test`` runs the
``test`` script of ``package.json`` (with ``node_modules/.bin`` first on its PATH, and
``node-options`` from ``.npmrc``), ``pip install -e .`` runs the build backend that
``pyproject.toml``/``setup.py`` name, ``cargo build`` runs ``build.rs`` and whatever
``.cargo/config.toml`` names as runner or linker, ``go generate`` runs every
``//go:generate`` line. So a fingerprint of ``npm test`` that binds no file lets an
``always`` grant cover whatever the agent writes into them next. Here each manager binds
what it reads (absent files as absent: creating ``.npmrc`` changes the fingerprint), and
follows the script it runs as ``sh -c`` text (console/contract/content.py), with the
project's own bin directories first. What it cannot follow is said in ``unbound``
(fixed reasons), which refuses a standing grant.

Managers are recognised by the canonical executable's name, including the real names
their launchers resolve to (``/usr/bin/npm`` is ``…/npm/bin/npm-cli.js``).
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any, Protocol

# The canonical names (after symlinks) of the managers' executables.
MANAGERS: dict[str, str] = {
    "npm": "npm",
    "npm-cli.js": "npm",
    "npx": "npx",
    "npx-cli.js": "npx",
    "yarn": "yarn",
    "yarnpkg": "yarn",
    "yarn.js": "yarn",
    "yarn.cjs": "yarn",
    "pnpm": "pnpm",
    "pnpm.cjs": "pnpm",
    "pnpm.js": "pnpm",
    "pnpx": "pnpx",
    "pnpx.cjs": "pnpx",
    "uv": "uv",
    "poetry": "poetry",
    "cargo": "cargo",
    "go": "go",
    "rustup": "rustup",
}
_PIP = re.compile(r"pip[0-9.]*")

NPX_FETCH = "content not bound: the package a command runs is resolved or downloaded at run time"
INSTALL_SCRIPTS = "content not bound: install scripts of packages fetched at run time"
NPM_WORKSPACES = "content not bound: scripts of workspace packages chosen at run time"
SCRIPT_UNKNOWN = "content not bound: a package manager runs a script or command it resolves at run time"
VENV_COMMAND = "content not bound: a command resolved in a virtual environment at run time"
BUILD_BACKEND = "content not bound: an in-tree build backend (backend-path)"
CARGO_PATHS = "content not bound: build scripts of path dependencies and workspace members"
RUSTUP_PROXY = "content not bound: a rustup proxy runs the toolchain it picks at run time"
GO_PATTERN = "content not bound: go generate over packages found at run time"
MANIFEST_UNREADABLE = "content not bound: a manifest is too large or not valid to read"

MAX_ANCESTORS = 64


class Binder(Protocol):
    """What the content binder offers (console/contract/content.py ``_Binder``)."""

    bin_dirs: tuple[str, ...]

    def file(self, path: str, cwd: str) -> tuple[str, str | None]: ...
    def text(self, path: str) -> str | None: ...
    def note(self, reason: str) -> None: ...
    def exists(self, path: str) -> str | None: ...
    def shell_text(self, text: str, cwd: str, depth: int) -> None: ...
    def run(self, exe: str, args: list[str], cwd: str, depth: int) -> None: ...
    def listing(self, directory: str) -> list[str]: ...


def manager_of(name: str) -> str | None:
    """The manager an executable is, by its canonical base name."""
    found = MANAGERS.get(name)
    if found is None and name.startswith("pip") and _PIP.fullmatch(name):
        return "pip"
    return found


def bind_manager(b: Binder, manager: str, args: list[str], cwd: str, depth: int) -> None:
    if manager == "rustup":
        b.note(RUSTUP_PROXY)
    elif manager in ("npm", "npx", "yarn", "pnpm", "pnpx"):
        _node(b, manager, args, cwd, depth)
    elif manager == "pip":
        pip(b, args, cwd)
    elif manager in ("uv", "poetry"):
        _python_project(b, manager, args, cwd, depth)
    elif manager == "cargo":
        _cargo(b, args, cwd)
    elif manager == "go":
        _go(b, args, cwd, depth)


# ----------------------------------------------------------------------------- helpers


def _project_root(b: Binder, cwd: str, marker: str) -> str:
    """The nearest directory from ``cwd`` up that holds ``marker``; ``cwd`` when none does."""
    here = cwd
    for _ in range(MAX_ANCESTORS):
        if b.exists(posixpath.join(here, marker)) is not None:
            return here
        parent = posixpath.dirname(here)
        if parent == here:
            break
        here = parent
    return cwd


def _words(args: list[str], with_value: frozenset[str]) -> tuple[list[str], dict[str, str]]:
    """Positional words and the values of options (``--opt=v``, ``--opt v``, ``-o v``)."""
    words: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            words += args[i + 1 :]
            break
        if arg.startswith("-") and len(arg) > 1:
            key, eq, value = arg.partition("=")
            if key in with_value and not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            options[key] = value
            i += 1
            continue
        words.append(arg)
        i += 1
    return words, options


# ----------------------------------------------------------------------------- node

_NODE_VALUE = frozenset(
    {
        "--prefix",
        "-C",
        "--dir",
        "--cwd",
        "-w",
        "--workspace",
        "--filter",
        "-F",
        "--package",
        "-p",
        "-c",
        "--call",
    }
)
_RUN = {"run", "run-script", "rum", "urn"}
_TEST = {"test", "t", "tst"}
_EXEC = {"exec", "x"}
_INSTALL = {"install", "i", "ci", "add", "isntall", "in", "ins", "inst", "insta", "instal", "update", "up"}


def _node(b: Binder, manager: str, args: list[str], cwd: str, depth: int) -> None:
    words, options = _words(args, _NODE_VALUE)
    start = options.get("--prefix") or options.get("-C") or options.get("--dir") or options.get("--cwd")
    base = posixpath.normpath(posixpath.join(cwd, start)) if start else cwd
    root = _project_root(b, base, "package.json")
    manifest, _ = b.file("package.json", root)
    for name in (".npmrc", ".pnpmfile.cjs", ".yarnrc.yml", ".yarnrc", ".pnp.cjs", ".pnp.loader.mjs"):
        b.file(name, root)  # absent ones too: creating one changes what runs
    for name in (
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "pnpm-workspace.yaml",
    ):
        if b.exists(posixpath.join(root, name)) is not None:
            b.file(name, root)
    _yarn_path(b, root)
    if any(
        k in options for k in ("-w", "--workspace", "--workspaces", "--filter", "-F", "-r", "--recursive")
    ):
        b.note(NPM_WORKSPACES)
    scripts = _scripts(b, manifest)
    bin_dir = posixpath.join(root, "node_modules", ".bin")
    sub, rest = (words[0], words[1:]) if words else ("", [])
    if (
        manager in ("npx", "pnpx")
        or (manager == "pnpm" and sub == "dlx")
        or (manager == "yarn" and sub == "dlx")
    ):
        command = words if manager in ("npx", "pnpx") else rest
        _local_bin(b, command, cwd, bin_dir, depth)
        return
    if sub in _EXEC:
        _local_bin(b, rest, cwd, bin_dir, depth)
        return
    if not sub or sub in _INSTALL:
        for name in ("preinstall", "install", "postinstall", "prepare"):
            _script(b, scripts, name, root, bin_dir, depth)
        if "--ignore-scripts" not in options:
            b.note(INSTALL_SCRIPTS)
        return
    if sub in _RUN:
        if not rest:
            return  # lists the scripts
        sub = rest[0]
    elif sub in _TEST:
        sub = "test"
    elif sub in ("start", "stop", "restart"):
        pass
    elif manager != "yarn":
        return  # a builtin (npm ls, pnpm why, …) runs no project script
    if scripts is None:
        return
    if sub == "start" and "start" not in scripts:
        b.file("server.js", root)  # npm start runs `node server.js` then
    if manager != "yarn" or sub in scripts:
        for name in (f"pre{sub}", sub, f"post{sub}"):
            _script(b, scripts, name, root, bin_dir, depth)
    elif manager == "yarn":
        _local_bin(b, [sub, *rest[1:]], cwd, bin_dir, depth)


def _scripts(b: Binder, manifest: str) -> dict[str, str] | None:
    text = b.text(manifest)
    if text is None:
        return None
    try:
        data: Any = json.loads(text)
    except ValueError:
        b.note(MANIFEST_UNREADABLE)
        return None
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return {}
    return {str(k): v for k, v in scripts.items() if isinstance(v, str)}


def _script(
    b: Binder, scripts: dict[str, str] | None, name: str, root: str, bin_dir: str, depth: int
) -> None:
    if not scripts or name not in scripts:
        return
    saved = b.bin_dirs
    b.bin_dirs = (bin_dir,)
    try:
        b.shell_text(scripts[name], root, depth + 1)
    finally:
        b.bin_dirs = saved


def _local_bin(b: Binder, command: list[str], cwd: str, bin_dir: str, depth: int) -> None:
    """``npx X``: X from the project's ``node_modules/.bin``, else fetched (unbound)."""
    words = [w for w in command if not w.startswith("-")]
    if not words:
        return
    word = words[0]
    target = posixpath.join(bin_dir, word) if "/" not in word else posixpath.join(cwd, word)
    found = b.exists(target)
    if found != "exec":
        b.file(target, "/")  # absent now: installing it changes the fingerprint
        b.note(NPX_FETCH)
        return
    real, _ = b.file(target, "/")
    b.run(real, command[command.index(word) + 1 :], cwd, depth + 1)


_YARN_PATH = re.compile(r"^yarnPath:\s*['\"]?([^'\"\s#]+)", re.M)


def _yarn_path(b: Binder, root: str) -> None:
    """Yarn runs the JavaScript file ``.yarnrc.yml``'s ``yarnPath`` names."""
    path = posixpath.join(root, ".yarnrc.yml")
    if b.exists(path) is None:
        return
    text = b.text(b.file(".yarnrc.yml", root)[0])
    found = _YARN_PATH.search(text or "")
    if found:
        b.file(found.group(1), root)


# ----------------------------------------------------------------------------- python


def pip(b: Binder, args: list[str], cwd: str) -> None:
    """``pip install [-e] DIR`` runs DIR's build backend; ``-r FILE`` reads FILE."""
    words, options = _words(
        args, frozenset({"-e", "--editable", "-r", "--requirement", "-c", "--constraint", "-t"})
    )
    if not words or words[0] != "install":
        return
    targets = [w for w in words[1:] if w.startswith((".", "/")) or w.endswith("/")]
    targets += [options[k] for k in ("-e", "--editable") if k in options]
    for key in ("-r", "--requirement", "-c", "--constraint"):
        if key in options:
            b.file(options[key], cwd)
    for target in targets:
        directory = posixpath.normpath(posixpath.join(cwd, target))
        if b.exists(directory) == "dir":
            _build_files(b, directory)


def _build_files(b: Binder, directory: str) -> None:
    pyproject, _ = b.file("pyproject.toml", directory)
    b.file("setup.py", directory)
    b.file("setup.cfg", directory)
    text = b.text(pyproject)
    if text is not None and re.search(r"^\s*backend-path\s*=", text, re.M):
        b.note(BUILD_BACKEND)


_UV_VALUE = frozenset(
    {
        "--directory",
        "--project",
        "--python",
        "-p",
        "--with",
        "--with-requirements",
        "--group",
        "--extra",
        "--package",
    }
)


def _python_project(b: Binder, manager: str, args: list[str], cwd: str, depth: int) -> None:
    """``uv run|sync``, ``poetry run|install``: the project's manifests and lock (the
    project is built first: its build backend runs), and the command ``run`` starts."""
    options: dict[str, str] = {}
    i = _options(args, 0, options)
    sub = args[i] if i < len(args) else ""
    command = args[_options(args, i + 1, options) :]
    start = options.get("--directory") or options.get("--project")
    base = posixpath.normpath(posixpath.join(cwd, start)) if start else cwd
    root = _project_root(b, base, "pyproject.toml")
    _build_files(b, root)
    b.file("uv.lock" if manager == "uv" else "poetry.lock", root)
    for name in (".python-version", "uv.toml", "poetry.toml"):
        if b.exists(posixpath.join(root, name)) is not None:
            b.file(name, root)
    if sub != "run" or not command:
        return
    word = command[0]
    if word.endswith(".py") or "/" in word:
        b.file(word, cwd)  # the script `uv run` hands to the project's python
        return
    venv = posixpath.join(root, ".venv", "bin", word)
    if b.exists(venv) == "exec":
        real, _ = b.file(venv, "/")
        b.run(real, command[1:], cwd, depth + 1)
        return
    b.note(VENV_COMMAND)


def _options(args: list[str], i: int, into: dict[str, str]) -> int:
    """Read the options from ``args[i]`` on (into ``into``); the index after them."""
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        key, eq, value = args[i].partition("=")
        if key in _UV_VALUE and not eq and i + 1 < len(args):
            value = args[i + 1]
            i += 1
        into[key] = value
        i += 1
    return i + 1 if i < len(args) and args[i] == "--" else i


# ----------------------------------------------------------------------------- rust and go

_CARGO_BUILDS = {"build", "b", "test", "t", "run", "r", "bench", "check", "c", "clippy", "doc", "install"}


def _cargo(b: Binder, args: list[str], cwd: str) -> None:
    words, options = _words(
        args, frozenset({"--manifest-path", "-p", "--package", "--bin", "--example", "--target"})
    )
    if not words or words[0] not in _CARGO_BUILDS:
        return
    manifest_path = options.get("--manifest-path")
    root = (
        posixpath.dirname(posixpath.normpath(posixpath.join(cwd, manifest_path)))
        if manifest_path
        else _project_root(b, cwd, "Cargo.toml")
    )
    manifest, _ = b.file("Cargo.toml", root)
    text = b.text(manifest) or ""
    build = re.search(r'^\s*build\s*=\s*"([^"]+)"', text, re.M)
    b.file(build.group(1) if build else "build.rs", root)
    if re.search(r"^\s*\[workspace\]|\bpath\s*=", text, re.M):
        b.note(CARGO_PATHS)
    parent = posixpath.dirname(root)
    if parent != root:
        top = _project_root(b, parent, "Cargo.toml")
        if b.exists(posixpath.join(top, "Cargo.toml")) not in (None, "dir"):
            b.file("Cargo.toml", top)  # the workspace's root manifest
            b.note(CARGO_PATHS)
    for name in ("Cargo.lock", "rust-toolchain", "rust-toolchain.toml"):
        b.file(name, root)
    # .cargo/config.toml in the cwd and every directory above it (runner, linker, rustflags).
    here = cwd
    for _ in range(MAX_ANCESTORS):
        for name in (".cargo/config.toml", ".cargo/config"):
            if here == cwd or b.exists(posixpath.join(here, name)) is not None:
                b.file(name, here)
        parent = posixpath.dirname(here)
        if parent == here:
            break
        here = parent


_GO_GENERATE = re.compile(r"^//go:generate[ \t]+(.+)$", re.M)


def _go(b: Binder, args: list[str], cwd: str, depth: int) -> None:
    words, _ = _words(
        args, frozenset({"-run", "-o", "-C", "-tags", "-ldflags", "-gcflags", "-exec", "-toolexec"})
    )
    if not words or words[0] not in ("build", "test", "run", "generate", "vet", "install"):
        return
    root = _project_root(b, cwd, "go.mod")
    b.file("go.mod", root)
    for name in ("go.sum", "go.work", "go.work.sum"):
        if b.exists(posixpath.join(root, name)) is not None:
            b.file(name, root)
    if any(a in ("-exec", "-toolexec") or a.startswith(("-exec=", "-toolexec=")) for a in args):
        b.note(SCRIPT_UNKNOWN)
    rest = words[1:]
    if words[0] == "run":
        for word in rest:
            if not word.endswith(".go"):
                break
            b.file(word, cwd)
    if words[0] != "generate":
        return
    packages = rest or ["."]
    for package in packages:
        if "..." in package or not package.startswith((".", "/")):
            b.note(GO_PATTERN)
            continue
        _generate_lines(b, posixpath.normpath(posixpath.join(cwd, package)), depth)


def _generate_lines(b: Binder, directory: str, depth: int) -> None:
    for name in b.listing(directory):
        if not name.endswith(".go"):
            continue
        real, digest = b.file(name, directory)
        text = b.text(real) if digest is not None else None
        if text is None or "//go:generate" not in text:
            continue
        for line in _GO_GENERATE.findall(text):
            b.shell_text(line, directory, depth + 1)
