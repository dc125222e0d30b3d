"""Preparing one approved operation: the boundary, the command line, the environment.

What the sandbox grants is exactly what the approved operation requested — the
approval covered the whole operation — computed from the same capability list policy
showed the operator (:func:`console.policy.diff.requested`):

- the root read-only; fresh /dev, /proc and a private /tmp;
- the workspace writable only with `workspace_write` on it, otherwise bound read-only;
  every other `workspace_write` scope (write dirs, explicit capabilities) writable;
- inside the writable part of the workspace, the existing protected paths bound
  read-only again, unless a `protected_metadata` capability covers them; the
  directories between a writable mount and a protected path are pinned (bound onto
  themselves) so the protected path cannot be moved aside by renaming its parent;
- the hidden paths (the console's state and runtime directories, the user's runtime
  directory with its session bus and agent sockets) covered by empty read-only mounts;
- no network unless `external_network` (a private loopback exists either way);
- new user, pid, ipc and uts namespaces, no capabilities, a new session, and death
  with the daemon.

`unrestricted` runs without bwrap (as approved) but still with the minimal environment
and the private temp root. Without a working sandbox nothing runs unless the policy
allows degraded execution. Unconfined runs see everything the operator's account can,
the console's state included: that is what `unrestricted` means, and why degraded
execution is opt-in.

Limits, by construction: a protected path that does not exist yet can be created (only
existing paths can be mounted over; the watcher's tripwire reports it); a protected
entry that is a symlink is not protected (a mount would land on its target); a pinned
directory cannot be renamed or removed during the run; `process_control` and
`host_visible_binding` are not granted inside the sandbox (the pid and net namespaces
rule them out; only `unrestricted` has them); `network = "any"` shares the host's
network namespace, abstract Unix sockets included; a write dir that contains the
workspace does not make a read-only workspace writable (the more specific bind wins).

:func:`prepare` does not spawn anything: the captured executor and the PTY sessions
both start ``Prepared.argv`` their own way.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.operation import Operation, is_within
from console.contract.outcome import Enforcement
from console.policy.config import DEFAULT_PROTECTED
from console.policy.diff import requested
from console.policy.patterns import ProtectedPaths
from console.sandbox.bwrap import Bind, BindMode, Boundary, bwrap_argv, ordered
from console.sandbox.environment import child_environment
from console.sandbox.probing import BACKEND, SandboxProbe
from console.sandbox.protected import ProtectedWalkError, find_protected
from console.sandbox.tempdir import PrivateTempRoot, TempRootError

K = CapabilityKind

LEVEL_SANDBOXED = "sandboxed"
LEVEL_UNRESTRICTED = "unrestricted"
LEVEL_NONE = "none"

# Well-known places holding handles to the user's session or to root: a session bus
# (`systemd-run --user` would run anything outside), ssh/gpg agents, container daemons.
# Connecting to a Unix socket works through a read-only mount, so they are hidden.
SOCKET_PATHS = ("/run/docker.sock", "/var/run/docker.sock", "/run/podman", "/run/containerd")


def user_runtime_dirs(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """``/run/user/<uid>`` and the daemon's ``$XDG_RUNTIME_DIR``: always hidden."""
    env = os.environ if env is None else env
    dirs = [f"/run/user/{os.geteuid()}"]
    xdg = env.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/"):
        dirs.append(xdg)
    return tuple(dirs)


class SandboxSetupError(RuntimeError):
    """The sandbox cannot be prepared for this operation; the message says why."""


class SandboxUnavailable(SandboxSetupError):
    """No working sandbox, and the policy does not allow running without one."""


