"""The egress broker's cost: a connection through it beside a direct loopback connection.

    python benchmarks/egress.py [--n 300] [--rate 1000] [--seconds 3]

Targets: a connection through the broker adds at most 2 ms, median, over a
direct loopback connection; 1,000 proxied requests a second, sustained, with a p99 of
at most 10 ms.

A real daemon (its own state directory) starts a confined session whose program is the
client below, in the real sandbox: it has only its own loopback, where 127.0.0.1:3128 is
the proxy (the bridge's listener, which the daemon's broker took over and serves). One
request is: connect, `GET /` (HTTP/1.0), read the answer to its end. Side by side,
interleaved:

- direct:  to a server the client runs itself on its sandbox's loopback (the reference);
- broker:  `CONNECT 127.0.0.1:PORT` to the proxy port, served by the broker, which checks the
           policy (the server's name and port are on its allow list, its address on
           `private`), resolves, records a `connection` event in the history, connects
           to a server on the host's loopback (the same code as the direct one), answers
           200, then carries the request.

Then an open loop, twice: requests started at `--rate` per second for `--seconds`, each
its own connection, latency counted from when it was due (so a stall shows as the queue
behind it); first direct, then through the broker. The direct one is the floor under the
broker's on this machine at this moment (its load, and the client's and the server's own
cost), printed beside it. The client is one thread on non-blocking sockets, as the
servers are, and the direct server a process of its own, as the host's is: the load
generator costs little beside what it measures. Last, the CPU each process spent per
request in each open loop: the client, the servers, the bridge (only if it serves: when
the broker did not take its listener), the daemon.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from console.client import Client
from console.locations import locate

SERVER = r"""
import selectors, socket
def serve(listener):
    # One thread, no thread per connection: the server's own cost stays out of the figures.
    sel = selectors.DefaultSelector()
    listener.setblocking(False)
    sel.register(listener, selectors.EVENT_READ)
    pending = {}
    while True:
        for key, _ in sel.select():
            if key.fileobj is listener:
                try:
                    conn, _ = listener.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(False)
                pending[conn] = b""
                sel.register(conn, selectors.EVENT_READ)
                continue
            conn = key.fileobj
            try:
                chunk = conn.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            data = pending.get(conn, b"") + chunk
            if chunk and b"\r\n\r\n" not in data:
                pending[conn] = data
                continue
            sel.unregister(conn)
            pending.pop(conn, None)
            if chunk:
                try:
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
                except OSError:
                    pass
            conn.close()
"""

# Runs inside the sandbox.
CLIENT = (
    SERVER
    + r"""
import json, os, selectors, signal, socket, sys, time
host_port, n, rate, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
inner = socket.socket(); inner.bind(("127.0.0.1", 0)); inner.listen(1024)
inner_port = inner.getsockname()[1]
# The direct server is a process of its own, as the host's is: it shares no interpreter
# (and no GIL) with the client that measures it.
server_pid = os.fork()
if server_pid == 0:
    try:
        serve(inner)
    finally:
        os._exit(0)
inner.close()
REQUEST = b"GET / HTTP/1.0\r\nHost: x\r\n\r\n"
CONNECT = b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % host_port

def read_all(s):
    data = b""
    while chunk := s.recv(4096):
        data += chunk
    return data

def direct():
    t = time.perf_counter()
    with socket.create_connection(("127.0.0.1", inner_port)) as s:
        s.sendall(REQUEST); body = read_all(s)
    assert body.endswith(b"ok"), body
    return (time.perf_counter() - t) * 1000

def proxied():
    t = time.perf_counter()
    with socket.create_connection(("127.0.0.1", 3128)) as s:
        s.sendall(CONNECT)
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
        assert head.startswith(b"HTTP/1.1 200"), head
        s.sendall(REQUEST); body = read_all(s)
    assert body.endswith(b"ok"), body
    return (time.perf_counter() - t) * 1000

for _ in range(20):
    direct(); proxied()
pairs = [(direct(), proxied()) for _ in range(n)]

