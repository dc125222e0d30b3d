"""The secret set (console/policy/secrets.py) as paths the sandbox hides.

The sandbox covers every home with scratch space anyway, so a secret inside a home is
hidden only where something would show it again: a policy ``readable`` path that holds
it (``readable = ["~/.config"]`` must not show ``~/.config/gh/hosts.yml``). Secrets
outside the homes (``/etc/shadow``, host keys: readable inside when the daemon runs as
root) are hidden always.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from console.contract.operation import is_within
from console.policy.secrets import hidden_patterns
from console.sandbox.home import expand


def secret_paths(env: Mapping[str, str], masks: Iterable[str], readable: Iterable[str]) -> list[str]:
    """The existing secret paths a command would otherwise see (as named, not resolved)."""
    masks, readable = tuple(masks), tuple(readable)
    return [
        path
        for path in expand(hidden_patterns(), env, "hidden")
        if not any(is_within(path, m) for m in masks) or any(is_within(path, r) for r in readable)
    ]