@dataclass(frozen=True)
class SandboxConfig:
    """The daemon's part of every run.

    ``hidden_paths``: the console's state and runtime directories (``Locations.
    private_paths()``); the user's runtime directory (``/run/user/<uid>`` and
    ``$XDG_RUNTIME_DIR`` from ``inherit_env``) and container sockets are added always.
    ``inherit_env``: the daemon's environment; only the allowlisted names are passed on.
    ``protected``: the policy's ``protected_paths`` (the same patterns policy used to
    decide which writes need `protected_metadata`). ``temp_base``: where private temp
    roots are made (private, or sticky like /tmp); best inside the hidden state dir or
    under /tmp, where concurrent runs cannot see each other's roots.
    """

    hidden_paths: tuple[str, ...] = ()
    temp_base: str = field(default_factory=tempfile.gettempdir)
    protected: ProtectedPaths = field(default_factory=lambda: ProtectedPaths(DEFAULT_PROTECTED))
    allow_degraded: bool = False
    inherit_env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    term_grace_s: float = 2.0
    drain_grace_s: float = 1.0
    chunk_bytes: int = 65_536

    def __post_init__(self) -> None:
        for path in self.hidden_paths:
            if not isinstance(path, str) or not path.startswith("/"):
                raise ValueError("hidden_paths must be absolute paths")
        if self.term_grace_s < 0 or self.drain_grace_s < 0:
            raise ValueError("grace periods must not be negative")
        if not 512 <= self.chunk_bytes <= 1 << 24:
            raise ValueError("chunk_bytes must be between 512 and 16 MiB")


@dataclass
class Prepared:
    """One ready-to-start command: spawn ``argv`` with ``env`` in ``cwd``, then :meth:`close`.

    ``sandboxed`` is false for unrestricted and degraded runs (``argv`` is then the
    command itself). ``binds`` (shallow to deep), ``protected`` (the read-only binds that
    are protected paths) and ``hidden`` describe the boundary; the diagnostics use them
    to tell a sandbox denial from an ordinary error.
    """

    argv: list[str]
    env: dict[str, str]
    cwd: str
    temp_root: PrivateTempRoot
    enforcement: Enforcement
    sandboxed: bool
    network_isolated: bool
    workspace_root: str
    binds: tuple[Bind, ...] = ()
    protected: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()

    def writable(self, path: str) -> bool:
        """Whether the command could write at canonical ``path`` (by the mounts alone).

        Replays the mounts in bwrap's order (bwrap.py): the last one holding the path wins.
        """
        if not self.sandboxed:
            return True
        mounts = [
            ("/tmp", True),
            ("/dev/shm", True),
            *((b.path, b.mode is BindMode.WRITABLE) for b in self.binds),
            *((h, False) for h in self.hidden),
            (self.temp_root.path, True),
        ]
        result = False
        for mount, writable in mounts:
            if is_within(path, mount):
                result = writable
        return result

    def close(self) -> bool:
        """Remove the private temp root (only if still the one created); idempotent."""
        return self.temp_root.close()

    def __enter__(self) -> Prepared:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _existing(paths: tuple[str, ...] | list[str]) -> tuple[list[str], list[str]]:
    """Canonical existing ``paths`` split into directories and other files."""
    dirs: list[str] = []
    files: list[str] = []
    for path in paths:
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
        except OSError:
            continue
        target = dirs if stat.S_ISDIR(st.st_mode) else files
        if real not in target:
            target.append(real)
    return dirs, files


def _writable_scopes(op: Operation, caps: tuple[Capability, ...]) -> list[str]:
    scopes = []
    for cap in caps:
        if cap.kind is K.WORKSPACE_WRITE:
            scopes.append(cap.scope or op.workspace_root)
    return sorted(set(scopes))


def _metadata_scopes(op: Operation, caps: tuple[Capability, ...]) -> list[str]:
    return sorted({c.scope or op.workspace_root for c in caps if c.kind is K.PROTECTED_METADATA})


def _pins(match: str, writable: list[str]) -> list[str]:
    """Directories strictly between the innermost writable mount holding ``match`` and it."""
    holders = [w for w in writable if is_within(match, w) and w != match]
    if not holders:
        return []
    top = max(holders, key=len)
    pins = []
    parent = os.path.dirname(match)
    while parent != top and is_within(parent, top):
        pins.append(parent)
        parent = os.path.dirname(parent)
    return pins


