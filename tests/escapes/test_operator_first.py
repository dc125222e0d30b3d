"""One agent could stall the operator: forty connections of one identity pipelining
oversized requests (each refused by quota) queued their work in the daemon's one event
loop faster than it was done, and the operator's `pending.list` waited behind all of it
for 10-20 s; an operator connection was even dropped (its hello outlived the timeout).

Now an identity may hold at most MAX_CONNECTIONS_PER_AGENT connections, and every agent
frame takes a turn (console/daemon/turns.py): each loop iteration starts agent frames up
to a budget, in arrival order, and the operator's frames take no turn. The figure under
the whole abuse load is in benchmarks/daemon.py (abuse section, beside the quiet one).
"""

from __future__ import annotations

import asyncio
import contextlib

from support.abuse import frame, raw, read_lines

from console.daemon import quotas
from console.daemon.turns import AGENT_BYTES_PER_TURN, AgentTurns


def test_one_identity_cannot_open_more_than_its_connections(daemon):
    with daemon.agent() as first:
        ident = first.hello["agent"]
        extra = []
        try:
            for _ in range(quotas.MAX_CONNECTIONS_PER_AGENT - 1):
                s = raw(daemon.loc.agent_socket)
                s.sendall(frame(1, "hello", {"agent_id": ident["id"], "agent_secret": ident["secret"]}))
                assert "result" in read_lines(s)[0]
                extra.append(s)
            s = raw(daemon.loc.agent_socket)
            s.sendall(frame(1, "hello", {"agent_id": ident["id"], "agent_secret": ident["secret"]}))
            answer = read_lines(s)[0]
            extra.append(s)
            assert answer["error"]["data"]["quota"] == "connections_per_agent"
            assert str(quotas.MAX_CONNECTIONS_PER_AGENT) in answer["error"]["message"]
            # Another identity is not held back by this one's connections.
            with daemon.agent() as other:
                assert other.hello["agent"]["id"] != ident["id"]
        finally:
            for s in extra:
                with contextlib.suppress(OSError):
                    s.close()


def test_agent_frames_wait_their_turn_and_the_operator_goes_between():
    """Twenty agent frames of a full budget each arrive at once; the operator's work,
    scheduled after them, is done after the first turn, not after all twenty."""
    done: list[str] = []

    async def main() -> None:
        turns = AgentTurns()

        async def agent(i: int) -> None:
            await turns.take(AGENT_BYTES_PER_TURN)
            done.append(f"agent {i}")

        async def operator() -> None:
            await asyncio.sleep(0)  # it arrives after the agents' frames
            done.append("operator")

        await asyncio.gather(*(agent(i) for i in range(20)), operator())

    asyncio.run(main())
    assert done.index("operator") <= 2, done
    assert [d for d in done if d != "operator"] == [f"agent {i}" for i in range(20)]  # in arrival order


def test_small_agent_frames_share_a_turn():
    async def main() -> int:
        turns = AgentTurns()
        first_turn = 0

        async def agent() -> None:
            nonlocal first_turn
            await turns.take(100)
            first_turn += 1

        tasks = [asyncio.create_task(agent()) for _ in range(10)]
        await asyncio.sleep(0)  # one iteration: those that fit the budget ran
        seen = first_turn
        await asyncio.gather(*tasks)
        return seen

    assert asyncio.run(main()) == 10
