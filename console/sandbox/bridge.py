"""The egress bridge: runs inside a sandbox with brokered network, then runs the command.

Started as ``python -I -S /run/egress/bridge.py 127.0.0.1:PORT SOCKET -- CMD ARGS...``
(this file, copied in). The
sandbox has a network namespace of its own with only a loopback, so programs reach the
network only through the proxy named by ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``,
on ``127.0.0.1:PORT``, which the daemon's egress broker serves: it reads the proxy
request, asks the policy or the operator, and connects.

The bridge listens on that port before the command starts (so the first request finds
it), and gives the listener to the broker over ``SOCKET`` (a Unix socket bound into the
sandbox; the descriptor passed with SCM_RIGHTS): the broker then accepts the programs'
connections itself, and the bridge becomes the command, leaving no process behind. If
the broker does not take it, the bridge forks and serves in the child, carrying every
connection byte for byte to ``SOCKET`` (in a session of its own with no terminal: the
session's Ctrl-C is not for it); it dies with the sandbox.

Standard library only, no site packages (``-I -S``): it must start in milliseconds and
must not import anything from the workspace. The parent, which becomes the command,
loads only ``_socket`` to listen: ``socket``, ``select`` and ``contextlib`` (enum, collections…)
are the serving child's, loaded after the fork, so they do not delay the command.
"""

from __future__ import annotations

import _socket
import errno
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import contextlib
    import select
    import socket

CHUNK = 65536
# Bytes read from one side but not yet written to the other, per direction.
BUFFER_LIMIT = 1 << 20
# The hand-over's first line, sent with the listener attached (neither an HTTP request nor
# SOCKS5 begins with a NUL), and the broker's yes; any other answer is a line saying why not.
# The broker reads these from here (console/daemon/egress/service.py).
HANDOVER = b"\x00agent-console: listener\n"
HANDOVER_OK = b"ok\n"
HANDOVER_TIMEOUT_S = 10.0
# epoll's flags (select.EPOLLIN...), fixed by Linux: named here so the parent, which
# becomes the command, never loads ``select``.
_IN, _OUT, _ERR, _HUP = 0x001, 0x004, 0x008, 0x010


class End:
    """One side of a proxied connection: its socket, what waits to be written to it, and
    whether it will send anything more. The program's TCP socket and the broker's Unix
    socket are the two ends of a pair, each the other's ``peer``."""

    __slots__ = ("ends", "eof", "events", "fd", "peer", "pending", "sock")

    def __init__(self, sock: socket.socket, ends: dict[int, End]) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.peer: End = self
        self.pending = bytearray()
        self.eof = False
        self.events = 0  # what epoll watches on it (each change is a system call: none needless)
        self.ends = ends  # every open end by descriptor; an end leaves it when closed


def _update(poll: select.epoll, end: End) -> None:
    """Watch what the end needs: reading while it may send and its peer's queue is short,
    writing while something waits for it."""
    events = 0
    if not end.eof and len(end.peer.pending) < BUFFER_LIMIT:
        events |= _IN
    if end.pending:
        events |= _OUT
    now = end.events
    if events == now:
        return
    end.events = events
    if not now:
        poll.register(end.fd, events)
    elif events:
        poll.modify(end.fd, events)
    else:
        poll.unregister(end.fd)


def _readable(poll: select.epoll, end: End) -> None:
    peer = end.peer
    try:
        data = end.sock.recv(CHUNK)
    except (BlockingIOError, InterruptedError):
        return
    except OSError:
        _close(poll, end)
        return
    if not data:
        end.eof = True
        if not peer.pending:
            _shut(peer)
    elif peer.pending:
        peer.pending += data
        _writable(poll, peer)
        return
    else:
        # Nothing waits to go that way: send it now, keep only what is not taken.
        try:
            sent = peer.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            _close(poll, end)
            return
        if sent < len(data):
            peer.pending += data[sent:]
    _settle(poll, end)


