"""The held-operation table behind `operation.hold`/`operation.run` (console/daemon/held.py)."""

from __future__ import annotations

import pytest

from console.daemon.held import MAX_HELD, TICKET_TTL_S, HeldTable, TicketError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def decision(n: int) -> dict:
    return {"request_id": f"r-test-{n}", "verdict": "allow"}


def test_a_ticket_is_taken_once_and_names_its_operation():
    table = HeldTable()
    ticket = table.hold("op-1", decision(1))
    assert ticket.startswith("r-test-1:") and len(ticket.split(":")[1]) == 43
    assert table.take(ticket).operation == "op-1"
    with pytest.raises(TicketError, match="already used"):
        table.take(ticket)


def test_a_ticket_expires():
    clock = Clock()
    table = HeldTable(clock)
    ticket = table.hold("op", decision(1))
    clock.now += TICKET_TTL_S + 1
    with pytest.raises(TicketError, match="expired"):
        table.take(ticket)
    assert len(table) == 0


def test_the_table_is_bounded_and_drops_the_oldest():
    table = HeldTable()
    first = table.hold("op", decision(0))
    for n in range(1, MAX_HELD + 1):
        table.hold("op", decision(n))
    assert len(table) == MAX_HELD
    with pytest.raises(TicketError):
        table.take(first)


@pytest.mark.parametrize("ticket", ["", "r-test-1", "r-test-1:", ":secret"])
def test_a_malformed_ticket_says_its_form(ticket):
    with pytest.raises(TicketError, match="REQUEST_ID:SECRET"):
        HeldTable().take(ticket)
