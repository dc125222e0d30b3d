"""Network by domain: the policy's `network` table and the rules the egress broker applies.

A sandboxed program reaches the network only through the daemon's egress broker
(console/daemon/egress/), which asks this module about every connection:

- the host name is checked against ``deny`` (always wins), then ``allow``; a name on
  neither list is the operator's to decide, as an approval item (per domain: once, for
  the agent's session, or always);
- the port must be one of ``ports`` (443 and 80 unless the policy says otherwise), or
  named with the host in an allow entry (``"db.example.com:5432"``);
- the address the daemon resolved must not be loopback, private, link-local, carrier
  NAT, multicast, reserved or a cloud metadata address, unless ``private`` names the
  host or the address: a name in the public list that resolves to 127.0.0.1 is refused
  however it is allowed.

Patterns: ``pypi.org`` (that name), ``*.npmjs.org`` (any name below it, not itself),
``*`` (every name), each optionally with ``:PORT``; in ``private`` also an address or a
network (``10.1.0.0/16``). Names are compared in lower case without a final dot;
a name that is not plain ASCII letters, digits, dots and dashes (IDNA must be given in
its ``xn--`` form) is refused before anything else.

Pure: the broker resolves, connects and records; this module only says yes, no or ask.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

DEFAULT_PORTS = (443, 80)
MAX_ENTRIES = 1024

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\Z")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Addresses a public name must never lead to (besides what ipaddress calls loopback,
# link-local, multicast, unspecified and reserved).
_REFUSED_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
)
_REFUSED_V6 = tuple(
    ipaddress.IPv6Network(n)
    for n in ("::/128", "::1/128", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8", "100::/64")
)
# Cloud metadata services: named apart in the reason, because that is what they are.
METADATA = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),
        ipaddress.ip_address("169.254.170.2"),
        ipaddress.ip_address("100.100.100.200"),
        ipaddress.ip_address("fd00:ec2::254"),
    }
)


class Verdict(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


class NetworkPolicyError(ValueError):
    """An invalid `network` entry; the message names the key and what it accepts."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


def normal_host(host: str) -> str | None:
    """``host`` in lower case without a final dot, or None when it is no valid name or address."""
    if not host or len(host) > 255:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        pass
    name = host.lower().rstrip(".")
    if not name or len(name) > 253:
        return None
    labels = name.split(".")
    if not all(_LABEL.match(label) for label in labels):
        return None
    return name


def address_of(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def refused_class(addr: IPAddress) -> str:
    """Why ``addr`` is no place for a public name to lead ("" when it is fine)."""
    if isinstance(addr, ipaddress.IPv6Address):
        mapped = addr.ipv4_mapped or addr.sixtofour
        if mapped is not None:
            inner = refused_class(mapped)
            return f"{inner} (inside an IPv6 address)" if inner else ""
        if addr in ipaddress.IPv6Network("64:ff9b::/96"):
            inner = refused_class(ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF))
            return f"{inner} (inside an IPv6 address)" if inner else ""
    if addr in METADATA:
        return "a cloud metadata address"
    if addr.is_loopback:
        return "a loopback address"
    if addr.is_link_local:
        return "a link-local address"
    if addr.is_multicast:
        return "a multicast address"
    if addr.is_unspecified:
        return "an unspecified address"
    nets: tuple[IPNetwork, ...] = _REFUSED_V4 if isinstance(addr, ipaddress.IPv4Address) else _REFUSED_V6
    if any(addr in net for net in nets):
        return "a private or reserved address"
    return ""


@dataclass(frozen=True, slots=True)
class Pattern:
    """One entry of ``allow``/``deny``/``private``: a name pattern or a network, and a port."""

    text: str
    name: str = ""  # "pypi.org", "*.npmjs.org" or "*"
    network: IPNetwork | None = None
    port: int | None = None

    def matches_host(self, host: str) -> bool:
        if self.network is not None:
            addr = address_of(host)
            return addr is not None and addr in self.network
        if self.name == "*":
            return True
        if self.name.startswith("*."):
            return host.endswith(self.name[1:])
        return host == self.name

    def matches(self, host: str, port: int) -> bool:
        return (self.port is None or self.port == port) and self.matches_host(host)


