"""Python clients for the daemon: :class:`AsyncClient` (asyncio) and :class:`Client` (blocking).

Agents use ``submit``; operators connect with ``role="operator"`` (the token is read
from the state directory) and use the other helpers or :meth:`call` directly. Every
failure to reach the daemon is :class:`DaemonUnreachable` — never a silent allow.

    from console.client import Client
    with Client.connect() as c:
        answer = c.submit({"kind": "git", "executable": "git", "args": ["push"],
                           "workspace_root": "/home/me/project", "network": "any"})
        if answer["verdict"] != "allow": ...
"""

from console.client.asyncclient import AsyncClient
from console.client.blocking import Client
from console.client.errors import DaemonUnreachable, RPCError

__all__ = ["AsyncClient", "Client", "DaemonUnreachable", "RPCError"]