def _boundary(
    op: Operation, cfg: SandboxConfig, caps: tuple[Capability, ...], temp_root: str, terminal: bool
) -> tuple[Boundary, tuple[str, ...], tuple[str, ...]]:
    root = op.workspace_root
    always = (*user_runtime_dirs(cfg.inherit_env), *SOCKET_PATHS)
    hidden_dirs, hidden_files = _existing([*cfg.hidden_paths, *always])
    # Only the outermost: a nested one would just leave its mount point visible.
    hidden_dirs = [d for d in hidden_dirs if not any(is_within(d, o) and d != o for o in hidden_dirs)]
    hidden_files = [f for f in hidden_files if not any(is_within(f, o) for o in hidden_dirs)]
    hidden = (*hidden_dirs, *hidden_files)
    if any(is_within(root, h) for h in hidden) or any(is_within(op.cwd_path, h) for h in hidden):
        raise SandboxSetupError(
            "the workspace lies inside a directory the sandbox hides (the console's state or a runtime dir)"
        )

    writable = [s for s in _writable_scopes(op, caps) if os.path.exists(s)]
    binds = [Bind(root, BindMode.WRITABLE if root in writable else BindMode.READ_ONLY)]
    binds += [Bind(s, BindMode.WRITABLE) for s in writable if s != root]

    metadata = _metadata_scopes(op, caps)
    walk_roots = tuple(w for w in writable if is_within(w, root))
    try:
        matches = find_protected(root, walk_roots, cfg.protected, skip=hidden)
    except ProtectedWalkError as exc:
        raise SandboxSetupError(str(exc)) from None
    protected: list[str] = []
    pins: set[str] = set()
    for m in matches:
        if any(is_within(m.path, s) for s in metadata):
            continue
        protected.append(m.path)
        pins.update(_pins(m.path, writable))
    pins -= set(writable)
    binds += [Bind(p, BindMode.WRITABLE) for p in sorted(pins)]
    binds += [Bind(p, BindMode.READ_ONLY) for p in protected]
    # A protected_metadata scope inside a protected directory opens just that scope again.
    binds += [
        Bind(s, BindMode.WRITABLE)
        for s in metadata
        if s not in writable and any(is_within(s, p) and s != p for p in protected)
    ]
    share = any(c.kind is K.EXTERNAL_NETWORK for c in caps)
    boundary = Boundary(
        binds=ordered(binds),
        hidden_dirs=tuple(hidden_dirs),
        hidden_files=tuple(hidden_files),
        temp_root=temp_root,
        share_network=share,
        new_session=not terminal,
    )
    return boundary, tuple(protected), hidden


def prepare(op: Operation, cfg: SandboxConfig, probe: SandboxProbe, *, terminal: bool = False) -> Prepared:
    """Build the sandboxed command for ``op``; raises :class:`SandboxSetupError`.

    ``terminal``: the command gets its own PTY from the daemon (interactive sessions),
    so bwrap keeps it in its session instead of `--new-session`; that PTY is the only
    terminal it can reach.
    """
    caps = requested(op, cfg.protected)
    unrestricted = any(c.kind is K.UNRESTRICTED for c in caps)
    if not unrestricted and not probe.available and not cfg.allow_degraded:
        raise SandboxUnavailable(probe.reason or "the sandbox is not available")
    try:
        temp_root = PrivateTempRoot(cfg.temp_base)
    except (OSError, TempRootError) as exc:
        raise SandboxSetupError(f"private temp root: {exc}") from None
    try:
        try:
            env = child_environment(cfg.inherit_env, op.env, temp_root)
        except ValueError as exc:
            raise SandboxSetupError(str(exc)) from None
        if unrestricted or not probe.available:
            if unrestricted:
                enforcement = Enforcement(backend="none", level=LEVEL_UNRESTRICTED)
            else:
                enforcement = Enforcement(
                    backend="none", level=LEVEL_NONE, degraded=True, downgrade_reason=probe.reason
                )
            return Prepared(
                argv=list(op.argv),
                env=env,
                cwd=op.cwd_path,
                temp_root=temp_root,
                enforcement=enforcement,
                sandboxed=False,
                network_isolated=False,
                workspace_root=op.workspace_root,
            )
        boundary, protected, hidden = _boundary(op, cfg, caps, temp_root.path, terminal)
        return Prepared(
            argv=bwrap_argv(probe.launcher, boundary, op.cwd_path, op.argv),
            env=env,
            cwd=op.cwd_path,
            temp_root=temp_root,
            enforcement=Enforcement(backend=BACKEND, level=LEVEL_SANDBOXED),
            sandboxed=True,
            network_isolated=not boundary.share_network,
            workspace_root=op.workspace_root,
            binds=boundary.binds,
            protected=protected,
            hidden=hidden,
        )
    except BaseException:
        temp_root.close()
        raise
