"""Confined sessions: an agent CLI, or any program the operator starts, inside the sandbox.

``agent-console run -- claude`` and ``sessions new`` without ``--unconfined`` start the
program as a session the daemon owns, in the same bubblewrap boundary an approved
command gets (console/sandbox/plan.py) plus what the agent needs to work
(console/sandbox/profile.py): the workspace writable, its own state writable with its
hook settings kept read-only, the agent socket alone of the console's, the console's
code, and the network through the egress broker with its model API's domains allowed
(console/policy/agents.py).

This module turns what the operator asked for into that: the operation the sandbox is
prepared from (never submitted: the operator's own start is its approval), the profile,
and the egress context. Refusals name what to change.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from console.contract.operation import Kind, Mode, Network, Operation, Origin, WorkspaceAccess
from console.daemon.errors import InvalidParams
from console.locations import Locations
from console.policy import PolicyConfig
from console.policy.agents import AgentProfile, agent_for
from console.sandbox.home import home_of
from console.sandbox.profile import Profile, caller_environment, console_runtime

# The variable clients read the console's state directory from (console/locations.py).
ENV_HOME = "AGENT_CONSOLE_HOME"


@dataclass(frozen=True)
class Launch:
    """A confined session, ready to prepare."""

    operation: Operation
    profile: Profile
    agent: AgentProfile


def _expand(path: str, home: str) -> str:
    return home.rstrip("/") + path[1:] if path.startswith("~/") else path


def _ensure_state(paths: list[str]) -> list[str]:
    """The agent's state paths that exist, directories created when missing (0700): an
    agent's first start in the sandbox must keep what it writes there (its login). A
    name with a suffix (``~/.claude.json``) is a file: it is bound only once it exists."""
    out: list[str] = []
    for path in paths:
        if os.path.lexists(path):
            out.append(path)
            continue
        name = os.path.basename(path).lstrip(".")
        if "." in name:
            continue
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError:
            continue
        out.append(path)
    return out


def executable(program: str, path: tuple[str, ...]) -> str:
    """``program`` as an absolute path: as given when it has a slash, else found on the
    sandbox's PATH (the toolchains), as a shell would; raises InvalidParams. Not resolved:
    a launcher reached by a link (a virtualenv's python, node's bin links) needs its name."""
    if "/" in program:
        named = os.path.abspath(program)
        real = os.path.realpath(named)
        if not (os.path.isfile(real) and os.access(real, os.X_OK)):
            raise InvalidParams(f"argv[0]: {program[:200]!r} is not an executable file")
        return named
    found = shutil.which(program, path=":".join(path))
    if found is None:
        shown = ":".join(path)[:300]
        raise InvalidParams(
            f"argv[0]: {program[:100]!r} is not on the sandbox's PATH ({shown}); give its absolute path, "
            "or add its directory to the policy's [sandbox] path"
        )
    return found


def program_home(program: str) -> str:
    """The directory of the file ``program`` leads to: an agent CLI installed as a package
    (node's ``cli.js`` and the files beside it) needs all of it, read-only."""
    return os.path.dirname(os.path.realpath(program))


def plan(
    argv: list[str],
    workspace: str,
    *,
    title: str,
    caller_env: Mapping[str, str],
    policy: PolicyConfig,
    path: tuple[str, ...],
    loc: Locations,
    agent_name: str = "",
    daemon_env: Mapping[str, str] | None = None,
) -> Launch:
    """What a confined session of ``argv`` in ``workspace`` is made of."""
    daemon_env = os.environ if daemon_env is None else daemon_env
    program = executable(argv[0], path)
    agent = agent_for(policy.agents, argv[0], agent_name)
    if agent is None:
        known = ", ".join(a.name for a in policy.agents)
        raise InvalidParams(f"agent: no agent {agent_name[:64]!r} in the policy (known: {known})")
    home = home_of(daemon_env)
    state = _ensure_state([_expand(p, home) for p in agent.state])
    read_only = [_expand(p, home) for p in agent.read_only]
    sockets = [str(loc.agent_socket)]
    as_named = os.path.join(loc.state_dir, "run", "agent.sock")
    if as_named not in sockets:
        sockets.append(as_named)  # where `--state-dir DIR` looks (hooks are installed so)
    env = dict(caller_environment(caller_env))
    env[ENV_HOME] = str(loc.state_dir)
    profile = Profile(
        writable=tuple(state),
        read_only=tuple(read_only),
        agent_socket=str(loc.agent_socket),
        socket_paths=tuple(sockets),
        runtime=(*console_runtime(), program_home(program)),
        env=tuple(sorted(env.items())),
    )
    op = Operation(
        kind=Kind.PROCESS,
        executable=program,
        args=tuple(argv[1:]),
        workspace_root=workspace,
        origin=Origin.INTERACTIVE_COMMAND,
        mode=Mode.DURABLE,
        tool=f"session:{agent.name}" if agent.name else "session",
        workspace_access=WorkspaceAccess.WRITE,
        network=Network.ANY,
        justification=title,
    )
    return Launch(op, profile, agent)