def parse_pattern(text: str, key: str, *, networks: bool = True) -> Pattern:
    """One pattern (see the module's docstring); raises :class:`NetworkPolicyError`."""
    if not isinstance(text, str) or not text or len(text) > 300 or "\x00" in text:
        raise NetworkPolicyError(key, 'must be a host name, "*.domain" or "*", e.g. "pypi.org"')
    body, port = text, None
    if body.count(":") == 1 or (body.startswith("[") and "]:" in body):
        head, _, tail = body.rpartition(":")
        if not tail.isdigit() or not 1 <= int(tail) <= 65535:
            raise NetworkPolicyError(key, f"{text!r}: the port after ':' must be 1-65535")
        body, port = head, int(tail)
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    if networks and "/" in body:
        try:
            return Pattern(text, network=ipaddress.ip_network(body, strict=False), port=port)
        except ValueError:
            raise NetworkPolicyError(key, f"{text!r} is not a network such as 10.0.0.0/8") from None
    if body == "*":
        return Pattern(text, name="*", port=port)
    wildcard = body.startswith("*.")
    name = normal_host(body[2:] if wildcard else body)
    if name is None or (wildcard and address_of(name) is not None):
        raise NetworkPolicyError(
            key, f"{text!r} is not a host name (ASCII letters, digits, '-' and '.'; IDNA as xn--…)"
        )
    return Pattern(text, name=("*." + name) if wildcard else name, port=port)


@dataclass(frozen=True)
class Rules:
    """The network rules for one sandboxed run: the policy's, its workspace's and its agent's."""

    allow: tuple[Pattern, ...] = ()
    deny: tuple[Pattern, ...] = ()
    private: tuple[Pattern, ...] = ()
    ports: tuple[int, ...] = DEFAULT_PORTS

    def host_verdict(self, host: str, port: int) -> tuple[Verdict, str]:
        """By the name and port alone: deny (with why), allow, or ask the operator."""
        for p in self.deny:
            if p.matches(host, port):
                return Verdict.DENY, f"{host} is denied by the policy's network deny list ({p.text})"
        named_port = any(p.port == port and p.matches_host(host) for p in self.allow)
        if port not in self.ports and not named_port:
            listed = ", ".join(map(str, self.ports))
            return Verdict.DENY, (
                f"port {port} is not allowed (network.ports: {listed}); name it with the host in "
                f'network.allow, e.g. "{host}:{port}"'
            )
        if any(p.matches(host, port) for p in self.allow):
            return Verdict.ALLOW, f"{host} is on the policy's network allow list"
        return Verdict.ASK, f"{host} is on no network list"

    def address_refusal(self, host: str, addr: IPAddress) -> str:
        """Why connecting ``host`` at ``addr`` is refused ("" when it may go ahead)."""
        why = refused_class(addr)
        if not why:
            return ""
        if any(p.matches_host(host) or p.matches_host(addr.compressed) for p in self.private):
            return ""
        return (
            f"{host} resolves to {addr.compressed}, {why}; the broker reaches those only for "
            "names or addresses listed in network.private"
        )


