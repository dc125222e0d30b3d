"""Two agents under one supervisor never share an identity, nor a grant.

Before: a per-call client (`agent-console exec`, the hook) named as its agent the first
non-shell ancestor, and the daemon accepted any ancestor reached only through sessions
without a terminal. A supervisor with no terminal that does not lead its session (a CI
runner, an IDE's extension host) that starts agents with setsid was that ancestor for
all of them: every process was one identity, and a `session` grant approved for agent A
let an unrelated tree B run the same command unasked. The console showed `SESSION -`.

Now such a supervisor is never named across the sessions it starts: each per-call
client there is an anonymous identity of its own, shown as such, never given a session
grant; a grant for A's identity does not hold for B.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from support.daemon import wait_for, workspace

from console.client import RPCError
from console.protocol.jsonrpc import INVALID_PARAMS

pytestmark = pytest.mark.needs_bwrap

# The launcher leads a session without a terminal and forks the supervisor, which is in
# that session but does not lead it. On each line of stdin the supervisor starts one
# agent tree in a session of its own (setsid), which asks to run the same command.
SUPERVISOR = textwrap.dedent(
    """
    import os, subprocess, sys
    state, ws = sys.argv[1], sys.argv[2]
    if os.fork():
        os.wait()
        sys.exit(0)
    trees = []
    for line in sys.stdin:
        name = line.strip()
        command = (
            f"cd {ws} && {sys.executable} -m console exec --state-dir {state} --network "
            f"--justification {name} -- /bin/echo same-command"
        )
        trees.append(subprocess.Popen(["setsid", "sh", "-c", command]))
    for tree in trees:
        tree.wait()
    """
)


def pending_of(op, name: str) -> dict:
    def find():
        return [p for p in op.call("pending.list")["pending"] if p["operation"]["justification"] == name]

    return wait_for(find, timeout_s=30)[0]


def test_two_trees_under_one_supervisor_are_two_identities_and_no_grant_crosses(daemon):
    ws = workspace()
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, str(daemon.state_dir), str(ws)],
        stdin=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert supervisor.stdin is not None
    try:
        with daemon.operator() as op:
            supervisor.stdin.write("A\n")
            supervisor.stdin.flush()
            a = pending_of(op, "A")
            # A session grant for A's identity (made by hand: the console refuses one, below).
            op.call(
                "grants.add",
                {"fingerprint": a["fingerprint"], "scope": "session", "session_id": a["agent_id"]},
            )
            op.call("decide", {"target": a["request_id"], "action": "approve", "scope": "once"})

            supervisor.stdin.write("B\n")
            supervisor.stdin.flush()
            b = pending_of(op, "B")  # asked: not settled by A's grant
            assert b["fingerprint"] == a["fingerprint"]
            assert b["agent_id"] != a["agent_id"]
            assert a["agent"]["anonymous"] is True and a["agent"]["root_pid"] is None
            assert b["agent"]["anonymous"] is True
            # A session grant for an anonymous identity would hold for nothing: refused.
            with pytest.raises(RPCError) as refused:
                op.call("decide", {"target": b["request_id"], "action": "approve", "scope": "session"})
            assert refused.value.code == INVALID_PARAMS and "anonymous" in refused.value.message

            listed = daemon.cli("pending")
            assert listed.returncode == 0, listed.stderr
            rows = [line for line in listed.stdout.splitlines() if line.startswith(b["request_id"])]
            assert rows and f"anonymous {b['agent_id'][:10]}" in rows[0], listed.stdout
            op.call("decide", {"target": b["request_id"], "action": "deny", "reason": "not B"})
    finally:
        supervisor.stdin.close()
        supervisor.wait(60)
