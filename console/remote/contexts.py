"""Named hosts (contexts), as ``docker context`` keeps them: ``agent-console hosts add
NAME URL | list | remove NAME | use NAME``.

They live in ``hosts.toml`` beside the console's config file (``<state dir>/hosts.toml``
with ``--state-dir``, else ``~/.config/agent-console/hosts.toml``), a file this module
writes whole (mode 0600, replaced atomically), so nothing else in the config is ever
rewritten. ``current`` is the host every command uses when none is named.

Which hosts a command talks to, first that applies: ``--host`` (repeatable), then
``AGENT_CONSOLE_HOST`` (comma-separated), then ``current``, else this machine's daemon.
Each value is ``local`` (this machine), a name from the file, an ``ssh://`` address, or
``all`` (this machine and every named host).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from console.remote.url import HostURL, HostURLError, parse_host_url

ENV_HOST = "AGENT_CONSOLE_HOST"
LOCAL = "local"
ALL = "all"
RESERVED = (LOCAL, ALL)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_HOSTS = 64


class ContextError(ValueError):
    """A host name or the hosts file is wrong; the message says how to fix it."""


@dataclass(frozen=True, slots=True)
class Target:
    """A host a command talks to: ``url`` None is this machine's own daemon."""

    name: str
    url: HostURL | None = None

    @property
    def local(self) -> bool:
        return self.url is None


LOCAL_TARGET = Target(LOCAL)


@dataclass
class Contexts:
    path: Path
    hosts: dict[str, HostURL] = field(default_factory=dict)
    current: str = ""

    def add(self, name: str, url: str) -> HostURL:
        check_name(name)
        if name in self.hosts:
            raise ContextError(
                f"a host named {name!r} exists; remove it first (agent-console hosts remove {name})"
            )
        if len(self.hosts) >= MAX_HOSTS:
            raise ContextError(f"at most {MAX_HOSTS} named hosts")
        parsed = _parse(url)
        self.hosts[name] = parsed
        return parsed

    def remove(self, name: str) -> None:
        if name not in self.hosts:
            raise ContextError(f"no host named {name!r}; `agent-console hosts list` shows them")
        del self.hosts[name]
        if self.current == name:
            self.current = ""

    def use(self, name: str) -> None:
        if name != LOCAL and name not in self.hosts:
            raise ContextError(
                f"no host named {name!r}; add it first: agent-console hosts add {name} ssh://…"
            )
        self.current = "" if name == LOCAL else name

    def save(self) -> None:
        lines = ["# agent-console's named hosts: written by `agent-console hosts`; change them with it.\n"]
        if self.current:
            lines.append(f"current = {json.dumps(self.current)}\n")
        for name in sorted(self.hosts):
            lines.append(f"\n[hosts.{json.dumps(name)}]\nurl = {json.dumps(str(self.hosts[name]))}\n")
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write("".join(lines))
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def resolve(self, values: list[str] | None = None, env: str | None = None) -> list[Target]:
        """The hosts named by ``--host`` values, else ``env`` (AGENT_CONSOLE_HOST), else
        the current context, else this machine."""
        if values:
            names = values
        elif env and env.strip():
            names = [v.strip() for v in env.split(",") if v.strip()]
        else:
            names = [self.current] if self.current else [LOCAL]
        targets: dict[str, Target] = {}
        for value in names:
            for target in self._targets(value):
                targets.setdefault(target.name, target)
        return list(targets.values())

    def _targets(self, value: str) -> list[Target]:
        if value == LOCAL:
            return [LOCAL_TARGET]
        if value == ALL:
            return [LOCAL_TARGET, *(Target(n, u) for n, u in sorted(self.hosts.items()))]
        if value.startswith("ssh:"):
            url = _parse(value)
            named = [n for n, u in self.hosts.items() if u == url]
            return [Target(named[0] if named else url.address, url)]
        if value in self.hosts:
            return [Target(value, self.hosts[value])]
        raise ContextError(
            f"no host named {value!r}: give an ssh:// address, `local`, `all`, or a name from "
            "`agent-console hosts list`"
        )


def check_name(name: str) -> None:
    if name in RESERVED:
        raise ContextError(f"{name!r} is reserved (local: this machine; all: every host)")
    if not _NAME.fullmatch(name):
        raise ContextError(f"{name!r}: a host name is letters, digits, '.', '_' and '-' (at most 64)")


def _parse(url: str) -> HostURL:
    try:
        return parse_host_url(url)
    except HostURLError as exc:
        raise ContextError(str(exc)) from None


def hosts_path(state_dir: str | os.PathLike[str] | None = None) -> Path:
    """``hosts.toml`` beside the console's config file."""
    explicit = state_dir or os.environ.get("AGENT_CONSOLE_HOME")
    if explicit:
        return Path(explicit).expanduser() / "hosts.toml"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agent-console" / "hosts.toml"


def load_contexts(path: Path) -> Contexts:
    """The named hosts in ``path``; none when it does not exist."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Contexts(path)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ContextError(f"{path}: cannot read it ({exc}); fix or remove it") from None
    unknown = set(data) - {"current", "hosts"}
    if unknown:
        raise ContextError(
            f"{path}: unknown keys {', '.join(sorted(unknown))}; it holds `current` and [hosts.NAME]"
        )
    hosts_table = data.get("hosts", {})
    if not isinstance(hosts_table, dict):
        raise ContextError(f'{path}: `hosts` is a table of [hosts.NAME] with url = "ssh://…"')
    contexts = Contexts(path)
    for name, entry in hosts_table.items():
        if not isinstance(entry, dict) or set(entry) != {"url"} or not isinstance(entry["url"], str):
            raise ContextError(f'{path}: [hosts.{name}] holds exactly url = "ssh://…"')
        try:
            check_name(name)
            contexts.hosts[name] = parse_host_url(entry["url"])
        except (ContextError, HostURLError) as exc:
            raise ContextError(f"{path}: [hosts.{name}]: {exc}") from None
    current = data.get("current", "")
    if not isinstance(current, str) or (current and current not in contexts.hosts):
        raise ContextError(f"{path}: current = {current!r} names no host in the file")
    contexts.current = current
    return contexts