@dataclass(frozen=True)
class NetworkPolicy:
    """The policy's `network` table (see docs/policy.md)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    private: tuple[str, ...] = ()
    ports: tuple[int, ...] = DEFAULT_PORTS
    # Workspace root -> (allow, deny) added for runs in it (or below it).
    workspaces: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()

    @property
    def anything(self) -> bool:
        """Whether every name is allowed (``network = "any"`` or ``allow = ["*"]``)."""
        return "*" in self.allow

    def rules(self, workspace: str, agent_allow: Iterable[str] = (), agent_deny: Iterable[str] = ()) -> Rules:
        allow = [*self.allow, *agent_allow]
        deny = [*self.deny, *agent_deny]
        for root, more_allow, more_deny in self.workspaces:
            if workspace == root or workspace.startswith(root.rstrip("/") + "/"):
                allow += more_allow
                deny += more_deny
        return Rules(
            allow=tuple(parse_pattern(p, "network.allow") for p in dict.fromkeys(allow)),
            deny=tuple(parse_pattern(p, "network.deny") for p in dict.fromkeys(deny)),
            private=tuple(parse_pattern(p, "network.private") for p in self.private),
            ports=self.ports,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "allow": list(self.allow),
            "deny": list(self.deny),
            "private": list(self.private),
            "ports": list(self.ports),
            "workspace": {root: {"allow": list(a), "deny": list(d)} for root, a, d in self.workspaces},
        }


def _patterns(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise NetworkPolicyError(key, 'must be a list of host patterns, e.g. ["pypi.org", "*.npmjs.org"]')
    if len(value) > MAX_ENTRIES:
        raise NetworkPolicyError(key, f"at most {MAX_ENTRIES} entries")
    for i, text in enumerate(value):
        parse_pattern(text, f"{key}[{i}]", networks=key.endswith("private"))
    return tuple(value)


def lists_from(data: Any, key: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``{allow = [...], deny = [...]}`` (either may be missing), checked."""
    if not isinstance(data, dict):
        raise NetworkPolicyError(key, 'must be a table, e.g. { allow = ["pypi.org"], deny = [] }')
    unknown = sorted(set(data) - {"allow", "deny"})
    if unknown:
        raise NetworkPolicyError(f"{key}.{unknown[0]}", "unknown key; known keys: allow, deny")
    return _patterns(data.get("allow", []), f"{key}.allow"), _patterns(data.get("deny", []), f"{key}.deny")


_KEYS = ("allow", "deny", "private", "ports", "workspace")


def network_policy_from(value: Any) -> NetworkPolicy:
    """The `network` key: "none", "any" or a table of the keys above."""
    if value == "none":
        return NetworkPolicy()
    if value == "any":
        return NetworkPolicy(allow=("*",))
    if isinstance(value, str):
        raise NetworkPolicyError(
            "network", 'unknown value; allowed: "none" | "any" | a table { allow = [...] }'
        )
    if not isinstance(value, dict):
        raise NetworkPolicyError(
            "network", 'must be "none", "any" or a table such as { allow = ["pypi.org"] }'
        )
    unknown = sorted(set(value) - set(_KEYS))
    if unknown:
        raise NetworkPolicyError(f"network.{unknown[0]}", "unknown key; known keys: " + ", ".join(_KEYS))
    allow, deny = lists_from({k: value[k] for k in ("allow", "deny") if k in value}, "network")
    private = _patterns(value.get("private", []), "network.private")
    ports = value.get("ports", list(DEFAULT_PORTS))
    if (
        not isinstance(ports, list)
        or not ports
        or len(ports) > 64
        or not all(isinstance(p, int) and not isinstance(p, bool) and 1 <= p <= 65535 for p in ports)
    ):
        raise NetworkPolicyError("network.ports", "must be a list of 1 to 64 port numbers, e.g. [443, 80]")
    spaces = value.get("workspace", {})
    if not isinstance(spaces, dict) or len(spaces) > 256:
        raise NetworkPolicyError(
            "network.workspace", "must be a table of workspace root = { allow = [...] } (at most 256)"
        )
    workspaces = []
    for root, lists in spaces.items():
        if not root.startswith("/") or root.rstrip("/") == "" or "\x00" in root:
            raise NetworkPolicyError(f"network.workspace.{root[:64]!r}", "must be an absolute directory path")
        more_allow, more_deny = lists_from(lists, f"network.workspace.{root}")
        workspaces.append((root.rstrip("/"), more_allow, more_deny))
    return NetworkPolicy(
        allow=allow,
        deny=deny,
        private=private,
        ports=tuple(dict.fromkeys(ports)),
        workspaces=tuple(workspaces),
    )


__all__ = [
    "DEFAULT_PORTS",
    "METADATA",
    "NetworkPolicy",
    "NetworkPolicyError",
    "Pattern",
    "Rules",
    "Verdict",
    "address_of",
    "network_policy_from",
    "normal_host",
    "parse_pattern",
    "refused_class",
]
