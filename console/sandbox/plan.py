"""Preparing one approved operation: the boundary, the command line, the environment.

What the sandbox grants is exactly what the approved operation requested — the
approval covered the whole operation — computed from the same capability list policy
showed the operator (:func:`console.policy.diff.requested`):

- of the host's filesystem only an allowlist, read-only (console/sandbox/surface.py): the
  system directories (`/usr`, `/etc` without its root-only files, `/opt`), the toolchains
  on the sandbox's PATH (console/sandbox/toolchains.py), the policy's `readable`, the
  approved executable; fresh /dev, /proc and private /tmp, /var/tmp and /dev/shm; no
  `/run`, `/var`, `/srv`, `/sys`, other projects or host sockets;
- the workspace writable only with `workspace_write` on it, otherwise bound read-only;
  every other `workspace_write` scope (write dirs, explicit capabilities) writable;
- inside the writable part of the workspace, the existing protected paths bound
  read-only again, unless a `protected_metadata` capability covers them; the
  directories between a writable mount and a protected path are pinned (bound onto
  themselves) so the protected path cannot be moved aside by renaming its parent;
  what a protected symlink points to and other hardlinks of a protected file are
  protected too (console/sandbox/protected.py);
- no home: /root, /home and $HOME covered by empty scratch mounts (gone with the
  sandbox, like /tmp), the workspace and write dirs bound back inside; the policy's `readable` bound back read-only and its
  `hidden` covered too (console/sandbox/home.py);
- the hidden paths (the console's state and runtime directories, the user's runtime
  directory with its session bus and agent sockets, the policy's `hidden`, the secret set:
  console/sandbox/secret_paths.py) covered by empty read-only mounts wherever something
  bound would show them;
- a network namespace of its own with only a loopback; `external_network` adds the
  egress broker (a bridge on 127.0.0.1 to the daemon, which decides per domain:
  console/sandbox/profile.py), never the host's network;
- new user, pid, ipc, uts and cgroup namespaces, no capabilities, a seccomp filter
  (console/sandbox/seccomp.py), a new session, and death with the daemon; bwrap gets its
  command line through a memfd, so its /proc/1/cmdline names nothing.

A confined session (``profile``) adds the agent's own state, the agent socket and the
console's code (console/sandbox/profile.py).

`unrestricted` runs without bwrap (as approved) but still with the minimal environment
and the private temp root. Without a working sandbox nothing runs unless the policy
allows degraded execution. Unconfined runs see everything the operator's account can,
the console's state included: that is what `unrestricted` means, and why degraded
execution is opt-in.

Mount what was checked: every bind source (workspace, write dirs, pins, readable
paths) is opened once, component by component, never through a symlink
(console/sandbox/resolve.py), and bwrap is given the descriptor (``--bind-fd``). A write
dir that vanished or became a symlink since the request was checked, or a workspace
that did, fails the preparation with a message naming the field; nothing runs.

That is not enough by itself: bwrap 0.8.0 turns each descriptor back into a path when it
parses its arguments, mounts that path later and finds every mount point by name in the
new root, following symlinks on both sides. So the sandbox waits, set up, before it
runs anything (``--block-fd``), and :meth:`Prepared.confirm` checks its mounts from
outside — each bind is the opened object, at its place, read-only exactly when asked,
and nothing else was mounted — then lets it go, or kills it (console/sandbox/verify.py).
Binds go shallow to deep and, at equal depth, a protected pin after a writable bind:
a pin wins, and a deeper mount point cannot be created inside an already pinned
directory.

Limits, by construction: a protected path that does not exist yet can be created (only
existing paths can be mounted over; the watcher's tripwire reports it); a protected
entry that is a symlink cannot itself be pinned — its target is, when writable, but the
link can be replaced where its parent is writable (the watcher reports it); a pinned
directory cannot be renamed or removed during the run; `process_control` and
`host_visible_binding` are not granted inside the sandbox (the pid and net namespaces
rule them out; only `unrestricted` has them, and raw network with it); a write dir that
contains the workspace does not make a read-only workspace writable (the more specific
bind wins).

:func:`prepare` does not spawn anything: the captured executor and the PTY sessions
both start ``Prepared.argv`` their own way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from console.contract.capabilities import Capability, CapabilityKind
from console.contract.host import DEFAULT_TRUSTED_PATH
from console.contract.operation import Operation, is_within
from console.contract.outcome import Enforcement
from console.policy.config import DEFAULT_PROTECTED
from console.policy.diff import requested
from console.policy.patterns import ProtectedPaths
from console.policy.visibility import DEFAULT_READABLE
from console.sandbox import placeholders, seccomp, verify
from console.sandbox.bwrap import Bind, BindMode, Boundary, DataBind, bwrap_argv, ordered, through_fd
from console.sandbox.content_pins import ContentChanged, PinError, Pins, private_argv, verify_and_pin
from console.sandbox.entry_exec import sandbox_argv
from console.sandbox.environment import child_environment
from console.sandbox.gitconfig import config_targets
from console.sandbox.home import expand, home_masks
from console.sandbox.memfd import sealed
from console.sandbox.probing import BACKEND, SandboxProbe
from console.sandbox.profile import (
    BRIDGE,
    EGRESS_SOCKET,
    Egress,
    Profile,
    bridge_source,
    bridged,
    interpreter,
)
from console.sandbox.protected import ProtectedWalkError, find_protected
from console.sandbox.resolve import Opened, ResolveError, open_path
from console.sandbox.secret_paths import secret_paths
from console.sandbox.surface import HOSTS, HOSTS_FILE, PRIVATE_DIRS, Surface, system_surface
from console.sandbox.tempdir import PrivateTempRoot, TempRootError
from console.sandbox.toolchains import for_run

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
    """The sandbox cannot be prepared for this operation; the message says why and
    ``field`` names the operation's (or the policy's) field at fault, when one is."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class SandboxUnavailable(SandboxSetupError):
    """No working sandbox, and the policy does not allow running without one."""


