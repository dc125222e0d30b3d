"""An offline network for the egress broker's tests: a network namespace of its own.

``ip netns add`` makes a namespace with only a loopback; test addresses are added to it
(198.51.100.x stands for "somewhere on the internet", 10.x for a private network), and
``/etc/netns/NAME/hosts`` names them: ``ip netns exec`` binds that file over /etc/hosts
for whatever it runs, so the daemon's own resolver (getaddrinfo) answers from it, as a
real DNS would. Servers and the daemon run inside; the tests talk to the daemon over
its Unix sockets, which are files and cross namespaces.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
CLONE_NEWNET = 0x40000000

# A tiny HTTP(S) server: answers GET with "hello from NAME <path>"; --tls with a
# self-signed certificate. Runs inside the namespace.
SERVER = r"""
import http.server, socketserver, ssl, sys
bind, port, name, cert = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        body = f"hello from {name} {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
srv = S((bind, port), H)
if cert != "-":
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, cert)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
"""


def in_namespace(name: str, fn: Callable[[], T]) -> T:
    """``fn()`` on a thread that entered the namespace first: the sockets it makes are
    the namespace's (a thread's network namespace is its own), whoever serves them later."""
    box: dict[str, Any] = {}

    def enter() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns")
            finally:
                os.close(fd)
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def available() -> str:
    """Why the namespace cannot be made here ("" when it can)."""
    if os.geteuid() != 0:
        return "ip netns needs root"
    if shutil.which("ip") is None:
        return "no ip (iproute2)"
    return ""


class NetNamespace:
    def __init__(self, hosts: dict[str, str], addresses: list[str]) -> None:
        self.name = "ac-" + uuid.uuid4().hex[:10]
        self.hosts = hosts
        self.addresses = addresses
        self.etc = Path("/etc/netns") / self.name
        self.servers: list[subprocess.Popen[bytes]] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="ac-netns-", dir="/tmp"))

    @property
    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]

    def _ip(self, *args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    def create(self) -> NetNamespace:
        self._ip("netns", "add", self.name)
        self._ip("netns", "exec", self.name, "ip", "link", "set", "lo", "up")
        for addr in self.addresses:
            self._ip("netns", "exec", self.name, "ip", "addr", "add", f"{addr}/32", "dev", "lo")
        self.etc.mkdir(parents=True, exist_ok=True)
        lines = ["127.0.0.1 localhost", *(f"{addr} {name}" for name, addr in self.hosts.items())]
        (self.etc / "hosts").write_text("\n".join(lines) + "\n")
        return self

    def certificate(self, name: str) -> Path:
        path = self.tmp / f"{name}.pem"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                f"/CN={name}",
                "-keyout",
                str(path),
                "-out",
                str(self.tmp / "cert.pem"),
                "-days",
                "1",
            ],
            check=True,
            capture_output=True,
        )
        path.write_text(path.read_text() + (self.tmp / "cert.pem").read_text())
        return path

    def serve(self, bind: str, port: int, name: str, *, tls: bool = False) -> None:
        cert = str(self.certificate(name)) if tls else "-"
        proc = subprocess.Popen(
            [*self.prefix, sys.executable, "-c", SERVER, bind, str(port), name, cert],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.servers.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(
                f"server {name} did not start: {proc.stderr.read().decode() if proc.stderr else ''}"
            )

    def close(self) -> None:
        for proc in self.servers:
            proc.kill()
            proc.wait(5)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        shutil.rmtree(self.etc, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


@contextmanager
def network(hosts: dict[str, str], addresses: list[str]) -> Iterator[NetNamespace]:
    ns = NetNamespace(hosts, addresses)
    try:
        yield ns.create()
    finally:
        ns.close()
