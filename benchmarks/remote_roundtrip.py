"""A decision's round trip over the SSH link, beside the same over the local socket.

    python benchmarks/remote_roundtrip.py [--decisions 300]

One "host": a real OpenSSH sshd on 127.0.0.2 with its own daemon and state
(tests/support/sshd.py), every request left pending by its policy, an agent process on
it keeping requests waiting. The operator decides them one by one, in rotation through
three connections to the same daemon, so the three are measured side by side in one
run:

- the reference: ``operator.sock`` on the host itself (the local figure);
- the link as the console opens it: a ``direct-streamlocal`` channel (ticketed hello);
- the fallback: ``agent-console daemon dial-stdio`` on an exec channel.

Each figure is the time of the ``decide`` call (the decision is committed to the
history before the answer). Target: the link's median at most 2 ms above the
local median, on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support.sshd import ssh_lab  # noqa: E402

from console.client import AsyncClient  # noqa: E402
from console.remote.link import RemoteHost  # noqa: E402
from console.remote.url import parse_host_url  # noqa: E402

POLICY = 'approval = "untrusted"\napproval_timeout_s = 3600\n'


async def run(decisions: int) -> None:
    with ssh_lab("b", policy=POLICY) as lab:
        host = lab.hosts[0]
        ws = host.base / "ws" / "project"
        (ws / ".git").mkdir(parents=True)
        agent = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "tui_keypress.py"),
                "--agent",
                str(host.daemon.state_dir),
                str(ws),
                str(decisions + 10),
            ],
            stdout=subprocess.PIPE,
        )
        try:
            assert agent.stdout is not None
            agent.stdout.readline()
            local = await AsyncClient.connect(host.daemon.loc, role="operator", client="bench-local")
            while (await local.call("daemon.status"))["pending"] < decisions:
                await asyncio.sleep(0.1)
            streamlocal_host = RemoteHost("b", parse_host_url(host.url()))
            stdio_host = RemoteHost("b", parse_host_url(host.url(transport="stdio")))
            over_ssh = await streamlocal_host.open_client("bench-streamlocal")
            over_stdio = await stdio_host.open_client("bench-stdio")
            assert streamlocal_host.transport == "streamlocal", streamlocal_host.transport
            clients = {"local socket": local, "ssh streamlocal": over_ssh, "ssh dial-stdio": over_stdio}
            times: dict[str, list[float]] = {name: [] for name in clients}
            listed = (await local.call("pending.list", {"limit": 1000}))["pending"]
            names = list(clients)
            for i, item in enumerate(listed[:decisions]):
                name = names[i % len(names)]
                t0 = time.perf_counter()
                await clients[name].call(
                    "decide", {"target": item["request_id"], "action": "deny", "note": "bench"}
                )
                times[name].append((time.perf_counter() - t0) * 1000)
            for client in clients.values():
                await client.close()
            await streamlocal_host.close()
            await stdio_host.close()
        finally:
            agent.kill()
            agent.wait()
    base = statistics.median(times["local socket"])
    print(f"decide round trip, {decisions} decisions in rotation (median / p90 ms)")
    for name, values in times.items():
        ordered = sorted(values)
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        med = statistics.median(values)
        extra = (
            "" if name == "local socket" else f"   +{med - base:.3f} ms, {med / base:.2f}x the local socket"
        )
        print(f"  {name:<16} {med:7.3f} / {p90:7.3f}{extra}")
    worst = statistics.median(times["ssh streamlocal"]) - base
    print(
        f"  target: streamlocal median <= local + 2 ms: {'met' if worst <= 2 else 'NOT met'} (+{worst:.3f} ms)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--decisions", type=int, default=300)
    asyncio.run(run(ap.parse_args().decisions))


if __name__ == "__main__":
    main()
