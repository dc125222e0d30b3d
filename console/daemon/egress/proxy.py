"""The proxy protocols the egress broker speaks: HTTP CONNECT, absolute-form HTTP, SOCKS5.

Each connection from a sandbox's bridge starts with one request naming where it wants
to go. This module reads that much, strictly and within bounds, and writes the broker's
answers; it decides nothing and connects nothing (service.py does). No TLS is
intercepted: after CONNECT (or SOCKS5) the bytes are carried as they are; an
absolute-form HTTP request is rewritten to origin form, its ``Proxy-*`` headers dropped
and ``Connection: close`` set, so one connection never reaches two destinations.

A refusal is written so that the program (and the model reading its error) sees why:
a 403 whose reason phrase and body carry the reason (a CONNECT client often shows only
the status line), or SOCKS5's "not allowed by ruleset".
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from enum import StrEnum

from console.policy.network import normal_host

MAX_HEAD_BYTES = 64 * 1024
HEAD_TIMEOUT_S = 10.0

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


def _host(text: str) -> str:
    host = normal_host(text)
    if host is None:
        raise ProxyProtocolError("not a valid host name (ASCII, IDNA in its xn-- form)")
    return host


async def read_target(reader: asyncio.StreamReader) -> Target:
    """The destination of the request that starts this connection."""
    first = await asyncio.wait_for(reader.readexactly(1), HEAD_TIMEOUT_S)
    if first == b"\x05":
        return await _socks5(reader)
    try:
        rest = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
    except asyncio.LimitOverrunError:
        raise ProxyProtocolError("the request head is too long") from None
    except asyncio.IncompleteReadError:
        raise ProxyProtocolError("the request head ended early") from None
    head = first + rest
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
        return Target(Kind.CONNECT, _host(m.group(1)), _port(m.group(2), 443))
    m = _ABSOLUTE.match(target)
    if m is None:
        raise ProxyProtocolError("a proxy request needs an absolute http:// URL (https goes through CONNECT)")
    host, port, path = _host(m.group(1)), _port(m.group(2), 80), m.group(3) or "/"
    return Target(Kind.HTTP, host, port, _origin_form(head, method, path, line.group(3).decode()))


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


async def _socks5(reader: asyncio.StreamReader) -> Target:
    async def read(n: int) -> bytes:
        try:
            return await asyncio.wait_for(reader.readexactly(n), HEAD_TIMEOUT_S)
        except asyncio.IncompleteReadError:
            raise ProxyProtocolError("the SOCKS5 request ended early") from None

    (count,) = await read(1)
    methods = await read(count)
    if 0 not in methods:
        raise ProxyProtocolError("SOCKS5 without authentication is all the broker speaks")
    return Target(Kind.SOCKS5, "", 0, first=b"")  # the request follows the method reply


async def socks5_request(reader: asyncio.StreamReader) -> Target:
    """After the method reply: the CONNECT request (names only as the broker resolves)."""

    async def read(n: int) -> bytes:
        try:
            return await asyncio.wait_for(reader.readexactly(n), HEAD_TIMEOUT_S)
        except asyncio.IncompleteReadError:
            raise ProxyProtocolError("the SOCKS5 request ended early") from None

    version, command, _, atyp = await read(4)
    if version != 5 or command != 1:
        raise ProxyProtocolError("only SOCKS5 CONNECT is supported")
    if atyp == 1:
        import ipaddress

        host = str(ipaddress.IPv4Address(await read(4)))
    elif atyp == 4:
        import ipaddress

        host = ipaddress.IPv6Address(await read(16)).compressed
    elif atyp == 3:
        (length,) = await read(1)
        host = (await read(length)).decode("ascii", "replace")
    else:
        raise ProxyProtocolError("unknown SOCKS5 address type")
    port = int.from_bytes(await read(2), "big")
    return Target(Kind.SOCKS5, _host(host), _port(str(port), 0))


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
