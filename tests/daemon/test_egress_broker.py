"""The egress broker, offline: a real daemon in a network namespace of its own, real bwrap.

Names come from a private /etc/hosts (tests/support/netns.py): two servers stand for the
internet (allowed.test over HTTPS, asked.test over HTTP), 10.9.0.5 for a private network,
and the namespace's own loopback for a host-only service. A sandboxed command asks for
the network; what it reaches is decided per domain by the daemon, which resolves names
itself and connects to the address it checked.

Before the broker, an approved `network = "any"` shared the host's network namespace:
every host and port, the host's loopback services and abstract sockets.
"""

from __future__ import annotations

import json
import threading

import pytest
from support.daemon import in_background, running_daemon, wait_for, workspace
from support.netns import available, network

pytestmark = [pytest.mark.needs_bwrap, pytest.mark.needs_root]

HOSTS = {
    "allowed.test": "198.51.100.10",
    "asked.test": "198.51.100.11",
    "sneaky.test": "127.0.0.1",
    "tenny.test": "10.9.0.5",
    "metadata.test": "169.254.169.254",
}
POLICY = (
    "approval_timeout_s = 60\n"
    'network = { allow = ["allowed.test", "sneaky.test", "tenny.test", "metadata.test"] }\n'
)

# Runs inside the sandbox: fetch each URL through the proxy the sandbox names, print one
# JSON line per URL; then try the network without the proxy, and the resolver.
CLIENT = r"""
import json, os, socket, ssl, sys, urllib.request
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))
for url in sys.argv[1:]:
    try:
        out = {"url": url, "body": opener.open(url, timeout=30).read().decode()}
    except Exception as e:
        out = {"url": url, "error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out), flush=True)
def attempt(what, fn):
    try:
        fn(); print(json.dumps({"url": what, "body": "reached"}))
    except Exception as e:
        print(json.dumps({"url": what, "error": f"{type(e).__name__}: {e}"}))
attempt("direct", lambda: socket.create_connection(("198.51.100.10", 443), timeout=5))
attempt("resolve", lambda: socket.getaddrinfo("allowed.test", 443))
def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07allowed\x04test\x00\x00\x01\x00\x01", ("198.51.100.10", 53))
    s.recv(512)
attempt("dns", dns)
def processes():
    # What runs in the sandbox besides this program: no bridge once the broker took its listener.
    cmdlines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdlines.append(open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
        except OSError:
            pass
    return cmdlines
print(json.dumps({"url": "processes", "body": processes()}))
"""


@pytest.fixture(scope="module")
def net():
    why = available()
    if why:
        pytest.skip(why)
    with network(HOSTS, ["198.51.100.10", "198.51.100.11", "10.9.0.5"]) as ns:
        ns.serve("198.51.100.10", 443, "allowed", tls=True)
        ns.serve("198.51.100.11", 80, "asked")
        ns.serve("10.9.0.5", 80, "tenny")
        ns.serve("127.0.0.1", 80, "host-only")
        yield ns


@pytest.fixture(scope="module")
def daemon(net):
    with running_daemon(POLICY, prefix=net.prefix) as d:
        yield d


def fetch_op(ws, *urls: str) -> dict:
    import sys

    return {
        "kind": "process",
        "executable": sys.executable,
        "args": ["-I", "-S", "-c", CLIENT, *urls],
        "workspace_root": str(ws),
        "network": "any",
        "justification": "fetch",
    }


class Operator(threading.Thread):
    """Approves the run itself, then answers its network items as told: action per host."""

    def __init__(self, daemon, answers: dict[str, dict]) -> None:
        super().__init__(daemon=True)
        self.d, self.answers = daemon, answers
        self.seen: list[dict] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.d.operator() as op:
                done: set[str] = set()
                while not self.stop.is_set():
                    for item in op.call("pending.list")["pending"]:
                        rid = item["request_id"]
                        if rid in done:
                            continue
                        done.add(rid)
                        self.seen.append(item)
                        if item["operation"]["tool"] == "network":
                            host = item["operation"]["args"][0]
                            op.call("decide", {"target": rid, **self.answers[host]})
                        else:
                            op.call("decide", {"target": rid, "action": "approve"})
                    self.stop.wait(0.05)
        except BaseException as exc:
            self.error = exc

    def __enter__(self) -> Operator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join(10)
        assert self.error is None, self.error


def run(daemon, ws, *urls: str) -> dict[str, dict]:
    with daemon.agent() as agent:
        answer = agent.call("operation.exec", {"operation": fetch_op(ws, *urls), "stream": False})
    assert answer["decision"]["verdict"] == "allow", answer
    result = answer["result"]
    lines = [json.loads(line) for line in result["stdout"]["head"].splitlines() if line.startswith("{")]
    assert lines, result
    return {line["url"]: line for line in lines}


