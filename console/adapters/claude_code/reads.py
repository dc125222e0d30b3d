"""Claude Code's reading tools (Read, Glob, Grep, NotebookRead, LS), decided in the hook.

Reading needs no sandbox, so the hook answers these itself, without the daemon: it
denies a call that reaches

- agent-console's own state or runtime directory (the operator token, the history, the
  sockets, the ticket files);
- the secret set (console/policy/secrets.py): keys, cloud and registry credentials,
  agents' login tokens, ``/etc/shadow``, ``.env`` files and key files by name — the
  same set the sandbox hides from commands;
- another process's command line, environment, descriptors or memory: anything under
  ``/proc/PID`` (``self`` included), and a search over ``/proc`` (that is where a
  ticket's id, an identity secret or an API key of another agent would be read);

and leaves everything else to Claude Code. A search (Glob, Grep) is judged by where it
can reach: one whose root holds a secret or the state directory is denied unless (Glob)
its pattern cannot lead into one; ``/`` holds all of them.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import posixpath
import pwd
import re
from typing import Any

from console.adapters.calls import Refused, check_private, private_roots
from console.policy import secrets

SEARCH_TOOLS = ("Glob", "Grep", "LS")
_PROC_PROCESS = re.compile(r"/proc/(?:[0-9]+|self|thread-self)(?:/|$)")


def _real(path: str) -> str:
    return os.path.realpath(path)


def homes(env: dict[str, str]) -> tuple[str, ...]:
    """Every home directory the hook knows of (each as named and as resolved), except ``/``."""
    found: set[str] = set()
    with contextlib.suppress(OSError):
        found.update(entry.pw_dir for entry in pwd.getpwall())
    for home in (env.get("HOME", ""), os.path.expanduser("~")):
        found.add(home)
    out = {os.path.normpath(h) for h in found if h.startswith("/")}
    out |= {_real(h) for h in out}
    return tuple(sorted(h for h in out if h != "/"))


def _check_proc(path: str) -> None:
    for candidate in (path, _real(path)):
        if _PROC_PROCESS.match(candidate):
            raise Refused(
                f"{path} is another process's command line, environment, descriptors or memory "
                "(under /proc): an agent may not read them"
            )


def _check_secret(path: str, known: tuple[str, ...]) -> None:
    for candidate in (path, _real(path)):
        found = secrets.secret_at(candidate, known)
        if found is not None:
            raise Refused(
                f"{path} is a secret ({found.pattern}: {found.why}); ask the operator to share what you need"
            )


def _split_glob(pattern: str) -> tuple[str, list[str]]:
    """The literal directory a glob starts from, and its remaining segments."""
    parts = pattern.split("/")
    literal: list[str] = []
    for i, part in enumerate(parts):
        if re.search(r"[*?\[{]", part):
            return "/".join(literal) or "/", parts[i:]
        literal.append(part)
    return "/".join(literal[:-1]) or "/", literal[-1:]


def _could_reach(segments: list[str], base: str, target: str) -> bool:
    """Whether a glob of ``segments`` from ``base`` can name ``target`` or a path inside it."""
    if any("**" in s for s in segments):
        return True
    rel = target[len(base.rstrip("/")) + 1 :].split("/") if target != base else []
    for seg, part in zip(segments, rel, strict=False):
        if not (fnmatch.fnmatchcase(part, seg) or fnmatch.fnmatchcase(seg, part)):
            return False
    return True


def _check_search(
    tool: str, root: str, tool_input: dict[str, Any], known: tuple[str, ...], state_dir: str | None
) -> None:
    real = _real(root)
    for private in private_roots(state_dir):
        if secrets.within(private, real) or secrets.within(private, root):
            raise Refused(
                f"a {tool} over {root} would reach agent-console's private state ({private}); narrow the path"
            )
    if tool == "LS":
        return  # names only
    _check_named(tool, tool_input, root, known)
    if secrets.within("/proc", real):
        raise Refused(f"a {tool} over {root} would read other processes (/proc); narrow the path")
    reached = secrets.secrets_under(real, known) + secrets.secrets_under(root, known)
    if not reached:
        return
    if tool == "Grep":
        raise Refused(
            f"a Grep over {root} would read secrets ({reached[0]}, …): narrow the path to the project"
        )
    pattern = tool_input.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        return
    joined = pattern if pattern.startswith("/") else posixpath.join(root, pattern)
    base, segments = _split_glob(posixpath.normpath(joined))
    for target in reached:
        if secrets.within(target, base) and _could_reach(segments, base, target):
            raise Refused(
                f"a Glob of {pattern} over {root} would reach secrets ({target}): narrow the pattern"
            )


def _check_named(tool: str, tool_input: dict[str, Any], root: str, known: tuple[str, ...]) -> None:
    """A search whose name filter is aimed at secret names (``**/id_rsa*``, ``glob: .env``):
    its wildcards filled in, the name it selects is one of the set's names."""
    pattern = tool_input.get("pattern" if tool == "Glob" else "glob")
    if not isinstance(pattern, str) or not pattern:
        return
    last = pattern.rstrip("/").rsplit("/", 1)[-1]
    name = re.sub(r"[*?]", "x", last)
    found = secrets.secret_at(posixpath.join(root, name), ())
    if found is not None:
        raise Refused(f"a {tool} for {pattern} selects secrets ({found.pattern}: {found.why}); narrow it")


def check_read(
    tool: str, tool_input: dict[str, Any], cwd: str, env: dict[str, str], state_dir: str | None
) -> None:
    """Refuse a Read/Glob/Grep/LS that reaches private state, a secret or another process."""
    targets: list[str] = []
    for key in ("file_path", "notebook_path", "path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            targets.append(value)
    if tool in SEARCH_TOOLS and not targets:
        targets.append(cwd)  # they search the cwd when no path is given
    known = homes(env)
    pattern = tool_input.get("pattern") if tool == "Glob" else None
    if isinstance(pattern, str) and pattern.startswith("/"):
        _check_glob_root(pattern, tool_input, known, state_dir)
    for target in targets:
        path = os.path.normpath(target if target.startswith("/") else os.path.join(cwd, target))
        check_private(path, state_dir)
        _check_proc(path)
        _check_secret(path, known)
        if tool in SEARCH_TOOLS:
            _check_search(tool, path, tool_input, known, state_dir)


def _check_glob_root(
    pattern: str, tool_input: dict[str, Any], known: tuple[str, ...], state_dir: str | None
) -> None:
    """An absolute Glob pattern searches from its own literal directory."""
    base, _ = _split_glob(posixpath.normpath(pattern))
    if _PROC_PROCESS.match(pattern) or pattern.startswith("/proc/"):
        raise Refused(f"a Glob of {pattern} would read other processes (/proc); an agent may not")
    check_private(base, state_dir)
    _check_secret(base, known)
    _check_search("Glob", base, tool_input, known, state_dir)
