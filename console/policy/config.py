"""Policy configuration: TOML in, a validated, immutable :class:`PolicyConfig` out.

Every error names the key and what it accepts, because the person reading it is
editing ``policy.toml`` by hand.
"""

from __future__ import annotations

import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from console.contract.workspace import WorkspaceLimits
from console.policy.agents import DEFAULT_AGENTS, AgentProfile, AgentsError, agents_from
from console.policy.network import NetworkPolicy, NetworkPolicyError, network_policy_from
from console.policy.patterns import PatternError, ProtectedPaths, validate_pattern
from console.policy.protected_set import DEFAULT_PROTECTED as _DEFAULT_PROTECTED
from console.policy.visibility import DEFAULT_READABLE

E = TypeVar("E", bound=StrEnum)


class SandboxMode(StrEnum):
    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    DANGER_FULL_ACCESS = "danger-full-access"


class NetworkMode(StrEnum):
    NONE = "none"
    ANY = "any"


class ApprovalMode(StrEnum):
    UNTRUSTED = "untrusted"
    ON_REQUEST = "on-request"
    NEVER = "never"


class Tripwire(StrEnum):
    OFF = "off"
    ALERT = "alert"
    PAUSE = "pause"


# The default protected set and why each entry is in it: console/policy/protected_set.py.
DEFAULT_PROTECTED: tuple[str, ...] = _DEFAULT_PROTECTED