def test_the_allowed_domain_answers_and_the_sandbox_has_no_network_or_names_of_its_own(daemon):
    ws = workspace()
    with Operator(daemon, {}) as operator:
        got = run(daemon, ws, "https://allowed.test/a")
    assert got["https://allowed.test/a"]["body"] == "hello from allowed /a"
    # Only through the broker: no route out, no resolver inside.
    assert "Network is unreachable" in got["direct"]["error"], got["direct"]
    assert "gaierror" in got["resolve"]["error"], got["resolve"]
    assert "error" in got["dns"], got["dns"]
    # The broker accepts the program's connections itself: the bridge handed its listener over.
    # (bwrap, the sandbox's first process, keeps the command line it was started with.)
    argvs = [c.split("\x00") for c in got["processes"]["body"]]
    assert not [a for a in argvs if "bridge.py" in " ".join(a) and not a[0].endswith("bwrap")], argvs
    assert [i["operation"]["tool"] for i in operator.seen] == ["process"]  # only the run itself was asked
    with daemon.operator() as op:
        rows = op.call("history.query", {"kinds": ["connection"], "limit": 50})["rows"]
    mine = [r for r in rows if r["workspace_root"] == str(ws)]
    assert [(r["command"], r["verdict"], r["body"]["address"]) for r in mine] == [
        ("connect allowed.test:443", "allow", "198.51.100.10")
    ]


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://sneaky.test/", "127.0.0.1, a loopback address"),
        ("http://tenny.test/", "10.9.0.5, a private or reserved address"),
        ("http://metadata.test/", "169.254.169.254, a cloud metadata address"),
        ("https://allowed.test:8443/", "port 8443 is not allowed"),
    ],
)
def test_allowed_names_that_lead_to_private_addresses_or_other_ports_are_refused(daemon, url, said):
    ws = workspace()
    with Operator(daemon, {}):
        got = run(daemon, ws, url)
    error = got[url]["error"]
    assert "403" in error and said in error, error
    with daemon.operator() as op:
        rows = op.call("history.query", {"kinds": ["connection"], "limit": 50})["rows"]
    (row,) = [r for r in rows if r["workspace_root"] == str(ws)]
    assert row["verdict"] == "deny" and said in row["reason"] and row["body"]["address"] == ""


def test_an_unknown_domain_is_held_as_an_approval_item_then_approved(daemon):
    ws = workspace()
    with Operator(daemon, {"asked.test": {"action": "approve"}}) as operator:
        got = run(daemon, ws, "http://asked.test/x")
    assert got["http://asked.test/x"]["body"] == "hello from asked /x"
    (item,) = [i for i in operator.seen if i["operation"]["tool"] == "network"]
    assert item["command"] == "connect asked.test"
    assert item["evaluation"]["escalations"][0]["kind"] == "external_network"
    assert item["evaluation"]["escalations"][0]["scope"] == "asked.test"
    assert "asked.test:80 (198.51.100.11)" in item["operation"]["justification"]


def test_a_denied_domain_answers_403_with_the_reason(daemon):
    ws = workspace()
    answers = {"asked.test": {"action": "deny", "reason": "not on a Tuesday"}}
    with Operator(daemon, answers):
        got = run(daemon, ws, "http://asked.test/y")
    error = got["http://asked.test/y"]["error"]
    assert "403" in error and "the operator denied asked.test" in error and "not on a Tuesday" in error, error


def test_always_is_a_grant_for_that_domain_in_that_workspace(daemon):
    ws = workspace()
    with Operator(daemon, {"asked.test": {"action": "approve", "scope": "always"}}) as first:
        run(daemon, ws, "http://asked.test/1")
    assert [i["command"] for i in first.seen if i["operation"]["tool"] == "network"] == ["connect asked.test"]
    with Operator(daemon, {}) as second:
        got = run(daemon, ws, "http://asked.test/2")
    assert got["http://asked.test/2"]["body"] == "hello from asked /2"
    assert [i for i in second.seen if i["operation"]["tool"] == "network"] == []


def test_a_client_that_hangs_up_withdraws_its_item(daemon):
    ws = workspace()
    with daemon.operator() as op, daemon.agent() as agent:
        script = (
            "import socket,os\n"
            "s=socket.create_connection(('127.0.0.1',3128))\n"
            "s.sendall(b'CONNECT asked.test:443 HTTP/1.1\\r\\n\\r\\n')\n"
            "import time; time.sleep(1.5)\n"
        )
        op_ = dict(fetch_op(ws), args=["-I", "-S", "-c", script])
        done = in_background(lambda: agent.call("operation.exec", {"operation": op_, "stream": False}))
        first = wait_for(lambda: op.call("pending.list")["pending"])[0]
        op.call("decide", {"target": first["request_id"], "action": "approve"})
        held = wait_for(
            lambda: [p for p in op.call("pending.list")["pending"] if p["operation"]["tool"] == "network"]
        )[0]
        done()
        wait_for(
            lambda: held["request_id"] not in {p["request_id"] for p in op.call("pending.list")["pending"]}
        )
        detail = op.call("request.get", {"request_id": held["request_id"]})["detail"]
    assert json.dumps(detail).count("agent_disconnected") >= 1


SOCKS = r"""
import socket, ssl, sys
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(b"\x05\x01\x00")
assert s.recv(2) == b"\x05\x00"
name = sys.argv[1].encode()
s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + (443).to_bytes(2, "big"))
reply = s.recv(10)
if reply[1] != 0:
    print("SOCKS-REFUSED", reply[1]); sys.exit(0)
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
t = ctx.wrap_socket(s, server_hostname=sys.argv[1])
t.sendall(b"GET /socks HTTP/1.0\r\nHost: x\r\n\r\n")
data = b""
while chunk := t.recv(4096):
    data += chunk
print("SOCKS-BODY", data.split(b"\r\n\r\n", 1)[1].decode())
"""


@pytest.mark.parametrize(
    ("name", "expect"),
    [("allowed.test", "SOCKS-BODY hello from allowed /socks"), ("sneaky.test", "SOCKS-REFUSED 2")],
)
def test_socks5_with_names_resolved_by_the_broker(daemon, name, expect):
    ws = workspace()
    op_ = dict(fetch_op(ws), args=["-I", "-S", "-c", SOCKS, name])
    with Operator(daemon, {}), daemon.agent() as agent:
        answer = agent.call("operation.exec", {"operation": op_, "stream": False})
    assert expect in answer["result"]["stdout"]["head"], answer["result"]