class ContentChangedError(SandboxSetupError):
    """A bound file is not what the fingerprint names: nothing may run (``paths``,
    escaped for display)."""

    def __init__(self, paths: tuple[str, ...]) -> None:
        super().__init__("content changed since it was approved: " + ", ".join(paths))
        self.paths = paths


@dataclass(frozen=True)
class SandboxConfig:
    """The daemon's part of every run.

    ``hidden_paths``: the console's state and runtime directories (``Locations.
    private_paths()``); the user's runtime directory (``/run/user/<uid>`` and
    ``$XDG_RUNTIME_DIR`` from ``inherit_env``) and container sockets are added always.
    ``inherit_env``: the daemon's environment; only the allowlisted names are passed on.
    ``protected``: the policy's ``protected_paths`` (the same patterns policy used to
    decide which writes need `protected_metadata`). ``readable``/``hidden``: the
    policy's keys of those names (globs, ``~`` is ``inherit_env``'s HOME). ``temp_base``: where private temp
    roots are made (private, or sticky like /tmp); best inside the hidden state dir or
    under /tmp, where concurrent runs cannot see each other's roots. ``path``: the
    sandbox's PATH (console/sandbox/toolchains.py; empty: the system's default), bound
    read-only.
    """

    hidden_paths: tuple[str, ...] = ()
    temp_base: str = field(default_factory=tempfile.gettempdir)
    readable: tuple[str, ...] = DEFAULT_READABLE  # the policy's `readable` globs (home.py)
    hidden: tuple[str, ...] = ()  # the policy's `hidden` globs
    protected: ProtectedPaths = field(default_factory=lambda: ProtectedPaths(DEFAULT_PROTECTED))
    allow_degraded: bool = False
    inherit_env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    path: tuple[str, ...] = ()
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
class Gate:
    """The daemon's ends of bwrap's ``--info-fd`` and ``--block-fd``, and what to check."""

    info_fd: int
    block_fd: int
    child_ends: tuple[int, int]
    expected: list[verify.Expected]
    extra: Counter[str]
    pinned: list[tuple[str, str]] = field(default_factory=list)  # (path, sha256) of the pins