def open_loop(port, first):
    # One thread and non-blocking sockets, like the servers: the load generator's own
    # cost stays small beside what it measures. A request: connect, send `first` (the
    # CONNECT line, then the request once its 200 is read; or the request itself), read
    # the answer to its end. Its latency runs from when it was due, not when it started.
    sel = selectors.DefaultSelector()
    total = int(rate * seconds)
    start = time.perf_counter() + 0.05
    lat, started, active = [], 0, 0
    while started < total or active:
        now = time.perf_counter()
        while started < total and start + started / rate <= now:
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            # [due, what it waits for: 0 connected, 1 the proxy's answer, 2 the body; bytes]
            sel.register(s, selectors.EVENT_WRITE, [start + started / rate, 0, b""])
            started += 1
            active += 1
        wait = max(0.0, start + started / rate - time.perf_counter()) if started < total else None
        for key, _ in sel.select(wait):
            s, state = key.fileobj, key.data
            if state[1] == 0:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                assert not err, os.strerror(err)
                s.send(first)
                state[1] = 1 if first is CONNECT else 2
                sel.modify(s, selectors.EVENT_READ, state)
                continue
            chunk = s.recv(4096)
            state[2] += chunk
            if state[1] == 1:
                if b"\r\n\r\n" in state[2]:
                    assert state[2].startswith(b"HTTP/1.1 200"), state[2]
                    state[1], state[2] = 2, state[2].split(b"\r\n\r\n", 1)[1]
                    s.send(REQUEST)
                else:
                    assert chunk, state[2]
                continue
            if chunk:
                continue
            assert state[2].endswith(b"ok"), state[2]
            lat.append((time.perf_counter() - state[0]) * 1000)
            sel.unregister(s)
            s.close()
            active -= 1
    return lat, time.perf_counter() - start

def cpu():
    # CPU seconds of this client, its direct server and the bridge if it serves (the
    # client's other child then).
    out = {"at": time.time(), "client": time.process_time()}
    for pid in open(f"/proc/self/task/{os.getpid()}/children").read().split():
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        name = "server" if int(pid) == server_pid else "bridge"
        out[name] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out

