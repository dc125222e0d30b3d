"""A host's address: ``ssh://[user@]host[:port][/remote/state/dir][?option=value&…]``.

Read strictly: whatever is not understood is refused with what to write instead, so a
typo never reaches a different machine or a different daemon. The path, when given, is
the remote daemon's state directory (its ``--state-dir``); without one the remote
``agent-console`` uses its own default. Options:

- ``known_hosts=PATH``: the known_hosts file that pins the host key (default
  ``~/.ssh/known_hosts``);
- ``identity=PATH``: a private key file to offer (default: the SSH agent and the usual
  ``~/.ssh/id_*``);
- ``command=PATH``: the remote ``agent-console`` (default: ``agent-console`` on the
  remote PATH);
- ``transport=auto|stdio``: ``stdio`` never tries a ``direct-streamlocal`` channel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import parse_qsl, urlsplit

SCHEME = "ssh"
OPTIONS = ("known_hosts", "identity", "command", "transport")
TRANSPORTS = ("auto", "stdio")
MAX_URL = 2048

_HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9])?")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
# A path the remote shell gets quoted, yet kept to characters a person can read back.
_SAFE_PATH = re.compile(r"[A-Za-z0-9._/+@,=:~-]+")


class HostURLError(ValueError):
    """Not a host address this console can use; the message says what to write."""


@dataclass(frozen=True, slots=True)
class HostURL:
    host: str
    user: str = ""
    port: int = 22
    state_dir: str = ""  # the remote daemon's state dir; "" for its default
    known_hosts: str = ""
    identity: str = ""
    command: str = "agent-console"
    transport: str = "auto"

    @property
    def address(self) -> str:
        """``user@host:port`` as a person reads it (what the console labels a host by
        when it has no name)."""
        who = f"{self.user}@" if self.user else ""
        where = f"[{self.host}]" if ":" in self.host else self.host
        return f"{who}{where}" + (f":{self.port}" if self.port != 22 else "")

    def __str__(self) -> str:
        text = f"{SCHEME}://{self.address}{self.state_dir}"
        options = [
            (name, value)
            for name, value, default in (
                ("known_hosts", self.known_hosts, ""),
                ("identity", self.identity, ""),
                ("command", self.command, "agent-console"),
                ("transport", self.transport, "auto"),
            )
            if value != default
        ]
        return text + ("?" + "&".join(f"{k}={v}" for k, v in options) if options else "")


def parse_host_url(text: str) -> HostURL:
    if len(text) > MAX_URL or not text.isprintable() or any(c.isspace() for c in text):
        raise HostURLError(
            "a host address is one line without spaces or control characters, e.g. ssh://me@box"
        )
    if "%" in text:
        raise HostURLError("percent-escapes are not accepted in a host address; write the characters")
    parts = urlsplit(text)
    if parts.scheme != SCHEME:
        raise HostURLError(f"{text!r}: a host address starts with ssh://, e.g. ssh://me@box:2222")
    if parts.fragment:
        raise HostURLError(f"{text!r}: a host address has no #fragment")
    netloc = parts.netloc
    user, at, hostport = netloc.rpartition("@")
    if ":" in user:
        raise HostURLError(f"{text!r}: no password in a host address: keys come from the SSH agent or files")
    if at and not _USER.fullmatch(user):
        raise HostURLError(f"{text!r}: the user name may hold letters, digits, '.', '_' and '-'")
    try:
        host, port = parts.hostname or "", 22 if parts.port is None else parts.port
    except ValueError:
        raise HostURLError(f"{text!r}: the port is a number from 1 to 65535") from None
    if hostport.startswith("["):
        if not re.fullmatch(r"[0-9A-Fa-f:.]+", host):
            raise HostURLError(f"{text!r}: an address in [] is an IPv6 address")
    elif not _HOSTNAME.fullmatch(host):
        raise HostURLError(f"{text!r}: the host is a name or an address (letters, digits, '.', '-', '_')")
    if not 1 <= port <= 65535:
        raise HostURLError(f"{text!r}: the port is a number from 1 to 65535")
    state_dir = _remote_path(parts.path, "the path (the remote state dir)", text) if parts.path else ""
    options: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query)):
        if key not in OPTIONS:
            raise HostURLError(f"{text!r}: unknown option {key!r}; the options are {', '.join(OPTIONS)}")
        if key in options:
            raise HostURLError(f"{text!r}: option {key!r} given twice")
        options[key] = value
    transport = options.get("transport", "auto")
    if transport not in TRANSPORTS:
        raise HostURLError(f"{text!r}: transport is one of {', '.join(TRANSPORTS)}")
    command = options.get("command", "agent-console")
    if command != "agent-console":
        command = _remote_path(command, "command", text)
    return HostURL(
        host=host,
        user=user,
        port=port,
        state_dir=state_dir,
        known_hosts=_local_path(options.get("known_hosts", ""), "known_hosts", text),
        identity=_local_path(options.get("identity", ""), "identity", text),
        command=command,
        transport=transport,
    )


def _remote_path(value: str, what: str, text: str) -> str:
    """An absolute, normalised path on the remote host (quoted for its shell later)."""
    if not value.startswith("/") or not _SAFE_PATH.fullmatch(value):
        raise HostURLError(f"{text!r}: {what} is an absolute path of letters, digits and ._/+@,=:~-")
    path = PurePosixPath(value)
    if str(path) != value.rstrip("/") or ".." in path.parts or "//" in value:
        raise HostURLError(f"{text!r}: {what} must be written without '..', '.' or '//'")
    return str(path)


def _local_path(value: str, what: str, text: str) -> str:
    if not value:
        return ""
    if not value.startswith(("/", "~/")) or "\x00" in value:
        raise HostURLError(f"{text!r}: {what} is an absolute path (or ~/…) on this machine")
    return value
