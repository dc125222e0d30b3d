"""``agent-console daemon dial-stdio``: this machine's operator.sock on standard input and
output, for a console on another machine that reached this one over SSH.

sshd runs it as the operator's user. It reads the console's first frame, which must be
``hello``, adds the operator token it reads *here* (so the token never crosses the
link), and from then on copies bytes both ways until either side hangs up. It dials only
its own daemon's ``operator.sock``: the runtime directory must be private and ours (as
every client checks), the socket a socket in it (not a link to somewhere else), and the
process answering must run as us. Anything else is refused before a byte is sent.

A refusal is answered as a JSON-RPC error to the console's ``hello`` (code
:data:`~console.protocol.jsonrpc.UNAVAILABLE`, ``data.dial`` naming the reason), and
said on standard error; the exit status is 3, as every CLI verb's "unreachable".
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import sys
import threading

from console.client.errors import DaemonUnreachable, check_peer, socket_for
from console.locations import Locations, UnsafeLocation
from console.protocol import jsonrpc
from console.protocol.jsonrpc import INVALID_REQUEST, UNAVAILABLE, Request, RPCError

MAX_HELLO = 256 * 1024  # the daemon's own bound before hello
CHUNK = 1 << 16
EXIT_UNREACHABLE = 3


class DialRefused(Exception):
    """Why this dial-stdio will not connect; said to the console and on stderr."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def operator_socket(loc: Locations) -> tuple[str, str]:
    """The daemon's operator socket and token, refusing a path that leads elsewhere."""
    try:
        path, token = socket_for("operator", loc)
    except DaemonUnreachable as exc:
        raise DialRefused(str(exc), "unreachable") from None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise DialRefused(
            f"no daemon answers on {path}; start one there: agent-console daemon start", "unreachable"
        ) from None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
        raise DialRefused(
            f"{path} is not the daemon's socket (a link, another kind of file, or not yours); refusing it",
            "not_the_daemon",
        )
    return str(path), token


def read_hello(fd: int) -> tuple[Request, bytes]:
    """The console's first frame, which must be one ``hello`` request, and whatever came
    after it in the same reads (read from the descriptor, so nothing hides in a buffer)."""
    buf = b""
    while b"\n" not in buf:
        if len(buf) > MAX_HELLO:
            raise DialRefused("the first frame must be a hello of at most 256 KiB", "bad_hello")
        chunk = os.read(fd, CHUNK)
        if not chunk:
            raise DialRefused("the console hung up before its hello", "bad_hello")
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    if len(line) > MAX_HELLO:
        raise DialRefused("the first frame must be a hello of at most 256 KiB", "bad_hello")
    messages, batch = jsonrpc.decode_message(line + b"\n")
    first = messages[0]
    if batch or not isinstance(first, Request) or first.method != "hello" or first.is_notification:
        raise DialRefused("the first frame must be a hello request", "bad_hello")
    return first, rest


def dial(loc: Locations, in_fd: int, out_fd: int) -> int:
    try:
        hello, rest = read_hello(in_fd)
    except DialRefused as exc:
        _say(out_fd, jsonrpc.error_response(None, RPCError(INVALID_REQUEST, str(exc), {"dial": exc.reason})))
        sys.stderr.write(f"agent-console: {exc}\n")
        return 2
    try:
        path, token = operator_socket(loc)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(10.0)
            sock.connect(path)
            check_peer(sock)
        except DaemonUnreachable as exc:
            sock.close()
            raise DialRefused(str(exc), "not_the_daemon") from None
        except OSError as exc:
            sock.close()
            raise DialRefused(f"cannot connect to {path}: {exc.strerror or exc}", "unreachable") from None
    except DialRefused as exc:
        _say(out_fd, jsonrpc.error_response(hello.id, RPCError(UNAVAILABLE, str(exc), {"dial": exc.reason})))
        sys.stderr.write(f"agent-console: {exc}\n")
        return EXIT_UNREACHABLE
    sock.settimeout(None)
    # The token is this machine's: whatever the console put in token or ticket is dropped.
    params = {k: v for k, v in hello.params.items() if k not in ("token", "ticket")}
    sock.sendall(jsonrpc.encode(jsonrpc.request(hello.id, "hello", {**params, "token": token})) + rest)
    return _pipe(sock, in_fd, out_fd)


def _pipe(sock: socket.socket, in_fd: int, out_fd: int) -> int:
    """Copy both ways until the daemon hangs up; the console hanging up half-closes."""

    def upstream() -> None:
        try:
            while data := os.read(in_fd, CHUNK):
                sock.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, name="dial-up", daemon=True).start()
    try:
        while data := sock.recv(CHUNK):
            _write_all(out_fd, data)
    except OSError:
        return EXIT_UNREACHABLE
    finally:
        sock.close()
    return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _say(fd: int, message: dict[str, object]) -> None:
    with contextlib.suppress(OSError):
        _write_all(fd, jsonrpc.encode(message))


def main(loc: Locations) -> int:
    try:
        return dial(loc, sys.stdin.fileno(), sys.stdout.fileno())
    except UnsafeLocation as exc:
        sys.stderr.write(f"agent-console: {exc}\n")
        return EXIT_UNREACHABLE