# The same open loop, direct then through the broker: the direct one is the floor this
# machine (its load, the client's and the server's own cost) puts under the broker's.
before = cpu()
direct_open = open_loop(inner_port, REQUEST)
between = cpu()
broker_open = open_loop(3128, CONNECT)
after = cpu()
os.kill(server_pid, signal.SIGKILL)
result = {"pairs": pairs, "open": broker_open, "direct_open": direct_open, "cpu": [before, between, after]}
print("RESULT " + json.dumps(result), flush=True)
"""
)


def host_server() -> tuple[socket.socket, int, str]:
    """The broker's destination: (its socket, its port, the stat file of its thread)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    scope: dict[str, object] = {}
    exec(SERVER, scope)  # the same server code as inside, on the host
    thread = threading.Thread(target=scope["serve"], args=(listener,), daemon=True)
    thread.start()
    return listener, listener.getsockname()[1], f"/proc/self/task/{thread.native_id}/stat"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()

    _, port, server_stat = host_server()
    base = Path(tempfile.mkdtemp(prefix="ac-bench-", dir="/tmp"))
    state = base / "s"
    state.mkdir(mode=0o700)
    # The benchmark's own project directory is the workspace, and the only trusted one: the
    # policy refuses a shared parent such as /tmp or /var/tmp as a workspace.
    ws = base / "project"
    ws.mkdir()
    (state / "policy.toml").write_text(
        f"workspaces = [{json.dumps(str(ws))}]\n"
        f'network = {{ allow = ["127.0.0.1"], private = ["127.0.0.1"], ports = [{port}] }}\n'
    )
    daemon = subprocess.Popen(
        [sys.executable, "-m", "console", "daemon", "run", "--state-dir", str(state)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    loc = locate(state)
    try:
        deadline = time.monotonic() + 20
        while not loc.agent_socket.exists() or not loc.operator_socket.exists():
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise SystemExit("the daemon did not start")
            time.sleep(0.05)
        time.sleep(0.3)
        python = os.path.realpath(sys.executable)
        argv = [python, "-I", "-S", "-c", CLIENT, str(port), str(args.n), str(args.rate), str(args.seconds)]
        with Client.connect(loc, role="operator", timeout_s=60) as op:
            cpu_before = _cpu(daemon.pid)
            samples: list[tuple[float, float, float]] = []
            sampling = threading.Event()
            sampler = threading.Thread(
                target=_sample, args=(f"/proc/{daemon.pid}/stat", server_stat, samples, sampling), daemon=True
            )
            sampler.start()
            waited_before = _waited(daemon.pid)
            sid = op.call("sessions.new", {"argv": argv, "cwd": str(ws), "cols": 250, "rows": 50})["session"][
                "id"
            ]
            done = op.call("sessions.wait", {"session": sid, "timeout_s": 300})["session"]
            daemon_cpu = _cpu(daemon.pid) - cpu_before
            sampling.set()
            sampler.join()
            daemon_waited = _waited(daemon.pid) - waited_before
            out, offset = b"", 0
            while True:
                r = op.call("sessions.read", {"session": sid, "offset": offset, "max_bytes": 1 << 20})
                chunk = base64.b64decode(r["data_base64"])
                if not chunk:
                    break
                out += chunk
                offset = r["next_offset"]
        text = out.decode("utf-8", "replace").replace("\r\n", "\n")
        if "RESULT " not in text or done.get("exit_code") != 0:
            raise SystemExit(f"the client failed:\n{text[-3000:]}")
        result = json.loads(_joined(text))
    finally:
        daemon.terminate()
        daemon.wait(20)
        shutil.rmtree(base, ignore_errors=True)

    direct = [d for d, _ in result["pairs"]]
    broker = [b for _, b in result["pairs"]]
    md, mb = statistics.median(direct), statistics.median(broker)
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (figures scale with load)")
    print(f"{args.n} connections each, interleaved, from inside the sandbox; milliseconds")
    print(f"{'':8} {'median':>8} {'p90':>8} {'p99':>8}")
    for name, values in (("direct", direct), ("broker", broker)):
        print(f"{name:8} {statistics.median(values):8.3f} {pct(values, 0.9):8.3f} {pct(values, 0.99):8.3f}")
    added = mb - md
    verdict = "met" if added <= 2 else "missed"
    print(f"the broker adds {added:.2f} ms median ({mb / md:.1f}x direct); target <= 2 ms: {verdict}")
    broker_lat, broker_took = result["open"]
    direct_lat, direct_took = result["direct_open"]
    requests = 20 + 2 * args.n + len(broker_lat)
    print(f"the daemon CPU: {daemon_cpu * 1000:.0f} ms for {requests} proxied connections and the session")
    if daemon_waited is not None:
        # Runnable but not running: other processes had the CPUs. When this is of the order
        # of the CPU time, the latencies measure the machine's load more than the broker.
        print(f"the daemon waited {daemon_waited * 1000:.0f} ms for a CPU meanwhile (run queue, all threads)")
    print(
        f"open loop at {args.rate:.0f}/s for {args.seconds:g} s, latency from when each was due; milliseconds"
    )
    print(f"{'':8} {'done/s':>8} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}")
    for name, lat, took in (("direct", direct_lat, direct_took), ("broker", broker_lat, broker_took)):
        print(
            f"{name:8} {len(lat) / took:8.0f} {statistics.median(lat):8.2f} {pct(lat, 0.9):8.2f} "
            f"{pct(lat, 0.99):8.2f} {max(lat):8.2f}"
        )
    # CPU per request of each process in each open loop (the daemon's over the whole run).
    before, between, after = result["cpu"]
    for name, a, b, n in (
        ("direct", before, between, len(direct_lat)),
        ("broker", between, after, len(broker_lat)),
    ):
        a["daemon"], a["host"] = _cpu_at(samples, a["at"])
        b["daemon"], b["host"] = _cpu_at(samples, b["at"])
        if name == "broker":  # its server is the host's
            a["server"], b["server"] = a["host"], b["host"]
        parts = ", ".join(
            f"{k} {(b[k] - a[k]) / n * 1e6:.0f}" for k in ("client", "server", "bridge", "daemon") if k in a
        )
        print(f"{name} open loop, CPU per request in microseconds: {parts}")
    rate = len(broker_lat) / broker_took
    p99 = pct(broker_lat, 0.99)
    verdict = "met" if p99 <= 10 and rate >= 0.95 * args.rate else "missed"
    print(
        f"broker p99 {p99:.2f} ms at {rate:.0f}/s ({p99 / pct(direct_lat, 0.99):.1f}x direct's p99); "
        f"target 1,000/s with p99 <= 10 ms: {verdict}"
    )


def _cpu(pid: int) -> float:
    """The process's CPU seconds so far (user + system)."""
    return _stat_cpu(f"/proc/{pid}/stat")


def _stat_cpu(stat: str) -> float:
    """CPU seconds (user + system) of a process or thread, from its stat file."""
    fields = Path(stat).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sample(
    daemon: str, server: str, samples: list[tuple[float, float, float]], stop: threading.Event
) -> None:
    """The daemon's and the host server's CPU seconds every 10 ms, with the time (the
    sandbox's clock is the host's): what each spent within each open loop, whose bounds
    the client gives."""
    while not stop.wait(0.01):
        samples.append((time.time(), _stat_cpu(daemon), _stat_cpu(server)))


def _cpu_at(samples: list[tuple[float, float, float]], at: float) -> tuple[float, float]:
    """(the daemon's, the host server's) CPU seconds at the first sample from ``at`` on."""
    found = next((s for s in samples if s[0] >= at), samples[-1] if samples else (0.0, 0.0, 0.0))
    return found[1], found[2]


def _waited(pid: int) -> float | None:
    """Seconds the process's threads have spent runnable but waiting for a CPU, if the
    kernel says (``/proc/PID/task/TID/schedstat``, second field)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def _joined(text: str) -> str:
    """The RESULT line, which the session's terminal wrapped."""
    tail = text.split("RESULT ", 1)[1]
    return "".join(tail.splitlines())


if __name__ == "__main__":
    main()
