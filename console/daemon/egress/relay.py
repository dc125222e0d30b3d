"""One proxied connection, on its two sockets: read the request, wait for the decision,
then carry bytes both ways.

The daemon's event loop also answers every agent's requests, so a connection costs as
little of it as it can: no transports, streams or protocols, only the sockets, watched
by an epoll of the relay's own that the loop watches as one reader (:class:`Poller`),
and no task unless the decision waits for a resolver or the operator. Bytes read from one
side are sent to the other at once; only what the other side's socket buffer does not
take is kept, and while anything is kept for a side nothing more is read from the side
that sends to it. So a slow reader never makes the
daemon hold more than one read, and the kernel's socket buffers do the buffering. While
the decision is pending (an approval can take minutes) the client's side keeps reading,
so a client that hangs up is seen at once (its item is withdrawn); what it sends
meanwhile is kept (up to a bound) and sent upstream first.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import select
import socket
from collections.abc import Callable
from enum import Enum, auto

from console.daemon.egress import proxy
from console.daemon.egress.proxy import Kind, ProxyProtocolError, Target

# What a client may send while its connection waits for a decision.
MAX_EARLY_BYTES = 1 << 20
# One read: the most a direction holds in the daemon when the other side is slow.
CHUNK = 1 << 16


class Phase(Enum):
    HEAD = auto()
    SOCKS_REQUEST = auto()
    DECIDING = auto()
    RELAY = auto()
    CLOSED = auto()


log = logging.getLogger("agent-console.egress")

# What to do with a request once it is read: decide, then refuse or relay (the service).
# It returns at once; what it does next it does in callbacks or a task of its own.
Decide = Callable[[Target, "Client"], None]
# Told when a connection to the destination is made (the socket) or failed (why).
Connected = Callable[[socket.socket | None, OSError | None], None]
# A first message that is no proxy request, with the descriptors it carried: the bridge
# giving its listener (the service takes it or refuses, and answers the client).
Handover = Callable[["Client", bytes, list[int]], None]


# epoll's events; an error or a hang-up is news for a reader and a writer alike.
_IN, _OUT = select.EPOLLIN, select.EPOLLOUT
_READ_SIDE = select.EPOLLIN | select.EPOLLERR | select.EPOLLHUP
_WRITE_SIDE = select.EPOLLOUT | select.EPOLLERR | select.EPOLLHUP


class Poller:
    """The relay's sockets, on an epoll of their own that the event loop watches as one
    reader. A connection's two sockets are watched, changed and unwatched several times
    each, and each change through the loop's add_reader/remove_reader (a handle, a
    selector key, lookups) cost several times the epoll call itself, as did each event
    handed out as a callback of the loop's. One wake-up of the loop serves every socket
    that is ready. Measured side by side (two brokers at once, connections alternating):
    about 5-10% less of the loop's CPU a connection, one event a wake-up, which is its
    least favourable case."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.epoll = select.epoll()
        self.clients: dict[int, Client] = {}
        loop.add_reader(self.epoll.fileno(), self._ready)

    def watch(self, fd: int, client: Client, old: int, new: int) -> None:
        """``fd`` (``client``'s) was watched for ``old`` events: now for ``new``."""
        if new == old:
            return
        if not old:
            self.epoll.register(fd, new)
            self.clients[fd] = client
        elif new:
            self.epoll.modify(fd, new)
        else:
            self.epoll.unregister(fd)
            del self.clients[fd]

    def _ready(self) -> None:
        for fd, events in self.epoll.poll(0):
            client = self.clients.get(fd)
            if client is None:
                continue  # unwatched by an event before it in this batch
            try:
                client.ready(fd, events)
            except Exception:
                # As the loop does with a callback that fails: say so and go on with the
                # others; the failed connection is closed (it would only spin).
                log.exception("egress: a relayed connection failed")
                client.close()

    def close(self) -> None:
        if self.epoll.closed:
            return
        with contextlib.suppress(ValueError, RuntimeError):  # (the loop is closed already)
            self.loop.remove_reader(self.epoll.fileno())
        self.epoll.close()
        self.clients.clear()


