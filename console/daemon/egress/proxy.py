"""The proxy protocols the egress broker speaks: HTTP CONNECT, absolute-form HTTP, SOCKS5.

Each connection from a sandbox's bridge starts with one request naming where it wants
to go. This module reads that much, strictly and within bounds, and writes the broker's
answers; it decides nothing and connects nothing (service.py does). No TLS is
intercepted: after CONNECT (or SOCKS5) the bytes are carried as they are; an
absolute-form HTTP request is rewritten to origin form, its ``Proxy-*`` headers dropped
and ``Connection: close`` set, so one connection never reaches two destinations.

Parsing is synchronous, over what has arrived (relay.py feeds it); a refusal is written
so that the program (and the model reading its error) sees why:
a 403 whose reason phrase and body carry the reason (a CONNECT client often shows only
the status line), or SOCKS5's "not allowed by ruleset".
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass
from enum import StrEnum

from console.policy.network import normal_host

MAX_HEAD_BYTES = 64 * 1024
HEAD_TIMEOUT_S = 10.0  # for the whole request head (relay.py applies it)

_REQUEST_LINE = re.compile(rb"([A-Z]{3,16}) (\S{1,8192}) HTTP/1\.([01])\r?\n")
_AUTHORITY = re.compile(r"(\[[0-9A-Fa-f:.]{2,64}\]|[^:/\[\]@\s]{1,255}):([0-9]{1,5})\Z")
_ABSOLUTE = re.compile(
    r"http://(\[[0-9A-Fa-f:.]{2,64}\]|[^:/\[\]@\s?#]{1,255})(?::([0-9]{1,5}))?(/[^\s]*)?\Z"
)


class Kind(StrEnum):
    CONNECT = "connect"
    HTTP = "http"
    SOCKS5 = "socks5"


class ProxyProtocolError(Exception):
    """The request could not be read; the message says why (safe to send back)."""


@dataclass(frozen=True, slots=True)
class Target:
    kind: Kind
    host: str  # normalized (normal_host)
    port: int
    # What to send upstream before relaying (the rewritten head of an HTTP request).
    first: bytes = b""


def _port(text: str | None, default: int) -> int:
    if text is None:
        return default
    value = int(text)
    if not 1 <= value <= 65535:
        raise ProxyProtocolError("the port must be 1-65535")
    return value


# A busy run names the same few hosts again and again; the answer depends on the text alone.
_normal_host = functools.lru_cache(maxsize=4096)(normal_host)


def _host(text: str) -> str:
    host = _normal_host(text)
    if host is None:
        raise ProxyProtocolError("not a valid host name (ASCII, IDNA in its xn-- form)")
    return host


def parse_head(buf: bytes | bytearray) -> tuple[Target, int] | None:
    """The request that starts a connection, from what has arrived: (its target, how many
    bytes it took), None while incomplete; raises :class:`ProxyProtocolError`. A SOCKS5
    greeting gives a target with no host: the request follows the broker's reply
    (:func:`parse_socks5_request`)."""
    if not buf:
        return None
    if buf[0] == 5:
        if len(buf) < 2 or len(buf) < 2 + buf[1]:
            return None
        if 0 not in buf[2 : 2 + buf[1]]:
            raise ProxyProtocolError("SOCKS5 without authentication is all the broker speaks")
        return Target(Kind.SOCKS5, "", 0), 2 + buf[1]
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > MAX_HEAD_BYTES:
            raise ProxyProtocolError("the request head is too long")
        return None
    head = bytes(buf[: end + 4])
    if len(head) > MAX_HEAD_BYTES:
        raise ProxyProtocolError("the request head is too long")
    line = _REQUEST_LINE.match(head)
    if line is None:
        raise ProxyProtocolError("not an HTTP proxy request")
    method, target = line.group(1).decode(), line.group(2).decode("ascii", "replace")
    if method == "CONNECT":
        m = _AUTHORITY.match(target)
        if m is None:
            raise ProxyProtocolError("CONNECT needs host:port")
        return Target(Kind.CONNECT, _host(m.group(1)), _port(m.group(2), 443)), len(head)
    m = _ABSOLUTE.match(target)
    if m is None:
        raise ProxyProtocolError("a proxy request needs an absolute http:// URL (https goes through CONNECT)")
    host, port, path = _host(m.group(1)), _port(m.group(2), 80), m.group(3) or "/"
    return Target(Kind.HTTP, host, port, _origin_form(head, method, path, line.group(3).decode())), len(head)


def _origin_form(head: bytes, method: str, path: str, minor: str) -> bytes:
    lines = head.split(b"\r\n")
    out = [f"{method} {path} HTTP/1.{minor}".encode()]
    for raw in lines[1:]:
        if not raw:
            continue
        name = raw.split(b":", 1)[0].strip().lower()
        if name.startswith(b"proxy-") or name in (b"connection", b"keep-alive"):
            continue
        out.append(raw)
    out.append(b"Connection: close")
    return b"\r\n".join(out) + b"\r\n\r\n"


def parse_socks5_request(buf: bytes | bytearray) -> tuple[Target, int] | None:
    """SOCKS5's CONNECT request (after the method reply): (target, bytes taken), None while
    incomplete; raises :class:`ProxyProtocolError`. A name is resolved by the broker."""
    if len(buf) < 5:
        return None
    version, command, _, atyp = buf[0], buf[1], buf[2], buf[3]
    if version != 5 or command != 1:
        raise ProxyProtocolError("only SOCKS5 CONNECT is supported")
    if atyp == 1:
        size, at = 4, 4
    elif atyp == 4:
        size, at = 16, 4
    elif atyp == 3:
        size, at = buf[4], 5
    else:
        raise ProxyProtocolError("unknown SOCKS5 address type")
    if len(buf) < at + size + 2:
        return None
    raw = bytes(buf[at : at + size])
    if atyp == 1:
        host = str(ipaddress.IPv4Address(raw))
    elif atyp == 4:
        host = ipaddress.IPv6Address(raw).compressed
    else:
        host = raw.decode("ascii", "replace")
    port = int.from_bytes(buf[at + size : at + size + 2], "big")
    return Target(Kind.SOCKS5, _host(host), _port(str(port), 0)), at + size + 2


SOCKS5_METHOD_OK = b"\x05\x00"
SOCKS5_NO_METHOD = b"\x05\xff"
# VER, REP, RSV, ATYP=IPv4, BND.ADDR 0.0.0.0, BND.PORT 0
SOCKS5_SUCCEEDED = b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00"
SOCKS5_NOT_ALLOWED = b"\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00"
SOCKS5_UNREACHABLE = b"\x05\x04\x00\x01\x00\x00\x00\x00\x00\x00"

CONNECT_ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"


def _phrase(text: str) -> str:
    """A reason phrase: visible ASCII and spaces only, bounded."""
    clean = "".join(c if " " <= c <= "~" else "?" for c in text)
    return clean[:300]


def refusal(status: int, reason: str) -> bytes:
    """An HTTP answer the program shows: the reason in the status line and the body."""
    phrase = _phrase(f"agent-console: {reason}")
    body = (phrase + "\n").encode("ascii")
    return (
        f"HTTP/1.1 {status} {phrase}\r\n"
        "Content-Type: text/plain; charset=us-ascii\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n"
        f"X-Agent-Console-Reason: {phrase}\r\n\r\n"
    ).encode("ascii") + body
