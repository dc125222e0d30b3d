"""What every agent's ``hook install`` and ``hook doctor`` share: reading and writing the
agent's configuration atomically, the hook's command line, running it as the agent would,
and the doctor's findings.

The command line is the same for every agent: the absolute path of the Python that runs
agent-console, isolated (``-I``: no ``PYTHONPATH``, no cwd on ``sys.path``, so a
``console/`` folder in the project cannot replace the hook), ``--state-dir`` pinned, a
``--timeout`` below the agent's own hook timeout, and a shell tail that turns any exit of
a broken install (127 not found, 126 not executable, 1 a crash on import) into exit 2
with a reason on stderr — the one answer every supported agent takes as a block.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The agent's own timeout for the hook is the hook's --timeout plus this margin: the
# hook ends by --timeout + 1 s whatever the daemon does, so the agent never kills it first.
MARGIN_S = 10
BLOCK_TAIL = "|| { echo 'agent-console: the hook could not run, so the call is blocked' >&2; exit 2; }"


class SettingsError(ValueError):
    """A configuration file that cannot be read or changed; the message names it."""


@dataclass(frozen=True, slots=True)
class Check:
    """One finding of ``hook doctor``: ``level`` is ok, note, risk (the agent could run a
    tool unsupervised), problem (fail-closed, but nothing is allowed) or open (a fail-open
    mode of the agent that no configuration can close; the message names the safe way)."""

    level: str
    message: str


def seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def hook_command(agent: str, state_dir: Path, timeout_s: float, python: str | None = None) -> str:
    python = python or sys.executable
    return (
        f"{shlex.quote(python)} -I -m console hook {agent} "
        f"--state-dir {shlex.quote(str(state_dir))} --timeout {seconds(timeout_s)} {BLOCK_TAIL}"
    )


def agent_timeout_for(timeout_s: float) -> int:
    """The agent's hook timeout (seconds) for a hook run with ``--timeout timeout_s``."""
    return math.ceil(timeout_s) + MARGIN_S


def is_ours(command: Any, agent: str) -> bool:
    return isinstance(command, str) and f"hook {agent}" in command


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object at ``path`` ({} when there is no file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}); fix it first"
        ) from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} does not hold a JSON object")
    return data


def write_atomic(path: Path, text: str) -> Path | None:
    """Write atomically (a temporary file renamed over it); returns the backup of the old file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".agent-console.bak")
        backup.write_bytes(path.read_bytes())
        mode = path.stat().st_mode & 0o777
    else:
        mode = 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return backup


def write_json(path: Path, data: dict[str, Any]) -> Path | None:
    return write_atomic(path, json.dumps(data, indent=2) + "\n")


@dataclass(frozen=True, slots=True)
class Ran:
    """One run of a hook command: exit code (None: killed at the timeout), output, time."""

    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float


def run_command(
    command: str, stdin: str, timeout_s: float, env: dict[str, str] | None = None, cwd: str | None = None
) -> Ran:
    """Run ``command`` through ``sh -c`` with ``stdin``, as the agents do."""
    started = time.monotonic()
    try:
        proc = subprocess.run(
            ["/bin/sh", "-c", command],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired:
        return Ran(None, "", "", time.monotonic() - started)
    return Ran(proc.returncode, proc.stdout, proc.stderr[-2000:], time.monotonic() - started)


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    executable: str
    state_dir: str | None
    timeout_s: float | None
    blocks_on_failure: bool
    isolated: bool


def parse_command(command: str) -> ParsedCommand:
    """The parts of an installed hook command the doctor checks."""
    blocks = bool(re.search(r"\|\|\s*exit\s+2\s*;?\s*$", command))
    main = re.split(r"\|\||;|&&|\|", command, maxsplit=1)[0]
    try:
        words = shlex.split(main)
    except ValueError:
        words = main.split()
    state_dir = timeout = None
    for i, word in enumerate(words):
        if word == "--state-dir" and i + 1 < len(words):
            state_dir = words[i + 1]
        if word == "--timeout" and i + 1 < len(words):
            try:
                timeout = float(words[i + 1])
            except ValueError:
                timeout = None
    return ParsedCommand(words[0] if words else "", state_dir, timeout, blocks, "-I" in words[1:3])


def command_checks(where: str, command: str, agent: str) -> list[Check]:
    """Risks in the hook's command line itself (path, isolation, the blocking tail)."""
    out: list[Check] = []
    cmd = parse_command(command)
    if not cmd.executable.startswith("/"):
        out.append(
            Check(
                "risk",
                f"{where}: the hook runs {cmd.executable!r} through PATH; if it is not found the agent may "
                f"run the tool. Reinstall: agent-console hook install {agent}",
            )
        )
    elif not os.access(cmd.executable, os.X_OK):
        out.append(Check("risk", f"{where}: {cmd.executable} is missing or not executable"))
    if not command.rstrip().endswith("exit 2; }") and not cmd.blocks_on_failure:
        out.append(
            Check(
                "risk",
                f"{where}: the command does not end with the blocking tail ({BLOCK_TAIL}): a missing or broken "
                "install would not block",
            )
        )
    if cmd.executable.rsplit("/", 1)[-1].startswith("python") and not cmd.isolated:
        out.append(Check("risk", f"{where}: python runs without -I: PYTHONPATH could replace the hook"))
    if cmd.state_dir is None:
        out.append(Check("note", f"{where}: no --state-dir: the hook follows the agent's AGENT_CONSOLE_HOME"))
    return out