class Client:
    """One connection from the sandbox (a program's, or the bridge's): the request, then
    the relay to the destination's socket (``upstream``)."""

    def __init__(
        self,
        sock: socket.socket,
        poller: Poller,
        decide: Decide,
        on_done: Callable[[Client], None],
        handover: Handover | None = None,
    ) -> None:
        loop = poller.loop
        self.loop = loop
        self.poller = poller
        self.sock = sock
        self.fd = sock.fileno()
        self.decide = decide
        self.on_done = on_done
        self.upstream: socket.socket | None = None
        self.up_fd = -1
        self.phase = Phase.HEAD
        self.buffer = bytearray()  # the request, then what arrives while it is decided
        self.eof = False  # the client sent all it will
        self.upstream_eof = False  # the destination did
        self.gone = loop.create_future()  # the client hung up
        self.task: asyncio.Task[None] | None = None  # the decision's, when it waits
        # Set for a connection on the run's Unix socket: its first read takes descriptors
        # (every other read drops any sent, as the kernel does for a plain recv).
        self.handover = handover
        self._connected: Connected | None = None  # while the destination's socket connects
        self._connect_timer: asyncio.TimerHandle | None = None
        # Bytes the receiving socket did not take yet, per direction.
        self._to_client = bytearray()
        self._to_upstream = bytearray()
        self._closing = False  # close once what is owed to the client is sent
        # What the poller watches for on each socket (each change is a system call: none
        # needless).
        self._reading = self._up_reading = self._writing = self._up_writing = False
        self._mask = self._up_mask = 0  # what each socket is registered with
        self._timer: asyncio.TimerHandle | None = loop.call_later(proxy.HEAD_TIMEOUT_S, self._slow_head)
        self._read_client(True)

    # -- the poller's interest in each socket --------------------------------------------

    def _read_client(self, on: bool) -> None:
        if on != self._reading:
            self._reading = on
            self._watch_client()

    def _write_client(self, on: bool) -> None:
        if on != self._writing:
            self._writing = on
            self._watch_client()

    def _read_upstream(self, on: bool) -> None:
        if on != self._up_reading:
            self._up_reading = on
            self._watch_upstream()

    def _write_upstream(self, on: bool) -> None:
        if on != self._up_writing:
            self._up_writing = on
            self._watch_upstream()

    def _watch_client(self) -> None:
        mask = (_IN if self._reading else 0) | (_OUT if self._writing else 0)
        self.poller.watch(self.fd, self, self._mask, mask)
        self._mask = mask

    def _watch_upstream(self) -> None:
        mask = (_IN if self._up_reading else 0) | (_OUT if self._up_writing else 0)
        self.poller.watch(self.up_fd, self, self._up_mask, mask)
        self._up_mask = mask

    def ready(self, fd: int, events: int) -> None:
        """The poller says what ``fd`` (one of this connection's) can do now: reading,
        then writing, as the loop ordered its callbacks."""
        if fd == self.fd:
            if events & _READ_SIDE and self._reading:
                self._client_readable()
            if events & _WRITE_SIDE and self._writing:
                self._client_writable()
        elif fd == self.up_fd:
            if events & _READ_SIDE and self._up_reading:
                self._upstream_readable()
            if events & _WRITE_SIDE and self._up_writing:
                self._upstream_writable()

    # -- the client's side ------------------------------------------------------------------

    def _slow_head(self) -> None:
        if self.phase in (Phase.HEAD, Phase.SOCKS_REQUEST):
            self.close()

    def _recv(self, sock: socket.socket) -> bytes | None:
        """One read: b"" at EOF, None if nothing yet; closes the connection on an error."""
        try:
            return sock.recv(CHUNK)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            self.close()
            return None

    def _first_read(self, handover: Handover) -> bytes | None:
        """A Unix connection's first read, with the descriptors it may carry: a hand-over
        (a NUL first, or descriptors) goes to ``handover``; other data is read as usual."""
        try:
            # Room for two: a hand-over has one, and more is seen as more (not cut to one).
            data, fds, _, _ = socket.recv_fds(self.sock, CHUNK, 2, socket.MSG_CMSG_CLOEXEC)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            self.close()
            return None
        self.handover = None
        if fds or data[:1] == b"\x00":
            handover(self, data, fds)
            return None
        return data

    def _client_readable(self) -> None:
        data = self._first_read(self.handover) if self.handover is not None else self._recv(self.sock)
        if data is None:
            return
        if self.phase is Phase.RELAY:
            if data:
                self._send_upstream(data)
            else:
                self.eof = True
                self._read_client(False)
                if self.upstream_eof:
                    self._finish_if_done()
                elif not self._to_upstream:
                    self._shutdown(self.upstream)
            return
        if not data:
            # Gone before its connection was made: nothing more will be done for it.
            self.close()
            return
        self.buffer += data
        if self.phase is Phase.DECIDING:
            if len(self.buffer) > MAX_EARLY_BYTES:
                self._read_client(False)
            return
        try:
            self._parse()
        except ProxyProtocolError as exc:
            self.refuse(proxy.refusal(400, str(exc)))

    def _parse(self) -> None:
        if self.phase is Phase.HEAD:
            found = proxy.parse_head(self.buffer)
            if found is None:
                return
            target, used = found
            del self.buffer[:used]
            if target.kind is Kind.SOCKS5 and not target.host:
                self.phase = Phase.SOCKS_REQUEST
                self.write(proxy.SOCKS5_METHOD_OK)
                self._parse()
                return
            self._start(target)
        elif self.phase is Phase.SOCKS_REQUEST:
            found = proxy.parse_socks5_request(self.buffer)
            if found is None:
                return
            target, used = found
            del self.buffer[:used]
            self._start(target)

    def _start(self, target: Target) -> None:
        self.phase = Phase.DECIDING
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            self.decide(target, self)
        except Exception:
            log.exception("egress: deciding a connection to %s failed", target.host)
            self.close()

    def _client_writable(self) -> None:
        if self._flush(self.sock, self._to_client):
            self._write_client(False)
            if self._closing:
                self.close()
                return
            if self.upstream_eof:
                self._shutdown(self.sock)
                self._finish_if_done()
            elif self.phase is Phase.RELAY:
                self._read_upstream(True)

    # -- the destination's side -----------------------------------------------------------

    def _upstream_readable(self) -> None:
        assert self.upstream is not None
        data = self._recv(self.upstream)
        if data is None:
            return
        if data:
            self._send_client(data)
            return
        self.upstream_eof = True
        self._read_upstream(False)
        if self.eof:
            self._finish_if_done()
        elif not self._to_client:
            self._shutdown(self.sock)

    def _upstream_writable(self) -> None:
        assert self.upstream is not None
        if self._connected is not None:
            error = self.upstream.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            self._connect_done(OSError(error, os.strerror(error)) if error else None)
            return
        if self._flush(self.upstream, self._to_upstream):
            self._write_upstream(False)
            if self.eof:
                self._shutdown(self.upstream)
                self._finish_if_done()
            else:
                self._read_client(True)

    # -- sending ------------------------------------------------------------------------------

    def _send(self, sock: socket.socket, owed: bytearray, data: bytes) -> bool:
        """Send ``data`` after what ``owed`` holds, keeping what the socket does not take:
        False if some is kept (True too when the connection failed, and is closed)."""
        if owed:
            owed += data
            return False
        try:
            sent = sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self.close()
            return True
        if sent < len(data):
            owed += data[sent:]
            return False
        return True

    def _flush(self, sock: socket.socket, owed: bytearray) -> bool:
        """Send what is owed: True once nothing is left."""
        try:
            sent = sock.send(owed)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            self.close()
            return False
        del owed[:sent]
        return not owed

    def _send_client(self, data: bytes) -> None:
        if self.phase is Phase.CLOSED:
            return
        if not self._send(self.sock, self._to_client, data):
            # The client reads slower than the destination sends: stop reading there.
            self._read_upstream(False)
            self._write_client(True)

    def _send_upstream(self, data: bytes) -> None:
        assert self.upstream is not None
        if not self._send(self.upstream, self._to_upstream, data):
            self._read_client(False)
            self._write_upstream(True)

    @staticmethod
    def _shutdown(sock: socket.socket | None) -> None:
        """Pass an EOF on (after everything sent before it)."""
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)

    def _finish_if_done(self) -> None:
        # Both directions are done and nothing is owed: closing sends the FIN after what
        # the kernel still holds, as a shutdown would.
        if self.eof and self.upstream_eof and not self._to_client and not self._to_upstream:
            self.close()

    # -- what the decision does ---------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Send to the client (an answer of the broker's)."""
        if self.phase is not Phase.CLOSED and not self._closing:
            self._send_client(data)

    def refuse(self, answer: bytes) -> None:
        """Answer and close (a refusal, an error connecting, the hand-over's answer)."""
        if self.phase is Phase.CLOSED or self._closing:
            return
        self.write(answer)
        if self._to_client:  # (empty if the connection failed: closing clears it)
            self._closing = True  # closed once the answer is sent
            self._read_client(False)
        else:
            self.close()

    def connect(self, upstream: socket.socket, timeout_s: float, done: Connected) -> None:
        """Wait (at most ``timeout_s``) for ``upstream``, connecting, to be connected, then
        call ``done``; the socket is this connection's from now (closed with it)."""
        self.upstream = upstream
        self.up_fd = upstream.fileno()
        self._connected = done
        self._connect_timer = self.loop.call_later(timeout_s, self._connect_timed_out)
        self._write_upstream(True)

    def _connect_timed_out(self) -> None:
        self._connect_timer = None
        self._connect_done(TimeoutError(errno.ETIMEDOUT, "timed out"))

    def _connect_done(self, error: OSError | None) -> None:
        done, self._connected = self._connected, None
        if self._connect_timer is not None:
            self._connect_timer.cancel()
            self._connect_timer = None
        self._write_upstream(False)
        upstream = self.upstream
        assert done is not None
        assert upstream is not None
        if error is not None:
            self.upstream, self.up_fd = None, -1
            upstream.close()
            done(None, error)
        else:
            done(upstream, None)

    def relay(self, upstream: socket.socket, answer: bytes, first: bytes) -> None:
        """Connected: tell the client, send upstream what it is owed, carry the rest."""
        self.upstream = upstream
        self.up_fd = upstream.fileno()
        self.phase = Phase.RELAY
        if answer:
            self.write(answer)
        owed = first + bytes(self.buffer) if self.buffer else first
        self.buffer = bytearray()
        if owed:
            self._send_upstream(owed)
        if self.phase is Phase.CLOSED:
            return
        if not self._to_client:
            self._read_upstream(True)
        if not self._to_upstream:
            self._read_client(True)

    def close(self) -> None:
        """Close both sides now (what the kernel holds still goes out)."""
        if self.phase is Phase.CLOSED:
            return
        self.phase = Phase.CLOSED
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._connect_timer is not None:
            self._connect_timer.cancel()
            self._connect_timer = None
        self._connected = None
        self._reading = self._writing = self._up_reading = self._up_writing = False
        self._watch_client()
        self.sock.close()
        if self.upstream is not None:
            self._watch_upstream()
            self.upstream.close()
        self._to_client.clear()
        self._to_upstream.clear()
        if not self.gone.done():
            self.gone.set_result(None)
        self.on_done(self)
