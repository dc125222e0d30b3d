"""One-time link tickets: how a console over SSH says hello on operator.sock without the
token (docs/remote.md). Real daemon, real sockets."""

from __future__ import annotations

import socket

import pytest
from support.daemon import DaemonProcess

from console.client import Client, RPCError
from console.daemon.link_tickets import MAX_TICKETS, LinkTickets
from console.protocol.jsonrpc import INVALID_PARAMS, UNAUTHORIZED


def raw_operator(d: DaemonProcess) -> Client:
    """An operator.sock connection that has not said hello."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(d.loc.operator_socket))
    return Client(sock, "operator", None)


def test_a_ticket_says_hello_once(daemon: DaemonProcess) -> None:
    with daemon.operator() as op:
        answer = op.call("link.ticket")
    assert answer["socket"] == str(daemon.loc.operator_socket)
    with raw_operator(daemon) as first:
        assert first.call("hello", {"ticket": answer["ticket"]})["role"] == "operator"
        assert first.call("pending.list")["count"] >= 0  # it is the operator's now
    with raw_operator(daemon) as second, pytest.raises(RPCError) as refused:
        second.call("hello", {"ticket": answer["ticket"]})
    assert refused.value.code == UNAUTHORIZED
    with raw_operator(daemon) as guess, pytest.raises(RPCError) as wrong:
        guess.call("hello", {"ticket": "x" * 43})
    assert wrong.value.code == UNAUTHORIZED


def test_a_ticket_is_no_power_on_agent_sock_and_cannot_be_asked_there(daemon: DaemonProcess) -> None:
    with daemon.operator() as op:
        ticket = op.call("link.ticket")["ticket"]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(daemon.loc.agent_socket))
    with Client(sock, "agent", None) as agent:
        with pytest.raises(RPCError) as refused:
            agent.call("hello", {"ticket": ticket})
        assert refused.value.code == INVALID_PARAMS
    with daemon.agent() as agent, pytest.raises(RPCError) as not_here:
        agent.call("link.ticket")
    assert not_here.value.code == -32601


def test_tickets_expire_and_the_table_is_bounded() -> None:
    now = [100.0]
    table = LinkTickets(clock=lambda: now[0])
    old = table.mint()
    now[0] += 31
    assert not table.redeem(old)
    first = table.mint()
    for _ in range(MAX_TICKETS):
        table.mint()
    assert len(table) == MAX_TICKETS
    assert not table.redeem(first)  # the oldest was dropped
