"""The agent edits a script after the operator saw it.

Before: `exec -- ./build.sh` waited in the queue, the script was edited, the operator
approved "always", and the edited script ran while the grant was stored for the old
hash; under a standing grant a script rewritten every few ms ran in its edited form
about 1 run in 8. Now the decision applies to nothing when the content changed since it
was shown, and a run starts only with the bytes the fingerprint names.
"""

from __future__ import annotations

import json
import os
import threading

import pytest
from support.daemon import in_background, operation, running_daemon, wait_for, workspace

from console.client import RPCError

pytestmark = pytest.mark.needs_bwrap

APPROVED = b"#!/bin/sh\necho APPROVED\n"
EDITED = b"#!/bin/sh\necho EDITED\n"


@pytest.fixture(scope="module")
def ws():
    return workspace()


@pytest.fixture(scope="module")
def daemon(ws):
    with running_daemon(f"approval_timeout_s = 30\nworkspaces = {json.dumps([str(ws)])}\n") as d:
        yield d


def script(ws, name: str, data: bytes):
    path = ws / name
    path.write_bytes(data)
    path.chmod(0o755)
    return path


def build_op(ws, name: str):
    # The network makes it an escalation, so it waits for the operator.
    return operation(ws, executable=f"./{name}", network="any")


def test_approving_always_after_the_script_was_edited_runs_nothing_and_stores_no_grant(daemon, ws):
    script(ws, "build.sh", APPROVED)
    agent = daemon.agent()
    answer = in_background(lambda: agent.call("operation.exec", {"operation": build_op(ws, "build.sh")}))
    with daemon.operator() as op:
        shown = wait_for(lambda: op.call("pending.list")["pending"])[0]
        (ws / "build.sh").write_bytes(EDITED)  # after the operator saw it
        with pytest.raises(RPCError) as exc:
            op.call("decide", {"target": shown["request_id"], "action": "approve", "scope": "always"})
        assert "changed since shown" in exc.value.message
        assert exc.value.data["reason"] == "content_changed"
        assert op.call("grants.list")["grants"] == []

        # The agent's call submitted the operation as it is now, as a fresh request.
        fresh = wait_for(
            lambda: [p for p in op.call("pending.list")["pending"] if p["request_id"] != shown["request_id"]]
        )[0]
        assert fresh["supersedes"] == shown["request_id"]
        assert fresh["fingerprint"] != shown["fingerprint"]
        op.call("decide", {"target": fresh["request_id"], "action": "deny", "reason": "not that"})
        reply = answer()
        assert reply["result"] is None  # nothing ran: neither the old nor the new bytes
        assert reply["decision"]["verdict"] == "deny"

        story = op.call("request.get", {"request_id": shown["request_id"]})["detail"]
        assert "content_changed" in json.dumps(story)
    agent.close()


def test_a_standing_grant_never_runs_a_script_rewritten_in_a_tight_loop(daemon, ws):
    path = script(ws, "loop.sh", APPROVED)
    agent = daemon.agent()
    first = in_background(lambda: agent.call("operation.exec", {"operation": build_op(ws, "loop.sh")}))
    with daemon.operator() as op:
        shown = wait_for(lambda: op.call("pending.list")["pending"])[0]
        op.call("decide", {"target": shown["request_id"], "action": "approve", "scope": "always"})
    assert first()["result"]["stdout"]["head"] == "APPROVED\n"

    stop = threading.Event()
    writes = [0]

    def rewrite():
        # In place, as `>` or most editors write: truncate, write, every few ms. (A new
        # file renamed over the old one is docs/fingerprint.md §2.3's known limit.)
        while not stop.is_set():
            for data in (EDITED, APPROVED):
                fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
                os.write(fd, data)
                os.close(fd)
                writes[0] += 1
                stop.wait(0.002)

    writer = threading.Thread(target=rewrite, daemon=True)
    writer.start()
    ran = denied = 0
    try:
        for _ in range(200):
            # A version the grant does not cover waits for the operator: don't wait long.
            reply = agent.call("operation.exec", {"operation": build_op(ws, "loop.sh"), "timeout_s": 0.05})
            result = reply["result"]
            if result is None:
                denied += 1
                continue
            if result["outcome"]["state"] == "denied":
                assert result["outcome"]["denial"]["reason"] == "content_changed"
                denied += 1
                continue
            assert result["stdout"]["head"] == "APPROVED\n", (result["stderr"], result["outcome"])
            ran += 1
    finally:
        stop.set()
        writer.join(10)
        agent.close()
    assert writes[0] > 200
    assert ran + denied == 200
    assert ran > 0  # the grant still works for the approved bytes


def test_an_unrestricted_run_starts_from_its_private_copy_even_when_renamed_over(daemon, ws):
    path = script(ws, "free.sh", b'#!/bin/sh\necho APPROVED "$0"\n')
    approved = path.read_bytes()
    free = {**build_op(ws, "free.sh"), "capabilities": [{"kind": "unrestricted"}]}
    agent = daemon.agent()
    first = in_background(lambda: agent.call("operation.exec", {"operation": free}))
    with daemon.operator() as op:
        shown = wait_for(lambda: op.call("pending.list")["pending"])[0]
        op.call("decide", {"target": shown["request_id"], "action": "approve", "scope": "always"})
    head = first()["result"]["stdout"]["head"]
    assert head.startswith("APPROVED /dev/fd/"), head  # $0 names the copy, not the path

    stop = threading.Event()

    def swap():
        # A new file renamed over the script, the way editors save, and back.
        tmp = ws / ".free.sh.tmp"
        while not stop.is_set():
            for data in (EDITED, approved):
                tmp.write_bytes(data)
                tmp.chmod(0o755)
                os.rename(tmp, path)
                stop.wait(0.002)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    ran = 0
    try:
        for _ in range(60):
            reply = agent.call("operation.exec", {"operation": free, "timeout_s": 0.05})
            result = reply["result"]
            if result is None or result["outcome"]["state"] == "denied":
                continue
            assert result["stdout"]["head"].startswith("APPROVED "), result["stdout"]
            ran += 1
    finally:
        stop.set()
        swapper.join(10)
        agent.close()
    assert ran > 0
