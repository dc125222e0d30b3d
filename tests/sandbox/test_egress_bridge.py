"""The egress bridge (console/sandbox/bridge.py) carries bytes as they are, both ways,
whatever the pace of either side, and passes each end on.

The bridge's own serving code, in a process of its own (as in a sandbox, without one):
a program's TCP connections on one side, a Unix socket standing for the broker on the
other (here an echo server, so what comes back is what went through twice).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import console.sandbox.bridge

# Loads the bridge as a module and serves, as its forked child does (which imports
# socket, selectors and contextlib for it).
SERVE = r"""
import contextlib, importlib.util, selectors, socket, sys
spec = importlib.util.spec_from_file_location("bridge", sys.argv[1])
bridge = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bridge)
bridge.contextlib, bridge.selectors, bridge.socket = contextlib, selectors, socket
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print(listener.getsockname()[1], flush=True)
bridge.serve(listener, sys.argv[2])
"""


def echo(listener: socket.socket) -> None:
    """The broker's side: every byte back, then the end; a connection at a time."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 16)
            while chunk := conn.recv(1 << 16):
                conn.sendall(chunk)
            conn.shutdown(socket.SHUT_WR)


def test_megabytes_each_way_pass_the_bridge_intact_to_a_slow_reader():
    base = Path(tempfile.mkdtemp(prefix="ac-bridge-", dir="/tmp"))
    path = str(base / "broker.sock")
    broker = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    broker.bind(path)
    broker.listen(8)
    threading.Thread(target=echo, args=(broker,), daemon=True).start()
    serving = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", SERVE, console.sandbox.bridge.__file__, path],
        stdout=subprocess.PIPE,
    )
    try:
        assert serving.stdout is not None
        port = int(serving.stdout.readline())
        payload = os.urandom(8 << 20)
        with socket.create_connection(("127.0.0.1", port)) as program:

            def send() -> None:
                program.sendall(payload)
                program.shutdown(socket.SHUT_WR)

            sender = threading.Thread(target=send)
            sender.start()
            got = bytearray()
            while chunk := program.recv(1 << 15):
                got += chunk
                time.sleep(0.0005)  # slower than the echo: the bridge has to hold back
            sender.join()
        assert len(got) == len(payload)
        assert got == payload
    finally:
        serving.kill()
        serving.wait()
        broker.close()
        os.unlink(path)
        base.rmdir()
