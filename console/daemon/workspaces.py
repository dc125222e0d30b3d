"""The operator's trusted workspaces: the policy's ``workspaces`` plus a runtime list.

The runtime list lives in the history as ``workspace_trusted``/``workspace_untrusted``
events (hash-chained like every other record), written by ``agent-console workspaces
add|remove`` and by an "always" approval of a request whose workspace was new. A
request whose ``workspace_root`` is under none of these roots is the escalation
``new_workspace``; one that names a directory that can never be a workspace (``/``, a
home, ``/tmp``, a system directory, the console's state) is refused when it is parsed,
with the limits kept here.
"""

from __future__ import annotations

import asyncio
import os
import posixpath
import time
from collections.abc import Callable
from typing import Any

import msgspec

from console.contract.host import host_workspace_limits
from console.contract.workspace import WorkspaceLimits, is_trusted
from console.daemon.errors import InvalidParams, NotFound
from console.daemon.policy_source import PolicySource
from console.locations import Locations
from console.policy import PolicyConfig, PolicyError
from console.protocol.results import TrustedWorkspace
from console.store import Store, workspace_event


def limits_for(loc: Locations) -> WorkspaceLimits:
    """What can never be a workspace (or a trusted root) on this host, for this state dir."""
    return host_workspace_limits(map(str, loc.private_paths()))


def check_policy_roots(limits: WorkspaceLimits, config: PolicyConfig) -> None:
    """The policy's ``workspaces`` against this host's homes and the console's state (the
    policy file itself refuses /, system and shared directories): a refused root is a
    broken policy, never a quietly trusted parent of every directory below it."""
    for i, root in enumerate(config.workspaces):
        why = limits.trust_refusal(os.path.realpath(root))
        if why is not None:
            raise PolicyError(f"workspaces[{i}]", why)


class WorkspaceTrust:
    def __init__(
        self,
        loc: Locations,
        policy: PolicySource,
        store: Store,
        *,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.policy = policy
        self.store = store
        self.limits: WorkspaceLimits = limits_for(loc)
        self.runtime: dict[str, dict[str, Any]] = {}
        self._policy_roots: tuple[PolicyConfig, tuple[str, ...]] | None = None
        self.on_change = on_change  # the trusted set changed (the daemon publishes its status)

    async def load(self) -> None:
        rows = await asyncio.to_thread(self.store.trusted_workspaces)
        self.runtime = {r["workspace_root"]: r for r in rows}

    def policy_roots(self) -> tuple[str, ...]:
        """The policy's roots in canonical form (a symlinked ~/src still matches)."""
        config = self.policy()
        if self._policy_roots is None or self._policy_roots[0] is not config:
            roots = {os.path.realpath(r) for r in config.workspaces}
            self._policy_roots = (config, tuple(sorted(r for r in roots if r != "/")))
        return self._policy_roots[1]

    def roots(self) -> tuple[str, ...]:
        return (*self.policy_roots(), *self.runtime)

    def is_trusted(self, root: str) -> bool:
        return is_trusted(root, self.roots())

    def to_list(self) -> list[TrustedWorkspace]:
        out = [
            TrustedWorkspace(workspace_root=r, source="policy", at=None, request_id="")
            for r in self.policy_roots()
        ]
        out += [msgspec.convert(r, TrustedWorkspace) for r in self.runtime.values()]
        return out

    # ------------------------------------------------------------------ changes

    def check_root(self, path: str) -> str:
        """``path`` as a trusted root, or an RPC error naming the field and the fix."""
        field = "workspace_root"
        if not path.startswith("/"):
            raise InvalidParams(f"{field}: must be an absolute path (starting with /)")
        clean = posixpath.normpath(path)
        if not os.path.isdir(clean):
            raise InvalidParams(f"{field}: must name an existing directory")
        real = os.path.realpath(clean)
        if real != clean:
            raise InvalidParams(
                f"{field}: is or goes through a symlink; trust the real directory instead: {real}",
            )
        why = self.limits.trust_refusal(real)
        if why is not None:
            raise InvalidParams(f"{field}: {why}")
        return real

    async def add(self, path: str, *, source: str, request_id: str = "", note: str = "") -> dict[str, Any]:
        root = self.check_root(path) if source == "operator" else path
        if root in self.runtime:
            return {"workspace_root": root, "added": False, **self.runtime[root]}
        now = time.time()
        event = workspace_event(
            trusted=True, root=root, at=now, source=source, request_id=request_id, note=note
        )
        await asyncio.wrap_future(self.store.append(event))
        entry = {"workspace_root": root, "at": now, "source": source, "request_id": request_id}
        self.runtime[root] = entry
        self._changed()
        return {"added": True, **entry}

    async def remove(self, path: str) -> dict[str, Any]:
        root = posixpath.normpath(path) if path.startswith("/") else path
        if root not in self.runtime:
            real = os.path.realpath(root) if root.startswith("/") else root
            if real in self.runtime:
                root = real
            elif root in self.policy_roots() or real in self.policy_roots():
                raise InvalidParams(
                    "workspace_root: is trusted by the policy's `workspaces`; remove it from policy.toml",
                )
            else:
                raise NotFound("workspace_root: is not among the trusted workspaces (see `workspaces list`)")
        await asyncio.wrap_future(
            self.store.append(workspace_event(trusted=False, root=root, at=time.time(), source="operator"))
        )
        self.runtime.pop(root, None)
        self._changed()
        return {"workspace_root": root, "removed": True}

    def _changed(self) -> None:
        self.on_change()