def _gate(boundary: Boundary, stats: dict[int, os.stat_result], pinned: list[tuple[str, str]]) -> Gate:
    info_r, info_w = os.pipe2(os.O_CLOEXEC)
    block_r, block_w = os.pipe2(os.O_CLOEXEC)
    covered = {d.dest for d in boundary.data_binds}  # content pins land on top of these
    every = (*boundary.system, *boundary.readable, *boundary.binds)
    expected = [
        verify.Expected(b.path, stats[b.fd].st_dev, stats[b.fd].st_ino, b.mode is BindMode.READ_ONLY)
        for b in every
        if b.fd >= 0 and b.path not in covered
    ]
    extra_binds = Counter(b.path for b in every if b.path in covered)
    extra = Counter([*boundary.hidden_files, *([boundary.temp_root] if boundary.temp_root else [])])
    extra += extra_binds
    return Gate(info_r, block_w, (info_w, block_r), expected, extra, list(pinned))


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
    # Descriptors the spawn must pass on (mount sources, content pins); open until :meth:`close`.
    pass_fds: tuple[int, ...] = ()
    pins: Pins = field(default_factory=Pins)
    mount_fds: tuple[int, ...] = ()  # the O_PATH sources of the binds (part of pass_fds)
    masks: tuple[str, ...] = ()
    gate: Gate | None = None  # the mount check before the command starts (verify.py)
    brokered: bool = False  # network through the egress broker (profile.py)
    path: tuple[str, ...] = ()  # the PATH inside (toolchains.py)
    # What of the host the sandbox shows at all (system directories, binds, readable
    # paths): anything else is simply not there (surface.py).
    view: tuple[str, ...] = ()

    def shows(self, path: str) -> bool:
        """Whether the host's ``path`` (canonical) is there inside at all (by the mounts)."""
        if not self.sandboxed:
            return True
        if any(is_within(path, h) for h in self.hidden):
            return False
        return any(is_within(path, v) for v in self.view)

    def confirm(self, pid: int) -> bool:
        """Check the mounts of the just-spawned sandbox (``pid``: bwrap) and let it run.

        Every spawner calls this right after starting ``argv``: the sandbox waits for it
        before running anything. False when bwrap exited during setup (its error is on
        its stderr); raises :class:`SandboxSetupError` (field ``write_dirs``) after killing
        bwrap when the mounts are not the ones asked for.
        """
        gate, self.gate = self.gate, None
        if gate is None:
            return True
        for fd in gate.child_ends:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.mount_fds = tuple(fd for fd in self.mount_fds if fd not in gate.child_ends)
        try:
            return verify.confirm(
                pid, gate.info_fd, gate.block_fd, gate.expected, gate.extra, pinned=gate.pinned
            )
        except verify.PinMismatch as exc:
            raise ContentChangedError((exc.path,)) from None
        except verify.SetupTimedOut as exc:
            raise SandboxSetupError(
                f"write_dirs: {exc} (a busy machine, or very many mounts), so nothing runs; try again",
                "write_dirs",
            ) from None
        except verify.MountMismatch as exc:
            raise SandboxSetupError(
                f"write_dirs: the sandbox's mounts are not the ones asked for ({exc}): a directory "
                "on the way was swapped (for a symlink) while it started, so nothing runs",
                "write_dirs",
            ) from None
        finally:
            os.close(gate.info_fd)
            os.close(gate.block_fd)

    def pin_refused(self, stderr: bytes) -> ContentChangedError | None:
        """bwrap's one-line complaint that it could not mount a content pin, as the content
        change it is: the file at that path was renamed over while the sandbox started (the
        kernel detaches a mount point whose name is replaced), which is what the check after
        setup refuses too. None for anything else. Nothing ran either way."""
        line = stderr.strip()
        if not line.startswith(b"bwrap: Can't bind mount ") or b"\n" in line:
            return None
        text = line.decode("utf-8", "replace")
        for pin in self.pins.pins:
            if f" on /newroot{pin.path}: " in text:
                return ContentChangedError((pin.path,))
        return None

    def writable(self, path: str) -> bool:
        """Whether the command could write at canonical ``path`` (by the mounts alone).

        Replays the mounts in bwrap's order (bwrap.py): the last one holding the path wins.
        """
        if not self.sandboxed:
            return True
        mounts = [
            *((d, True) for d in PRIVATE_DIRS),
            *((m, True) for m in self.masks),
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
        """Remove the private temp root (only if still the one created) and close the
        pins' and the mounts' descriptors; idempotent. Call it after the process ended:
        an unconfirmed gate's end is left open (closing it would let a sandbox still
        waiting run unchecked; its spawner kills it)."""
        self.pins.close()
        for fd in self.mount_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.mount_fds = ()
        self.pass_fds = ()
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


def _chain(match: str, writable: list[str]) -> list[str]:
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


class _Sources:
    """The open descriptors of one boundary's binds; all closed if preparing fails."""

    def __init__(self, root: str) -> None:
        self.fds: list[int] = []
        self.stats: dict[int, os.stat_result] = {}
        self.root = root
        try:
            ws = open_path(root)
        except ResolveError as exc:
            raise SandboxSetupError(
                f"workspace_root: {_shown(root)} {exc.why} now; the request was checked against a "
                "real directory, so nothing runs (submit it again)",
                "workspace_root",
            ) from None
        self.fds.append(ws.fd)
        self.stats[ws.fd] = ws.st
        if not ws.is_dir:
            self.close()
            raise SandboxSetupError(
                f"workspace_root: {_shown(root)} is no longer a directory", "workspace_root"
            )
        self.root_fd = ws.fd

    def open(self, path: str) -> Opened:
        """``path`` opened without following symlinks; below the workspace's descriptor
        when inside it (so it is the same workspace that was opened first)."""
        if path == self.root:
            opened = open_path(path, beneath=self.root_fd)
        elif is_within(path, self.root):
            opened = open_path(path, beneath=self.root_fd, relative=path[len(self.root.rstrip("/")) + 1 :])
        else:
            opened = open_path(path)
        self.fds.append(opened.fd)
        self.stats[opened.fd] = opened.st
        return opened

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []


def _shown(path: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in path)[:200]


def _scope_field(op: Operation, scope: str) -> str:
    return "write_dirs" if scope in op.write_dirs else "capabilities"


def _policy_paths(cfg: SandboxConfig) -> tuple[list[str], list[str]]:
    """The policy's ``readable`` and ``hidden`` paths that exist now."""
    try:
        readable = expand(cfg.readable, cfg.inherit_env, "readable")
        hidden = expand(cfg.hidden, cfg.inherit_env, "hidden")
    except ValueError as exc:
        key = str(exc).partition(":")[0]
        raise SandboxSetupError(str(exc), key) from None
    return readable, hidden


@dataclass
class _Plan:
    """What one boundary is made of, before it becomes bwrap's arguments."""

    boundary: Boundary
    protected: tuple[str, ...]
    hidden: tuple[str, ...]
    sources: _Sources
    path: tuple[str, ...]


def _boundary(
    op: Operation,
    cfg: SandboxConfig,
    caps: tuple[Capability, ...],
    temp_root: str,
    terminal: bool,
    profile: Profile | None,
    egress: Egress | None,
) -> _Plan:
    root = op.workspace_root
    surface = system_surface()
    readable_paths, policy_hidden = _policy_paths(cfg)
    secrets = secret_paths(cfg.inherit_env, home_masks(cfg.inherit_env), readable_paths)
    always = (*user_runtime_dirs(cfg.inherit_env), *SOCKET_PATHS, *secrets)
    candidates_dirs, candidates_files = _existing([*cfg.hidden_paths, *always, *policy_hidden])
    for h in (*candidates_dirs, *candidates_files):
        if is_within(root, h) or is_within(op.cwd_path, h):
            named = any(os.path.realpath(p) == h for p in policy_hidden)
            raise SandboxSetupError(
                f"hidden: the workspace lies inside {_shown(h)}, which the policy's `hidden` hides"
                if named
                else "the workspace lies inside a directory the sandbox hides (the console's state or a runtime dir)",
                "hidden" if named else "workspace_root",
            )
    masks = list(home_masks(cfg.inherit_env))

    src = _Sources(root)
    try:
        boundary, protected, path = _binds(
            op,
            cfg,
            caps,
            src,
            surface,
            masks,
            readable_paths,
            profile,
            egress,
            (*candidates_dirs, *candidates_files),
        )
        # Hidden paths need covering only where something bound would show them (the
        # rest of the host is not there at all); only the outermost of them.
        shown = [*surface.binds, *(b.path for b in boundary.binds), *(b.path for b in boundary.readable)]
        covered_dirs = [d for d in candidates_dirs if any(is_within(d, v) for v in shown)]
        covered_files = [f for f in candidates_files if any(is_within(f, v) for v in shown)]
        covered_dirs += [d for d in surface.secret_dirs if d not in covered_dirs]
        covered_files += [f for f in surface.secret_files if f not in covered_files]
        covered_dirs = [d for d in covered_dirs if not any(is_within(d, o) and d != o for o in covered_dirs)]
        covered_files = [f for f in covered_files if not any(is_within(f, o) for o in covered_dirs)]
        # What the sandbox hides, covered or simply not there (diagnostics and pins use it).
        hidden = tuple(dict.fromkeys([*covered_dirs, *covered_files, *candidates_dirs, *candidates_files]))
        for bind in (*boundary.binds, *boundary.readable):
            if any(is_within(h, bind.path) and bind.mode is BindMode.WRITABLE for h in candidates_dirs):
                raise SandboxSetupError(
                    f"{_shown(bind.path)} would make the console's own directories writable; nothing runs",
                    "workspace_root",
                )
        data = [d for d in _private_files(surface, src) if not any(is_within(d.dest, h) for h in hidden)]
        if egress is not None:
            fd = sealed(bridge_source(), "agent-console-bridge")
            src.fds.append(fd)
            data.append(DataBind(fd, BRIDGE, 0o644))
    except BaseException:
        src.close()
        raise
    boundary = replace(
        boundary,
        hidden_dirs=tuple(covered_dirs),
        hidden_files=tuple(covered_files),
        temp_root=temp_root,
        new_session=not terminal,
        data_binds=tuple(data),
    )
    return _Plan(boundary, protected, hidden, src, path)


def _private_files(surface: Surface, src: _Sources) -> list[DataBind]:
    """Host files the sandbox sees another version of: /etc/hosts names only localhost
    (names are resolved by the egress broker, on the host)."""
    out: list[DataBind] = []
    if surface.shows(HOSTS_FILE):
        try:
            st = os.lstat(HOSTS_FILE)
        except OSError:
            return out
        if stat.S_ISREG(st.st_mode):
            fd = sealed(HOSTS, "agent-console-hosts")
            src.fds.append(fd)
            out.append(DataBind(fd, HOSTS_FILE, 0o644))
    return out


def _open_readonly(
    src: _Sources,
    paths: list[str],
    surface: Surface,
    masks: list[str],
    shown: list[str],
    hidden: tuple[str, ...],
    runtime: tuple[str, ...] = (),
) -> list[Bind]:
    """Read-only binds of ``paths`` (each at its name, from its canonical form) where the
    sandbox would not show them already: outside the surface, inside a home mask, not
    below another of them or a directory in ``shown``; a path that cannot be opened is
    left out. A name that is a link is bound as the file or directory it leads to. A
    path inside a ``hidden`` one (canonical) is left out too: hidden wins over readable,
    and a bind there would only be covered again. The console's own ``runtime`` is bound
    even inside the sandbox's private /tmp: a checkout there must still run its hook."""
    out: list[Bind] = []
    bound = list(shown)
    for name in sorted(dict.fromkeys(paths), key=len):
        real = os.path.realpath(name)
        if any(is_within(name, h) or is_within(real, h) for h in hidden):
            continue
        masked = any(is_within(name, m) for m in masks)
        if surface.shows(real) and surface.shows(os.path.realpath(os.path.dirname(name))) and not masked:
            continue  # there already, by the same links as on the host
        if any(is_within(name, d) for d in PRIVATE_DIRS) and not masked and name not in runtime:
            continue  # the sandbox's own scratch there, not the host's
        if any(is_within(name, b) for b in bound):
            continue  # its place is shown already (a link there is followed to its target)
        try:
            opened = src.open(real)
        except ResolveError:
            continue
        bound.append(name)
        out.append(Bind(name, BindMode.READ_ONLY, opened.fd))
    return out


def _binds(
    op: Operation,
    cfg: SandboxConfig,
    caps: tuple[Capability, ...],
    src: _Sources,
    surface: Surface,
    masks: list[str],
    readable_paths: list[str],
    profile: Profile | None,
    egress: Egress | None,
    skip: tuple[str, ...],
) -> tuple[Boundary, tuple[str, ...], tuple[str, ...]]:
    root = op.workspace_root
    writable: list[str] = []
    binds: list[Bind] = []
    for scope in _writable_scopes(op, caps):
        if scope == root:
            writable.append(scope)
            continue
        try:
            opened = src.open(scope)
        except ResolveError as exc:
            field_name = _scope_field(op, scope)
            if exc.errno == errno.ENOENT and field_name != "write_dirs":
                continue  # a capability on a path that does not exist: nothing to bind
            raise SandboxSetupError(
                f"{field_name}: {_shown(scope)} {exc.why} now; it was a directory when the request "
                "was checked, so nothing runs (create it again and resubmit)",
                field_name,
            ) from None
        writable.append(scope)
        binds.append(Bind(scope, BindMode.WRITABLE, opened.fd))
    binds.insert(0, Bind(root, BindMode.WRITABLE if root in writable else BindMode.READ_ONLY, src.root_fd))
    extra_writable = list(profile.writable) if profile is not None else []

    metadata = _metadata_scopes(op, caps)
    walk_roots = tuple(w for w in writable if is_within(w, root))
    if root in writable:
        placeholders.ensure(src.root_fd)
    try:
        extra = config_targets(root, cfg.inherit_env) if walk_roots else ()
        matches = find_protected(
            root, walk_roots, cfg.protected, skip=skip, extra=extra, writable=tuple(writable)
        )
    except ProtectedWalkError as exc:
        raise SandboxSetupError(str(exc), "write_dirs") from None
    protected: list[str] = []
    chain: set[str] = set()
    for m in matches:
        if any(is_within(m.path, s) for s in metadata):
            continue
        protected.append(m.path)
        chain.update(_chain(m.path, writable))
    chain -= set(writable)
    pinned: list[str] = []
    for path, mode in [
        *((p, BindMode.WRITABLE) for p in sorted(chain)),
        *((p, BindMode.READ_ONLY) for p in protected),
        # A protected_metadata scope inside a protected directory opens just that scope again.
        *(
            (s, BindMode.WRITABLE)
            for s in metadata
            if s not in writable and any(is_within(s, p) and s != p for p in protected)
        ),
    ]:
        try:
            opened = src.open(path)
        except ResolveError as exc:
            if exc.errno == errno.ENOENT:
                continue  # removed since the walk: nothing left to pin
            # (Inside a write dir the agent named, that write dir is what was swapped.)
            raise SandboxSetupError(
                f"a protected path changed while the sandbox was prepared: {_shown(path)} {exc.why}; "
                "nothing runs (retry)",
                "write_dirs" if any(is_within(path, w) for w in op.write_dirs) else "workspace_root",
            ) from None
        binds.append(Bind(path, mode, opened.fd))
        if mode is BindMode.READ_ONLY:
            pinned.append(path)

    if profile is not None:
        binds += _profile_binds(src, profile, root)

    # The sandbox's PATH: the toolchains, less what this run can write.
    run_path = for_run(cfg.path, [*writable, *extra_writable])
    wanted = [*readable_paths, *run_path]
    # The approved executable, when it lies outside what is shown, so that it can start
    # (and what it leads to, when it is a link).
    if op.executable.startswith("/"):
        wanted += [op.executable, os.path.realpath(op.executable)]
    runtime = (*(profile.runtime if profile is not None else ()), *((interpreter(),) if egress else ()))
    wanted += runtime
    readable = _open_readonly(src, wanted, surface, masks, [b.path for b in binds], skip, runtime)
    if egress is not None:
        binds.append(_socket_bind(src, egress.socket, EGRESS_SOCKET, "the egress broker"))
    system = [Bind(p, BindMode.READ_ONLY, src.open(p).fd) for p in surface.binds]
    boundary = Boundary(
        system=tuple(system),
        links=surface.links,
        private_dirs=_socket_dirs(profile),
        binds=ordered(binds),
        masks=tuple(masks),
        readable=tuple(readable),
    )
    return boundary, tuple(pinned), run_path


def _socket_bind(src: _Sources, host_path: str, inside: str, what: str) -> Bind:
    try:
        opened = src.open(host_path)
    except ResolveError as exc:
        raise SandboxSetupError(f"{what}'s socket {exc.why}; nothing runs", "network") from None
    if not stat.S_ISSOCK(opened.st.st_mode):
        raise SandboxSetupError(f"{what}'s socket is not a socket; nothing runs", "network")
    return Bind(inside, BindMode.READ_ONLY, opened.fd)


def _profile_binds(src: _Sources, profile: Profile, root: str) -> list[Bind]:
    """The agent's own state (writable), its hook settings inside (read-only), the agent socket."""
    out: list[Bind] = []
    for path in profile.writable:
        try:
            opened = src.open(path)
        except ResolveError as exc:
            if exc.errno == errno.ENOENT:
                continue
            raise SandboxSetupError(
                f"agents: the agent's state {_shown(path)} {exc.why}; nothing runs", "agents"
            ) from None
        out.append(Bind(path, BindMode.WRITABLE, opened.fd))
    for path in profile.read_only:
        try:
            opened = src.open(path)
        except ResolveError:
            continue  # not there: nothing to keep
        out.append(Bind(path, BindMode.READ_ONLY, opened.fd))
    if profile.agent_socket:
        for inside in profile.socket_paths:
            out.append(_socket_bind(src, profile.agent_socket, inside, "the agent"))
    return out


def _socket_dirs(profile: Profile | None) -> tuple[str, ...]:
    """The directories the agent socket lies in inside, made private (0700) as clients check."""
    if profile is None or not profile.agent_socket:
        return ()
    return tuple(dict.fromkeys(os.path.dirname(p) for p in profile.socket_paths))


def prepare(
    op: Operation,
    cfg: SandboxConfig,
    probe: SandboxProbe,
    *,
    terminal: bool = False,
    profile: Profile | None = None,
    egress: Egress | None = None,
) -> Prepared:
    """Build the sandboxed command for ``op``; raises :class:`SandboxSetupError`.

    ``terminal``: the command gets its own PTY from the daemon (interactive sessions),
    so bwrap keeps it in its session instead of `--new-session`; that PTY is the only
    terminal it can reach. ``profile``: what a confined session adds (profile.py).
    ``egress``: the brokered network, which an operation asking `external_network`
    needs (without it the preparation fails: nothing gets raw network but unrestricted).
    """
    caps = requested(op, cfg.protected)
    unrestricted = any(c.kind is K.UNRESTRICTED for c in caps)
    if not unrestricted and not probe.available and not cfg.allow_degraded:
        raise SandboxUnavailable(probe.reason or "the sandbox is not available")
    wants_network = any(c.kind is K.EXTERNAL_NETWORK for c in caps)
    if wants_network and egress is None and not unrestricted and probe.available:
        raise SandboxSetupError(
            "network: the operation asks for the network but no egress broker was given to it", "network"
        )
    try:
        # A confined session is the operator's own start, approved by no fingerprint: there
        # is no approved content to hold it to.
        pins = (
            Pins() if profile is not None else verify_and_pin(op, ":".join(cfg.path) or DEFAULT_TRUSTED_PATH)
        )
    except ContentChanged as exc:
        raise ContentChangedError(exc.paths) from None
    except PinError as exc:
        raise SandboxSetupError(str(exc)) from None
    try:
        temp_root = PrivateTempRoot(cfg.temp_base)
    except (OSError, TempRootError) as exc:
        pins.close()
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
                argv=private_argv(op.argv, pins),
                env=env,
                cwd=op.cwd_path,
                temp_root=temp_root,
                enforcement=enforcement,
                sandboxed=False,
                network_isolated=False,
                workspace_root=op.workspace_root,
                pass_fds=pins.fds,
                pins=pins,
            )
        brokered = egress if wants_network or (profile is not None and egress is not None) else None
        plan = _boundary(op, cfg, caps, temp_root.path, terminal, profile, brokered)
        boundary, sources = plan.boundary, plan.sources
        try:
            pin_binds = _pin_binds(pins, boundary, plan.hidden)
            boundary = replace(boundary, data_binds=(*boundary.data_binds, *pin_binds))
            entry, pins.exec_fds = _entry_argv(op, pins, frozenset(d.dest for d in pin_binds))
            filter_bytes = seccomp.program()
            if filter_bytes is not None:
                seccomp_fd = sealed(filter_bytes, "agent-console-seccomp")
                sources.fds.append(seccomp_fd)
                boundary = replace(boundary, seccomp_fd=seccomp_fd)
            digests = {p.path: p.digest for p in pins.pins}
            gate = _gate(boundary, sources.stats, [(d.dest, digests[d.dest]) for d in pin_binds])
        except BaseException:
            sources.close()
            raise
        sources.fds += gate.child_ends
        boundary = replace(boundary, info_fd=gate.child_ends[0], block_fd=gate.child_ends[1])
        env = _session_environment(
            env, plan.path, profile, brokered, keep_path=any(k == "PATH" for k, _ in op.env)
        )
        argv = entry if brokered is None else bridged(tuple(entry), brokered)
        try:
            full = bwrap_argv(probe.launcher, boundary, op.cwd_path, tuple(argv))
            short, args_fd = through_fd(full)
        except BaseException:
            sources.close()
            raise
        sources.fds.append(args_fd)
        return Prepared(
            argv=short,
            env=env,
            cwd=op.cwd_path,
            temp_root=temp_root,
            enforcement=Enforcement(backend=BACKEND, level=LEVEL_SANDBOXED),
            sandboxed=True,
            network_isolated=True,
            workspace_root=op.workspace_root,
            binds=boundary.binds,
            protected=plan.protected,
            hidden=plan.hidden,
            pass_fds=(*sources.fds, *pins.fds),
            pins=pins,
            mount_fds=tuple(sources.fds),
            masks=boundary.masks,
            gate=gate,
            brokered=brokered is not None,
            path=plan.path,
            view=(
                *(b.path for b in boundary.system),
                *(b.path for b in boundary.binds),
                *(b.path for b in boundary.readable),
            ),
        )
    except BaseException:
        pins.close()
        temp_root.close()
        raise


