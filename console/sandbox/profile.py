"""What a confined session adds to an operation's boundary, and the brokered network.

An agent CLI (``agent-console run -- claude``) and every session the operator starts
without ``--unconfined`` run in the same sandbox as an approved command, plus what such
a program needs to work and nothing more:

- its own state, writable: ``~/.claude`` and ``~/.claude.json`` for Claude Code,
  ``~/.codex``, ``~/.gemini``, ``~/.config/opencode``… (console/policy/agents.py, set
  per agent in the policy), with the files that configure its hooks kept read-only
  inside (a rogue agent must not switch off the hook that asks the operator);
- the daemon's **agent** socket, bound alone at the paths clients look for it (the
  runtime directory, and ``<state dir>/run`` for hooks installed with ``--state-dir``):
  its hook keeps asking; the operator socket, the token, the history and the rest of
  the state directory are not there;
- the console's own interpreter and code, read-only, so the hook and ``agent-console
  exec`` run inside;
- the environment the operator started it with, less what points outside the sandbox.

:class:`Egress` is the brokered network: the daemon's per-run Unix socket, bound into
the sandbox, and a bridge inside (console/sandbox/bridge.py) listening on
``127.0.0.1:PORT`` in the sandbox's own network namespace, named by ``HTTP_PROXY``,
``HTTPS_PROXY`` and ``ALL_PROXY``. Names are resolved by the daemon, never inside.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from console.sandbox.surface import EGRESS_DIR

EGRESS_SOCKET = f"{EGRESS_DIR}/broker.sock"
BRIDGE = f"{EGRESS_DIR}/bridge.py"
BRIDGE_PORT = 3128

# Variables of the operator's environment a confined session does not get: they point
# outside the sandbox (agents, buses, displays, the daemon's own settings), or change
# how its programs load code or reach the network, which the sandbox sets itself.
DROPPED = frozenset(
    {
        "PATH",
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "GPG_AGENT_INFO",
        "DBUS_SESSION_BUS_ADDRESS",
        "DBUS_SYSTEM_BUS_ADDRESS",
        "XDG_RUNTIME_DIR",
        "XDG_CACHE_HOME",
        "TMPDIR",
        "TMP",
        "TEMP",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "XAUTHORITY",
        "TMUX",
        "TMUX_PANE",
        "STY",
        "WINDOW",
        "KRB5CCNAME",
        "DOCKER_HOST",
        "CONTAINER_HOST",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "NODE_OPTIONS",
        "PERL5OPT",
        "RUBYOPT",
        "BASH_ENV",
        "ENV",
        "PROMPT_COMMAND",
        "NO_PROXY",
        "no_proxy",
    }
)
DROPPED_PREFIXES = ("LD_", "AGENT_CONSOLE_", "BASH_FUNC_")
DROPPED_SUFFIXES = ("_PROXY", "_proxy")


def passed_on(name: str, value: str) -> bool:
    """Whether the operator's variable ``name`` reaches a confined session."""
    if not name or "=" in name or "\x00" in name or "\x00" in value:
        return False
    return not (name in DROPPED or name.startswith(DROPPED_PREFIXES) or name.endswith(DROPPED_SUFFIXES))


@dataclass(frozen=True, slots=True)
class Egress:
    """A brokered network for one run: the daemon's Unix socket for it (on the host)."""

    socket: str
    port: int = BRIDGE_PORT

    def environment(self) -> dict[str, str]:
        proxy = f"http://127.0.0.1:{self.port}"
        out = {}
        for name in ("HTTP_PROXY", "HTTPS_PROXY"):
            out[name] = out[name.lower()] = proxy
        out["ALL_PROXY"] = out["all_proxy"] = f"socks5h://127.0.0.1:{self.port}"
        out["NO_PROXY"] = out["no_proxy"] = "localhost,127.0.0.1,::1"
        return out


@dataclass(frozen=True, slots=True)
class Profile:
    """What a confined session gets besides its operation's boundary.

    ``writable``: the agent's own state (absolute paths that exist); ``read_only``:
    paths inside those kept read-only; ``agent_socket``: the daemon's agent.sock on the
    host, bound at each of ``socket_paths`` inside; ``runtime``: the console's
    interpreter and code, bound read-only; ``env``: variables set inside (after the
    allowlisted ones, before the sandbox's own PATH, temp and proxy variables).
    """

    writable: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    agent_socket: str = ""
    socket_paths: tuple[str, ...] = ()
    runtime: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


@cache
def console_runtime() -> tuple[str, ...]:
    """The directories the console's interpreter and code live in (canonical, existing)."""
    import console

    found: list[str] = []
    for path in (sys.base_prefix, sys.prefix, str(Path(console.__file__).parent)):
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in found:
            found.append(real)
    return tuple(found)


def interpreter() -> str:
    """The console's Python interpreter (canonical), which runs the bridge inside."""
    return os.path.realpath(sys.executable)


@cache
def bridge_source() -> bytes:
    """The bridge's code, copied into the sandbox at :data:`BRIDGE` (plan.py)."""
    return (Path(__file__).parent / "bridge.py").read_bytes()


def bridged(argv: list[str] | tuple[str, ...], egress: Egress) -> list[str]:
    """``argv`` started by the bridge, which listens first and then runs it."""
    return [
        interpreter(),
        "-I",
        "-S",
        BRIDGE,
        f"127.0.0.1:{egress.port}",
        EGRESS_SOCKET,
        "--",
        *argv,
    ]


def caller_environment(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The operator's variables that reach a confined session, sorted."""
    return tuple(sorted((k, v) for k, v in env.items() if passed_on(k, v)))
