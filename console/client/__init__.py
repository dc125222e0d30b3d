"""Python clients for the daemon: :class:`AsyncClient` (asyncio) and :class:`Client` (blocking).

A call is ``request(params)``: the method's params Struct (console/protocol/requests.py)
in, its result Struct (console/protocol/results.py) out. Agents submit operations;
operators connect with ``role="operator"`` (the token is read from the state directory).
Every failure to reach the daemon is :class:`DaemonUnreachable` — never a silent allow.
Events and results are checked against their types (console/protocol/events.py,
results.py) as they arrive: an answer that is not its method's result fails the call
with :class:`ResultError`, an :class:`RPCError`. ``call(method, params)`` is for relaying
raw JSON (a method this client does not know); it returns the answer as sent.

    from console.client import Client
    from console.protocol.requests import OperationSubmit
    with Client.connect() as c:
        answer = c.request(OperationSubmit(operation={
            "kind": "git", "executable": "git", "args": ["push"],
            "workspace_root": "/home/me/project", "network": "any"}))
        if answer.verdict != "allow": ...
"""

from typing import TYPE_CHECKING

from console.client.blocking import Client
from console.client.errors import DaemonTimedOut, DaemonUnreachable, RPCError
from console.protocol.results import ResultError

if TYPE_CHECKING:
    from console.client.asyncclient import AsyncClient

__all__ = ["AsyncClient", "Client", "DaemonTimedOut", "DaemonUnreachable", "RPCError", "ResultError"]


def __getattr__(name: str) -> object:
    """:class:`AsyncClient` when first asked for: asyncio is most of a short-lived client's
    start-up (a hook, `agent-console run`) and they do not use it."""
    if name == "AsyncClient":
        from console.client.asyncclient import AsyncClient

        return AsyncClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
