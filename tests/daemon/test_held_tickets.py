"""The held-operation table behind `operation.hold`/`operation.run` (console/daemon/held.py)."""

from __future__ import annotations

import pytest

from console.daemon.held import MAX_HELD, TICKET_TTL_S, HeldTable, TicketError
from console.protocol.records import AuthorizationRecord
from console.protocol.results import OperationDecision


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def decision(n: int) -> OperationDecision:
    return OperationDecision(
        request_id=f"r-test-{n}", verdict="allow", reason="operator_approved", source="operator", scope="once",
        fingerprint="ab" * 32, note="", escalations=[], decided_at=0.0, latency_ms=0.0, denials=[],
        authorization=AuthorizationRecord(fingerprint="ab" * 32, workspace_root="/w", source="operator", grant_id=""),
    )  # fmt: skip


def command(rid: str) -> str:
    return f"/usr/bin/python3 -I -m console exec --ticket {rid}"


def issue(table: HeldTable, n: int, agent: str = "a-1") -> str:
    held, secret = table.issue(f"op-{n}", decision(n), agent, command)
    return f"{held.request_id}:{secret}"


def test_a_ticket_is_taken_once_and_names_its_operation():
    table = HeldTable()
    ticket = issue(table, 1)
    assert ticket.startswith("r-test-1:") and len(ticket.split(":")[1]) == 43
    assert table.take(ticket, "a-1").operation == "op-1"
    with pytest.raises(TicketError, match="already used"):
        table.take(ticket, "a-1")


def test_a_ticket_runs_only_for_its_agent_and_a_wrong_one_spends_nothing():
    dropped: list[str] = []
    table = HeldTable(on_drop=dropped.append)
    ticket = issue(table, 1, agent="a-1")
    with pytest.raises(TicketError, match="another agent identity"):
        table.take(ticket, "a-2")
    rid, _ = ticket.split(":")
    with pytest.raises(TicketError):
        table.take(f"{rid}:{'A' * 43}", "a-1")
    assert dropped == []
    assert table.take(ticket, "a-1").operation == "op-1"
    assert dropped == [rid]  # its secret file goes with it


def test_inside_its_sandbox_the_id_alone_redeems_for_its_agent_only():
    table = HeldTable()
    rid = issue(table, 1, agent="a-1").split(":")[0]
    with pytest.raises(TicketError, match="REQUEST_ID:SECRET"):
        table.take(rid, "a-1")  # not in the sandbox: the secret is needed
    with pytest.raises(TicketError, match="another agent identity"):
        table.take(rid, "a-2", in_sandbox=True)
    assert table.take(rid, "a-1", in_sandbox=True).operation == "op-1"
    with pytest.raises(TicketError, match="already used"):
        table.take(rid, "a-1", in_sandbox=True)


def test_the_issued_command_is_known_byte_for_byte_and_only_to_its_agent():
    table = HeldTable()
    ticket = issue(table, 7, agent="a-1")
    exact = command("r-test-7")
    assert table.issued(exact, "a-1") is not None
    assert table.issued(exact, "a-2") is None
    for near in (exact + " ", exact.upper(), exact + "\n", "x" + exact, exact.replace("7", "8")):
        assert table.issued(near, "a-1") is None
    table.take(ticket, "a-1")
    assert table.issued(exact, "a-1") is None  # used: no dialog for it any more


def test_a_ticket_expires():
    clock = Clock()
    dropped: list[str] = []
    table = HeldTable(clock, on_drop=dropped.append)
    ticket = issue(table, 1)
    clock.now += TICKET_TTL_S + 1
    with pytest.raises(TicketError, match="expired"):
        table.take(ticket, "a-1")
    assert len(table) == 0 and dropped == ["r-test-1"]


def test_the_table_is_bounded_and_drops_the_oldest():
    table = HeldTable()
    first = issue(table, 0)
    for n in range(1, MAX_HELD + 1):
        issue(table, n)
    assert len(table) == MAX_HELD
    with pytest.raises(TicketError):
        table.take(first, "a-1")


@pytest.mark.parametrize("ticket", ["", "r-test-1", "r-test-1:", ":secret"])
def test_a_malformed_ticket_says_its_form(ticket):
    with pytest.raises(TicketError, match="REQUEST_ID:SECRET"):
        HeldTable().take(ticket, "a-1")
