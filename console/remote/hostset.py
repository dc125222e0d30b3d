"""How to open an operator connection to each host a console, the web page or a CLI
verb talks to: this machine's socket, or a :class:`~console.remote.link.RemoteHost`
(one SSH connection per host, shared by every connection to it)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from console.client import AsyncClient
from console.remote.contexts import Target

if TYPE_CHECKING:
    from console.remote.link import RemoteHost

Connect = Callable[[], Awaitable[AsyncClient]]


class HostSet:
    def __init__(self, targets: list[Target], state_dir: str | os.PathLike[str] | None) -> None:
        self.targets = {t.name: t for t in targets}
        self.state_dir = state_dir
        self.remote: dict[str, RemoteHost] = {}
        if any(t.url is not None for t in targets):
            # asyncssh takes a quarter of a second to import: only a console with a remote host pays it.
            from console.remote.link import RemoteHost

            self.remote = {t.name: RemoteHost(t.name, t.url) for t in targets if t.url is not None}

    @property
    def names(self) -> list[str]:
        return list(self.targets)

    def connector(self, name: str, client: str) -> Connect:
        remote = self.remote.get(name)
        if remote is not None:
            return lambda: remote.open_client(client)
        state_dir = self.state_dir
        return lambda: AsyncClient.connect(state_dir, role="operator", client=client)

    async def close(self) -> None:
        for host in self.remote.values():
            await host.close()
