"""Protected-path changes that are noise: reported quietly, never a tripwire.

Editors leave swap, backup and lock files beside the file they edit (``.env.swp``,
``.env~``, ``#.env#``), write a temporary and rename it over the file on save
(``.env.tmp.1234``), and vim probes a directory with a file named ``4913``; ``git init``
writes ``*.sample`` hooks, which git never runs. Under a protected pattern each would be
a loud event and, with the tripwire on, a pause: the operator would learn to ignore
them. ``quiet_reason`` names the reason such a change is quiet (recorded and listed,
flagged ``quiet``), or None for a change that stays loud.

Only the *name* decides, and only names no tool runs or reads as the protected file:
git runs a hook by its exact name, so ``pre-commit.sample`` or ``pre-commit~`` never run.
"""

from __future__ import annotations

import re

# vim: .name.swp/.swo/.swn…, and .swx, the name it probes with (and name.swp too)
_SWAP = re.compile(r".+\.sw[a-z]\Z", re.DOTALL)
# an atomic-save temporary: name.tmp, name.tmp.1234, name.tmp-ab12, name.12345.tmp,
# JetBrains' name___jb_tmp___ / name___jb_old___
_TEMP = re.compile(
    r"(?:.+\.tmp(?:[.-][0-9A-Za-z]{1,16})?|.+\.[0-9]{2,10}\.tmp|.+___jb_(?:tmp|old)___)\Z", re.DOTALL
)


def _vim_probe(name: str) -> bool:
    # vim writes 4913 (then 5036, 5159, … when taken) to test whether it may create files.
    if not name.isdigit() or not name.isascii() or len(name) > 6:
        return False
    n = int(name)
    return n >= 4913 and (n - 4913) % 123 == 0


def quiet_reason(rel: str, *, is_dir: bool = False) -> str | None:
    """Why the change of ``rel`` (relative to the root) is noise, or None."""
    if is_dir:
        return None
    name = rel.rpartition("/")[2]
    if not name:
        return None
    if name.endswith(".sample") and len(name) > len(".sample"):
        return "git sample hook (never run)"
    if name.endswith("~") and len(name) > 1:
        return "editor backup file"
    if len(name) > 2 and name.startswith("#") and name.endswith("#"):
        return "editor autosave file"
    if name.startswith(".#") and len(name) > 2:
        return "editor lock file"
    if _SWAP.match(name):
        return "editor swap file"
    if _TEMP.match(name):
        return "editor atomic-save temporary"
    if _vim_probe(name):
        return "vim write probe"
    return None


# The keys `git init` writes (and nothing else): a config made only of these runs nothing.
_INIT_KEYS = {
    "core": {"repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase", "precomposeunicode", "symlinks"},
    "extensions": {"objectformat"},
}  # fmt: skip
_SECTION = re.compile(r"\[([a-z]+)\]\Z")
_ENTRY = re.compile(r"([a-z]+)\s*=\s*([a-z0-9]+)\Z")


def is_init_config(path: str, limit: int = 4096) -> bool:
    """``path`` holds what `git init` writes to a new repository's config, nothing more."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return False
    if len(data) > limit:
        return False
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return False
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _SECTION.match(line)
        if m:
            section = m.group(1)
            if section not in _INIT_KEYS:
                return False
            continue
        m = _ENTRY.match(line)
        if m is None or section is None or m.group(1) not in _INIT_KEYS[section]:
            return False
    return section is not None
