"""An agent that submits and hangs up at once leaves no undecided request (finding 4).

Before: the submit task was cancelled while the request was being stored, so the
request event was written, the request never reached the queue, and the close
handler found nothing to decide: 300 races left 300 requests and 0 decisions.
"""

from __future__ import annotations

import json
import socket

from support.abuse import frame
from support.daemon import operation, running_daemon, wait_for, workspace


def count(op, kind):
    return op.call("history.query", {"kinds": [kind], "limit": 1, "count": True})["count"]


def test_submit_and_close_races_all_end_in_a_decision():
    ws = workspace()
    with running_daemon(f"approval_timeout_s = 60\nworkspaces = {json.dumps([str(ws)])}\n") as d:
        for i in range(300):
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(d.loc.agent_socket))
            # Needs the operator (network), so it would wait in the queue.
            op_ = operation(ws, args=[f"race-{i}"], network="any")
            s.sendall(frame(1, "hello") + frame(2, "operation.submit", {"operation": op_}))
            s.close()
        with d.operator() as op:
            requests = wait_for(lambda: (n := count(op, "request")) >= 300 and n, timeout_s=60)
            assert requests == 300
            assert wait_for(lambda: count(op, "decision") == 300, timeout_s=60)
            assert op.call("pending.list")["pending"] == []
            reasons = {
                r["reason"] for r in op.call("history.query", {"kinds": ["decision"], "limit": 300})["rows"]
            }
            assert reasons == {"agent_disconnected"}