def timeout_checks(where: str, command: str, agent_timeout_s: float | None, agent_name: str) -> list[Check]:
    hook_timeout = parse_command(command).timeout_s or 55.0
    if agent_timeout_s is None:
        return []
    if agent_timeout_s <= hook_timeout + 1:
        return [
            Check(
                "risk",
                f"{where}: {agent_name}'s hook timeout ({seconds(agent_timeout_s)} s) is not above the hook's "
                f"--timeout ({seconds(hook_timeout)} s) + 1 s: {agent_name} would kill the hook and run the tool",
            )
        ]
    return []


def merge_group(
    settings: dict[str, Any], event: str, group: dict[str, Any], agent: str, what: str
) -> dict[str, Any]:
    """``settings`` with ``group`` (``{"matcher", "hooks": [...]}``) under ``hooks.<event>``,
    in place of any earlier agent-console hook of ``agent``; everything else is kept."""
    out: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f"{what}'s hooks is not an object")
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise SettingsError(f"{what}'s hooks.{event} is not a list")
    kept = []
    for old in groups:
        if isinstance(old, dict) and isinstance(old.get("hooks"), list):
            rest = [h for h in old["hooks"] if not (isinstance(h, dict) and is_ours(h.get("command"), agent))]
            if not rest and old["hooks"]:
                continue
            old = {**old, "hooks": rest}
        kept.append(old)
    kept.append(group)
    hooks[event] = kept
    return out


def installed_in_groups(settings: dict[str, Any], event: str, agent: str) -> list[tuple[str, dict[str, Any]]]:
    """(matcher, hook) of each agent-console hook of ``agent`` under ``hooks.<event>``."""
    found = []
    hooks = settings.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, dict):
            continue
        for hook in group.get("hooks") or []:
            if isinstance(hook, dict) and is_ours(hook.get("command"), agent):
                found.append((str(group.get("matcher", "") or ""), hook))
    return found


def matches(matcher: str, tool: str) -> bool:
    """A hook matcher: empty or ``*`` is every tool, else a regular expression."""
    if matcher in ("", "*"):
        return True
    try:
        return re.fullmatch(matcher, tool) is not None
    except re.error:
        return matcher == tool


def source_checkout(python: str) -> Path | None:
    """The source checkout ``python`` runs agent-console from (an editable install, a
    clone's ``.venv``), or None when it runs an installed copy (a wheel: pipx, uv tool)."""
    try:
        found = subprocess.run(
            [python, "-I", "-c", "import console; print(console.__file__)"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if found.returncode != 0 or not found.stdout.strip():
        return None
    package = Path(found.stdout.strip()).parent
    if any(part in ("site-packages", "dist-packages") for part in package.parts):
        return None
    root = package.parent
    return root if (root / "pyproject.toml").is_file() else None


def checkout_warning(who: str, root: Path) -> str:
    return (
        f"{who} runs agent-console from a source checkout ({root}): moving or deleting it "
        "blocks every tool call. For daily use install it (pipx install agent-console, or uv tool "
        "install agent-console, from a wheel) and run hook install again with that copy"
    )
