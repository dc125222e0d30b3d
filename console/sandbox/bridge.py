"""The egress bridge: runs inside a sandbox with brokered network, then runs the command.

Started as ``python -I -S /run/egress/bridge.py 127.0.0.1:PORT SOCKET -- CMD ARGS...``
(this file, copied in). The
sandbox has a network namespace of its own with only a loopback, so programs reach the
network only through the proxy named by ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``:
this bridge listens on ``127.0.0.1:PORT`` and carries every connection, byte for byte,
to the daemon's egress broker on ``SOCKET`` (a Unix socket bound into the sandbox),
which reads the proxy request, asks the policy or the operator, and connects.

It listens before the command starts (so the first request finds it), then forks: the
bridge serves in the child, in a session of its own with no terminal (the session's
Ctrl-C is not for it); the parent becomes the command. It dies with the sandbox.

Standard library only, no site packages (``-I -S``): it must start in milliseconds and
must not import anything from the workspace. The parent, which becomes the command,
loads only ``_socket`` to listen: ``socket``, ``selectors`` and ``contextlib`` (enum, collections…)
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
    import selectors
    import socket

CHUNK = 65536
# Bytes read from one side but not yet written to the other, per direction.
BUFFER_LIMIT = 1 << 20


class Pair:
    """One proxied connection: the program's TCP socket and the broker's Unix socket."""

    def __init__(self, sel: selectors.BaseSelector, client: socket.socket, upstream: socket.socket) -> None:
        self.sel = sel
        self.ends = (client, upstream)
        # Bytes to write to that end; whether that end will send nothing more.
        self.pending: dict[socket.socket, bytearray] = {client: bytearray(), upstream: bytearray()}
        self.eof: dict[socket.socket, bool] = {client: False, upstream: False}
        # What the selector watches on each end (each change is a system call: none needless).
        self.events: dict[socket.socket, int] = {client: 0, upstream: 0}
        self.closed = False

    def other(self, sock: socket.socket) -> socket.socket:
        return self.ends[1] if sock is self.ends[0] else self.ends[0]

    def update(self) -> None:
        for sock in self.ends:
            events = 0
            peer = self.other(sock)
            if not self.eof[sock] and len(self.pending[peer]) < BUFFER_LIMIT:
                events |= selectors.EVENT_READ
            if self.pending[sock]:
                events |= selectors.EVENT_WRITE
            now = self.events[sock]
            if events == now:
                continue
            self.events[sock] = events
            if not now:
                self.sel.register(sock, events, self)
            elif events:
                self.sel.modify(sock, events, self)
            else:
                self.sel.unregister(sock)

    def readable(self, sock: socket.socket) -> None:
        peer = self.other(sock)
        try:
            data = sock.recv(CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        if not data:
            self.eof[sock] = True
            if not self.pending[peer]:
                self._shut(peer)
        elif self.pending[peer]:
            self.pending[peer] += data
            self.writable(peer)
        else:
            # Nothing waits to go that way: send it now, keep only what is not taken.
            try:
                sent = peer.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self.close()
                return
            if sent < len(data):
                self.pending[peer] += data[sent:]
        self._maybe_done()

    def writable(self, sock: socket.socket) -> None:
        buf = self.pending[sock]
        if buf:
            try:
                sent = sock.send(buf)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.close()
                return
            del buf[:sent]
        if not buf and self.eof[self.other(sock)]:
            self._shut(sock)
        self._maybe_done()

    def _shut(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    def _maybe_done(self) -> None:
        if self.closed:
            return
        if all(self.eof.values()) and not any(self.pending.values()):
            self.close()
        else:
            self.update()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for sock in self.ends:
            if self.events[sock]:
                with contextlib.suppress(KeyError, ValueError):
                    self.sel.unregister(sock)
            sock.close()


def _accept(sel: selectors.BaseSelector, listener: socket.socket, target: str) -> bool:
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
    Pair(sel, client, upstream).update()
    return True


def serve(listener: socket.socket, target: str) -> None:
    sel = selectors.DefaultSelector()
    listener.setblocking(False)
    sel.register(listener, selectors.EVENT_READ, None)
    while True:
        for key, mask in sel.select():
            if key.data is None:
                # Every connection waiting, not one per wake-up.
                for _ in range(512):
                    if not _accept(sel, listener, target):
                        break
                continue
            pair = key.data
            if pair.closed:
                continue
            if mask & selectors.EVENT_WRITE:
                pair.writable(key.fileobj)
            if mask & selectors.EVENT_READ and not pair.closed:
                pair.readable(key.fileobj)


def _serve_child(listener: _socket.socket, target: str) -> None:
    """The forked child: the bridge itself, in a session of its own with no terminal."""
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        # Module names Pair and serve use: loaded here, after the command's fork.
        global contextlib, selectors, socket
        import contextlib
        import selectors
        import socket

        serve(socket.socket(fileno=listener.detach()), target)
    finally:
        os._exit(0)


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
    if os.fork() == 0:
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