def _entry_argv(op: Operation, pins: Pins, visible: frozenset[str]) -> tuple[list[str], tuple[int, ...]]:
    argv, fds = sandbox_argv(op.argv, pins, visible)
    return argv, tuple(fds)


def _session_environment(
    env: dict[str, str],
    path: tuple[str, ...],
    profile: Profile | None,
    egress: Egress | None,
    *,
    keep_path: bool,
) -> dict[str, str]:
    """The child environment with the run's PATH (unless the approved operation set its
    own), a confined session's own variables and the proxy: the operator's variables
    first, then what the sandbox sets itself."""
    out = dict(env)
    if profile is not None:
        private = {
            k: v
            for k, v in out.items()
            if k in ("TMPDIR", "TMP", "TEMP", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR")
        }
        out.update(profile.env)
        out.update(private)
    if path and not keep_path:
        out["PATH"] = ":".join(path)
    if egress is not None:
        out.update(egress.environment())
    return dict(sorted(out.items()))


def _pin_binds(pins: Pins, boundary: Boundary, hidden: tuple[str, ...]) -> tuple[DataBind, ...]:
    """Each pinned file over its path, where the sandbox could show a host file at all: not
    in a hidden path, a home mask or a private directory (a pin must not make visible what
    the boundary hides); anywhere else the approved bytes are put in place."""

    def visible(path: str) -> bool:
        if any(is_within(path, h) for h in hidden):
            return False
        private = any(is_within(path, m) for m in (*PRIVATE_DIRS, "/dev", "/proc", *boundary.masks))
        shown = (*boundary.binds, *boundary.readable)
        return not private or any(is_within(path, b.path) for b in shown)

    return tuple(DataBind(p.fd, p.path, p.mode) for p in pins.pins if visible(p.path))
