"""The paths a repository's git config makes git run or read: protected with it.

``core.hooksPath = .githooks`` moves the hooks out of ``.git/hooks`` into an ordinary
directory of the workspace, and ``[include] path = ../shared.gitconfig`` makes a
workspace file part of the config. Protecting ``.git/config`` is worth little if what it
points at stays writable, so when a command is prepared the repository's config (and
the operator's global one) is read — bounded: a few files of at most 256 KiB — and the
paths it names are protected when they lie in the workspace.

A deliberately small reader of git's config syntax: sections (``[core]``,
``[includeIf "gitdir:…"]``), ``key = value`` lines, quotes, comments. What it cannot
read it skips; the protected set's own entries (``.git/config`` …) do not depend on it.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping

MAX_BYTES = 256 * 1024
MAX_FILES = 8


def _read(path: str, limit: int = MAX_BYTES) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not os.path.isfile(f"/proc/self/fd/{fd}"):
            return None
        data = os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace")


def _value(raw: str) -> str:
    """A config value: quotes removed, escapes read, a trailing comment dropped."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == '"':
            quoted = not quoted
        elif c == "\\" and i + 1 < len(raw):
            i += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i], raw[i]))
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()


def parse(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) for every ``key = value``; section and key lowercased,
    subsections kept (``includeif.gitdir:~/x/``)."""
    out: list[tuple[str, str, str]] = []
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            end = line.find("]")
            if end < 0:
                continue
            head = line[1:end].strip()
            name, _, sub = head.partition(" ")
            section = name.lower() + ("." + sub.strip().strip('"') if sub else "")
            line = line[end + 1 :].strip()
            if not line:
                continue
        key, eq, raw = line.partition("=")
        if not eq:
            continue
        out.append((section, key.strip().lower(), _value(raw)))
    return out


def _gitdir(workspace_root: str) -> str | None:
    dot = posixpath.join(workspace_root, ".git")
    if os.path.isdir(dot):
        return dot
    text = _read(dot, 4096)
    if text and text.startswith("gitdir:"):
        target = text[len("gitdir:") :].strip()
        return posixpath.normpath(posixpath.join(workspace_root, target))
    return None


def _expand(value: str, home: str) -> str:
    if value == "~" or value.startswith("~/"):
        return home + value[1:]
    return value


def config_targets(workspace_root: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """Canonical paths that the git config of ``workspace_root`` names as a hooks
    directory or an included file (whether or not they exist)."""
    home = env.get("HOME", "")
    files: list[str] = []
    gitdir = _gitdir(workspace_root)
    if gitdir is not None:
        files += [posixpath.join(gitdir, "config"), posixpath.join(gitdir, "config.worktree")]
        common = _read(posixpath.join(gitdir, "commondir"), 4096)
        if common and common.strip():
            files.append(posixpath.join(posixpath.normpath(posixpath.join(gitdir, common.strip())), "config"))
    if home.startswith("/"):
        xdg = env.get("XDG_CONFIG_HOME") or posixpath.join(home, ".config")
        files += [posixpath.join(home, ".gitconfig"), posixpath.join(xdg, "git", "config")]
    targets: list[str] = []
    seen: set[str] = set()
    while files and len(seen) < MAX_FILES:
        path = files.pop(0)
        if path in seen:
            continue
        seen.add(path)
        text = _read(path)
        if text is None:
            continue
        for section, key, value in parse(text):
            if not value:
                continue
            value = _expand(value, home)
            if section == "core" and key == "hookspath":
                targets.append(posixpath.join(workspace_root, value))
            elif key == "path" and (section == "include" or section.startswith("includeif.")):
                included = posixpath.join(posixpath.dirname(path), value)
                targets.append(included)
                files.append(posixpath.normpath(included))
    root = workspace_root.rstrip("/") + "/"
    out: list[str] = []
    for target in targets:
        real = os.path.realpath(target)
        if real.startswith(root) and real not in out:
            out.append(real)
    return tuple(out)