class PolicyError(ValueError):
    """The policy file is invalid; the message names the key and the allowed values."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key


@dataclass(frozen=True)
class PolicyConfig:
    sandbox: SandboxMode = SandboxMode.WORKSPACE_WRITE
    network: NetworkMode = NetworkMode.NONE
    approval: ApprovalMode = ApprovalMode.ON_REQUEST
    protected: tuple[str, ...] = DEFAULT_PROTECTED
    approval_timeout_s: float = 300.0
    tripwire: Tripwire = Tripwire.ALERT
    allow_degraded: bool = False
    watch: tuple[str, ...] = ()  # workspace roots watched from the start
    # The operator's trusted roots: a request's workspace_root must be one of them or
    # inside one, or it is the escalation `new_workspace` (console/contract/workspace.py).
    workspaces: tuple[str, ...] = ()
    # What of the operator's home the sandbox shows (console/sandbox/home.py): globs, `~` expanded.
    readable: tuple[str, ...] = DEFAULT_READABLE
    hidden: tuple[str, ...] = ()
    # Extra variables every session gets (console/sessions/environment.py), sorted by name.
    session_env: tuple[tuple[str, str], ...] = ()
    # Recording quotas (console/sessions/quota.py): one session's, and all of the state dir's.
    recording_max_mb: int = 1024
    recordings_total_mb: int = 4096
    # The egress broker's lists (console/policy/network.py); `network` is "any" exactly
    # when they allow every name.
    network_policy: NetworkPolicy = field(default_factory=NetworkPolicy)
    # Agent CLIs: their state, hook settings and model API domains (console/policy/agents.py).
    agents: tuple[AgentProfile, ...] = DEFAULT_AGENTS
    # The sandbox's PATH; None: the operator's, filtered (console/sandbox/toolchains.py).
    sandbox_path: tuple[str, ...] | None = None

    @property
    def protected_paths(self) -> ProtectedPaths:
        return _compiled(self.protected)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sandbox": self.sandbox.value,
            "network": self.network.value,
            "approval": self.approval.value,
            "protected": list(self.protected),
            "approval_timeout_s": self.approval_timeout_s,
            "tripwire": self.tripwire.value,
            "allow_degraded": self.allow_degraded,
            "watch": list(self.watch),
            "workspaces": list(self.workspaces),
            "readable": list(self.readable),
            "hidden": list(self.hidden),
            "session_env": dict(self.session_env),
            "recording_max_mb": self.recording_max_mb,
            "recordings_total_mb": self.recordings_total_mb,
            "network_policy": self.network_policy.to_dict(),
            "agents": {a.name: a.to_dict() for a in self.agents},
            "sandbox_path": None if self.sandbox_path is None else list(self.sandbox_path),
        }


_cache: dict[tuple[str, ...], ProtectedPaths] = {}


def _compiled(patterns: tuple[str, ...]) -> ProtectedPaths:
    found = _cache.get(patterns)
    if found is None:
        found = _cache[patterns] = ProtectedPaths(patterns)
    return found


def _choice(data: dict[str, Any], key: str, enum: type[E], default: E) -> E:
    if key not in data:
        return default
    value = data[key]
    allowed = " | ".join(f'"{m.value}"' for m in enum)
    if not isinstance(value, str):
        raise PolicyError(key, f"must be a string, one of {allowed}")
    try:
        return enum(value)
    except ValueError:
        raise PolicyError(key, f"unknown value; allowed: {allowed}") from None


_KEYS = (
    "sandbox",
    "network",
    "approval",
    "protected",
    "approval_timeout_s",
    "tripwire",
    "allow_degraded",
    "watch",
    "workspaces",
    "readable",
    "hidden",
    "session_env",
    "recording_max_mb",
    "recordings_total_mb",
    "agents",
)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The session marker and the daemon's own settings: a session never gets them from policy.
RESERVED_ENV_PREFIX = "AGENT_CONSOLE_"
MAX_MB = 1024 * 1024  # 1 TiB, in MiB


def _session_env(data: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """``session_env``: a table of NAME = "value", both checked as envp needs them."""
    value = data.get("session_env", {})
    if not isinstance(value, dict):
        raise PolicyError("session_env", 'must be a table of NAME = "value", e.g. { EDITOR = "vim" }')
    if len(value) > 256:
        raise PolicyError("session_env", "at most 256 variables")
    for name, text in value.items():
        if not _ENV_NAME.fullmatch(name) or len(name) > 256:
            raise PolicyError(
                "session_env",
                f"{name[:64]!r} is not a variable name: use letters, digits and _, "
                "not starting with a digit, e.g. EDITOR",
            )
        if name.startswith(RESERVED_ENV_PREFIX):
            raise PolicyError(
                f"session_env.{name}", f"names starting with {RESERVED_ENV_PREFIX} are the console's own"
            )
        if not isinstance(text, str):
            raise PolicyError(f"session_env.{name}", f'must be a string; quote it: {name} = "..."')
        if "\x00" in text or len(text) > 32 * 1024:
            raise PolicyError(f"session_env.{name}", "must be at most 32 KiB and contain no NUL")
    return tuple(sorted(value.items()))


def _megabytes(data: dict[str, Any], key: str, default: int, low: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_MB:
        raise PolicyError(key, f"must be a whole number of MiB between {low} and {MAX_MB}")
    return value


def _home_globs(data: dict[str, Any], key: str, example: str) -> tuple[str, ...]:
    """``readable``/``hidden``: absolute or ``~/`` globs, no ``..``, at most 256."""
    value = data.get(key, list(DEFAULT_READABLE) if key == "readable" else [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(key, f"must be a list of paths or globs, e.g. {example}")
    if len(value) > 256:
        raise PolicyError(key, "at most 256 entries")
    for i, entry in enumerate(value):
        if not (entry.startswith(("/", "~/")) or entry == "~") or "\x00" in entry:
            raise PolicyError(f"{key}[{i}]", f"must be an absolute path or start with ~/, e.g. {example}")
        if ".." in entry.split("/"):
            raise PolicyError(f"{key}[{i}]", "must not contain '..'")
        if key == "hidden" and entry.rstrip("/") in ("", "/"):
            raise PolicyError(f"{key}[{i}]", "hiding / would hide the system itself")
    return tuple(value)


def _sandbox(data: dict[str, Any], defaults: PolicyConfig) -> tuple[SandboxMode, tuple[str, ...] | None]:
    """``sandbox``: a mode, or a table ``{ mode = "...", path = ["/usr/bin", ...] }``."""
    value = data.get("sandbox", defaults.sandbox.value)
    if not isinstance(value, dict):
        return _choice(data, "sandbox", SandboxMode, defaults.sandbox), None
    unknown = sorted(set(value) - {"mode", "path"})
    if unknown:
        raise PolicyError(f"sandbox.{unknown[0]}", "unknown key; known keys: mode, path")
    mode = _choice(value, "mode", SandboxMode, defaults.sandbox)
    if "path" not in value:
        return mode, None
    path = value["path"]
    if not isinstance(path, list) or not all(isinstance(p, str) for p in path) or len(path) > 64:
        raise PolicyError(
            "sandbox.path", 'must be a list of at most 64 directories, e.g. ["/usr/bin", "/bin"]'
        )
    for i, entry in enumerate(path):
        if not (entry.startswith(("/", "~/"))) or ":" in entry or "\x00" in entry or ".." in entry.split("/"):
            raise PolicyError(
                f"sandbox.path[{i}]", "must be an absolute directory (or ~/...) without ':' or '..'"
            )
    return mode, tuple(path)


def policy_from_dict(data: dict[str, Any]) -> PolicyConfig:
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise PolicyError(unknown[0], "unknown key; known keys: " + ", ".join(_KEYS))
    defaults = PolicyConfig()
    sandbox, sandbox_path = _sandbox(data, defaults)
    try:
        network_policy = network_policy_from(data.get("network", defaults.network.value))
    except NetworkPolicyError as exc:
        raise PolicyError(exc.key, str(exc).partition(": ")[2]) from None
    try:
        agents = agents_from(data.get("agents"))
    except AgentsError as exc:
        raise PolicyError(exc.key, str(exc).partition(": ")[2]) from None

    protected = data.get("protected", list(defaults.protected))
    if not isinstance(protected, list) or not all(isinstance(p, str) for p in protected):
        raise PolicyError("protected", 'must be a list of path patterns, e.g. [".env", ".git/hooks/**"]')
    if len(protected) > 1000:
        raise PolicyError("protected", "at most 1000 patterns")
    for i, pattern in enumerate(protected):
        try:
            validate_pattern(pattern)
        except PatternError as exc:
            raise PolicyError(f"protected[{i}]", str(exc)) from None

    timeout = data.get("approval_timeout_s", defaults.approval_timeout_s)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 1 <= timeout <= 86_400:
        raise PolicyError("approval_timeout_s", "must be a number of seconds between 1 and 86400")

    allow_degraded = data.get("allow_degraded", False)
    if not isinstance(allow_degraded, bool):
        raise PolicyError("allow_degraded", "must be true or false")

    watch = data.get("watch", [])
    if not isinstance(watch, list) or not all(isinstance(w, str) and w.startswith("/") for w in watch):
        raise PolicyError("watch", 'must be a list of absolute directory paths, e.g. ["/home/me/project"]')
    if len(watch) > 256:
        raise PolicyError("watch", "at most 256 roots")

    workspaces = data.get("workspaces", [])
    example = 'must be a list of absolute directory paths, e.g. ["/home/me/src"]'
    if not isinstance(workspaces, list) or not all(isinstance(w, str) for w in workspaces):
        raise PolicyError("workspaces", example)
    if len(workspaces) > 256:
        raise PolicyError("workspaces", "at most 256 roots")
    for i, root in enumerate(workspaces):
        if not root.startswith("/") or "\x00" in root or root != posixpath.normpath(root):
            raise PolicyError(
                f"workspaces[{i}]",
                "must be an absolute, normalized directory path (no '..', '.', '//' or trailing '/'), "
                "e.g. /home/me/src",
            )
        # The host's homes and the console's state are checked by the daemon, which knows
        # them (console/daemon/workspaces.py); what no host changes is checked here.
        why = WorkspaceLimits().trust_refusal(root)
        if why is not None:
            raise PolicyError(f"workspaces[{i}]", why)

    max_mb = _megabytes(data, "recording_max_mb", defaults.recording_max_mb, 1)
    total_mb = _megabytes(data, "recordings_total_mb", defaults.recordings_total_mb, 1)
    if total_mb < max_mb:
        raise PolicyError(
            "recordings_total_mb",
            f"must be at least recording_max_mb ({max_mb}): one recording must fit in the total",
        )

    return PolicyConfig(
        sandbox=sandbox,
        network=NetworkMode.ANY if network_policy.anything else NetworkMode.NONE,
        approval=_choice(data, "approval", ApprovalMode, defaults.approval),
        protected=tuple(protected),
        approval_timeout_s=float(timeout),
        tripwire=_choice(data, "tripwire", Tripwire, defaults.tripwire),
        allow_degraded=allow_degraded,
        watch=tuple(watch),
        workspaces=tuple(workspaces),
        readable=_home_globs(data, "readable", '["~/.gitconfig"]'),
        hidden=_home_globs(data, "hidden", '["~/work/secrets"]'),
        session_env=_session_env(data),
        recording_max_mb=max_mb,
        recordings_total_mb=total_mb,
        network_policy=network_policy,
        agents=agents,
        sandbox_path=sandbox_path,
    )


def policy_from_toml(text: str) -> PolicyConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError("", f"not valid TOML: {exc}") from None
    return policy_from_dict(data)


def load_policy(path: str | Path | None) -> PolicyConfig:
    """The policy in ``path``; the defaults when ``path`` is None."""
    if path is None:
        return PolicyConfig()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError("", f"cannot read {path}: {exc}") from None
    return policy_from_toml(text)