def _writable(poll: select.epoll, end: End) -> None:
    buf = end.pending
    if buf:
        try:
            sent = end.sock.send(buf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            _close(poll, end)
            return
        del buf[:sent]
    if not buf and end.peer.eof:
        _shut(end)
    _settle(poll, end)


def _shut(end: End) -> None:
    with contextlib.suppress(OSError):
        end.sock.shutdown(socket.SHUT_WR)


def _settle(poll: select.epoll, end: End) -> None:
    """Close the pair once both sides have said all and all is written; else watch what
    each end needs now."""
    peer = end.peer
    if end.eof and peer.eof and not end.pending and not peer.pending:
        _close(poll, end)
    else:
        _update(poll, end)
        _update(poll, peer)


def _close(poll: select.epoll, end: End) -> None:
    for side in (end, end.peer):
        if side.ends.pop(side.fd, None) is None:
            continue  # closed already
        if side.events:
            with contextlib.suppress(OSError):
                poll.unregister(side.fd)
        side.sock.close()


def _accept(poll: select.epoll, listener: socket.socket, target: str, ends: dict[int, End]) -> bool:
    """One waiting connection, paired with one to the broker: False once none waits."""
    try:
        client, _ = listener.accept()
    except (BlockingIOError, InterruptedError):
        return False
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            return False
        raise
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(target)
    except OSError:
        upstream.close()
        client.close()
        return True
    client.setblocking(False)
    upstream.setblocking(False)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    a, b = End(client, ends), End(upstream, ends)
    a.peer, b.peer = b, a
    ends[a.fd], ends[b.fd] = a, b
    _update(poll, a)
    _update(poll, b)
    return True


def serve(listener: socket.socket, target: str) -> None:
    """Carry every connection on ``listener`` to ``target``, one thread, epoll itself:
    at a thousand connections a second the bridge shares the sandbox's CPU with the
    program it serves, and a connection's few small reads and writes are most of it."""
    global contextlib, select, socket
    import contextlib
    import select
    import socket

    poll = select.epoll()
    listener.setblocking(False)
    lfd = listener.fileno()
    poll.register(lfd, _IN)
    ends: dict[int, End] = {}
    while True:
        try:
            ready = poll.poll()
        except InterruptedError:
            continue
        for fd, mask in ready:
            if fd == lfd:
                # Every connection waiting, not one per wake-up.
                for _ in range(512):
                    if not _accept(poll, listener, target, ends):
                        break
                continue
            end = ends.get(fd)
            if end is None:
                continue  # closed by an event before it in this batch
            # An error or hang-up shows as what each watched direction then does.
            if mask & (_OUT | _ERR | _HUP) and end.events & _OUT:
                _writable(poll, end)
                if ends.get(fd) is not end:
                    continue
            if mask & (_IN | _ERR | _HUP) and end.events & _IN:
                _readable(poll, end)


def _serve_child(listener: _socket.socket, target: str) -> None:
    """The forked child: the bridge itself, in a session of its own with no terminal."""
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        import socket as sockets  # (serve loads it for its own use too)

        serve(sockets.socket(fileno=listener.detach()), target)
    finally:
        os._exit(0)


def hand_over(listener: _socket.socket, target: str) -> bool:
    """Give ``listener`` to the broker at ``target``: True once it said it serves it."""
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError:
        return False
    try:
        sock.settimeout(HANDOVER_TIMEOUT_S)
        sock.connect(target)
        fd = listener.fileno().to_bytes(4, sys.byteorder)  # one C int
        sock.sendmsg([HANDOVER], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fd)])
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < 512:
            chunk = sock.recv(512)
            if not chunk:
                break
            answer += chunk
        if answer != HANDOVER_OK:
            sys.stderr.write(
                f"the network bridge serves itself: {answer.decode('ascii', 'replace').strip()}\n"
            )
        return answer == HANDOVER_OK
    except OSError:
        return False
    finally:
        sock.close()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: bridge 127.0.0.1:PORT SOCKET -- CMD [ARGS...]\n")
        return 2
    host, _, port = argv[0].rpartition(":")
    target, command = argv[1], argv[3:]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, int(port)))
        listener.listen(512)
    except OSError as exc:
        sys.stderr.write(f"the network bridge cannot listen on {argv[0]}: {exc.strerror}\n")
        return 126
    if not hand_over(listener, target) and os.fork() == 0:
        _serve_child(listener, target)
    listener.close()
    try:
        os.execv(command[0], command)  # noqa: S606 (the approved command itself)
    except OSError as exc:
        sys.stderr.write(f"cannot run {command[0]}: {exc.strerror}\n")
        return 127 if exc.errno == errno.ENOENT else 126
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
