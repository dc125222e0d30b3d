"""Run what was hashed: verify the bound files at run time and pin their bytes.

Just before a run starts, the operation's content binding is computed again
(console/contract/content.py) through a host that opens every file once
(``O_NOFOLLOW``), reads it into memory, and hashes those bytes. When anything differs
from ``op.content`` — a digest, a file that appeared or vanished, a symlink that now
points elsewhere, a new ``source``/``include`` line — the run does not start:
:class:`ContentChanged` names the paths, and the executor reports a denial
``content_changed``.

When everything matches, the verified bytes go into sealed memfds (no write, grow,
shrink or new seals) and the command is made to see exactly them:

- sandboxed: bwrap mounts each memfd read-only over its path (``--perms MODE
  --ro-bind-data FD PATH``, after every other mount). An edit made in place after the
  check changes nothing the command sees. Limit: Linux detaches a mount whose mount point is
  *renamed over or unlinked* from another mount namespace, so an outside process that
  renames a file onto a pinned path while the sandbox starts can remove the pin
  (docs/fingerprint.md §2.3 says so);
- unrestricted (no bwrap): the entry points — the executable when it is bound, and an
  interpreter's script argument — are replaced in argv by ``/dev/fd/N`` of the memfd,
  so ``$0`` (or ``sys.argv[0]``) reads ``/dev/fd/N``; the other bound files (sourced
  files, makefiles, rc files) are verified but read by name.

Cost: nothing is read for an operation whose binding names no file (``true``,
``git status``); otherwise each bound file is read once more and copied once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
from dataclasses import dataclass, field

from console.contract.content import Binding, bind
from console.contract.host import DEFAULT_TRUSTED_PATH, OSHost, Resolved
from console.contract.operation import Operation
from console.contract.problem import InvalidInput

MAX_PIN_BYTES = 128 << 20


class ContentChanged(Exception):
    """The bound content is not what the fingerprint names; ``paths`` say where."""

    def __init__(self, paths: tuple[str, ...]) -> None:
        super().__init__("content changed since it was approved: " + ", ".join(paths))
        self.paths = paths


class PinError(Exception):
    """The content matched but cannot be pinned (too large, no memfd); the message says why."""


@dataclass(frozen=True, slots=True)
class Pin:
    """Verified bytes of ``path`` in a sealed memfd at offset 0."""

    path: str
    fd: int
    mode: int
    size: int
    digest: str = ""  # sha256 of the bytes, for the check after the sandbox's setup


@dataclass
class Pins:
    pins: tuple[Pin, ...] = ()
    # argv index -> the pin of the file opened by path to start the run
    entries: dict[int, Pin] = field(default_factory=dict)
    # Duplicates of entry pins that the command itself starts from (console/sandbox/entry_exec.py).
    exec_fds: tuple[int, ...] = ()

    @property
    def fds(self) -> tuple[int, ...]:
        return (*(p.fd for p in self.pins), *self.exec_fds)

    def close(self) -> None:
        for fd in (*(p.fd for p in self.pins), *self.exec_fds):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pins = ()
        self.entries = {}
        self.exec_fds = ()


class _CapturingHost(OSHost):
    """The real filesystem, read once: no caches, and every regular file it hashes is
    kept in memory so what is pinned is exactly what was hashed."""

    def __init__(self, trusted_path: str) -> None:
        super().__init__(trusted_path)
        self.captured: dict[str, tuple[bytes, int]] = {}

    def resolve(self, path: str) -> Resolved:
        return self._resolve(path)

    def which(self, name: str) -> str | None:
        return self._scan(name)

    def _capture(self, path: str) -> tuple[bytes, int] | None:
        if path in self.captured:
            return self.captured[path]
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size > MAX_PIN_BYTES:
                raise PinError(
                    f"{_shown(path)} is larger than {MAX_PIN_BYTES >> 20} MiB and cannot be pinned"
                )
            chunks = []
            size = 0
            while chunk := os.read(fd, 1 << 20):
                size += len(chunk)
                if size > MAX_PIN_BYTES:
                    raise PinError(f"{_shown(path)} grew past {MAX_PIN_BYTES >> 20} MiB while it was read")
                chunks.append(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)
        got = (b"".join(chunks), stat.S_IMODE(st.st_mode))
        self.captured[path] = got
        return got

    def file_sha256(self, path: str) -> str | None:
        got = self._capture(path)
        return None if got is None else hashlib.sha256(got[0]).hexdigest()

    def read_small_text(self, path: str, limit: int) -> str | None:
        got = self._capture(path)
        if got is None or len(got[0]) > limit:
            return None
        return got[0].decode("utf-8", "replace")


def _shown(path: str) -> str:
    """A path for a message: every non-printable character escaped, bounded."""
    out = "".join(c if c.isprintable() and c != "\\" else repr(c)[1:-1] for c in path)
    return out if len(out) <= 300 else out[:299] + "…"


def changed_paths(op: Operation, now: dict[str, str | None]) -> tuple[str, ...]:
    """Where ``now`` differs from ``op.content``; a path bound on one side only counts
    when it names a file (absent on both sides is no change)."""
    before = dict(op.content)
    return tuple(sorted(p for p in set(before) | set(now) if before.get(p) != now.get(p)))


class _FreshHost(OSHost):
    """The real filesystem without the daemon's short caches (nothing kept in memory)."""

    def resolve(self, path: str) -> Resolved:
        return self._resolve(path)

    def which(self, name: str) -> str | None:
        return self._scan(name)


def current_content(op: Operation, trusted_path: str = DEFAULT_TRUSTED_PATH) -> dict[str, str | None]:
    """The binding as the filesystem stands now (for the decide-time check); a file that
    cannot be read any more counts as changed."""
    unreadable: dict[str, str | None] = {p: "unreadable" for p, _ in op.content}
    try:
        return bind(_FreshHost(trusted_path), op.executable, op.args, op.cwd_path).content
    except (InvalidInput, OSError):
        return unreadable


def content_changed_since(op: Operation, trusted_path: str = DEFAULT_TRUSTED_PATH) -> tuple[str, ...]:
    """The bound paths whose content differs now from ``op.content`` (escaped for
    display); empty when it is all as submitted. For the decide-time check (in a thread)."""
    return tuple(_shown(p) for p in changed_paths(op, current_content(op, trusted_path)))


def _rebind(op: Operation, host: _CapturingHost) -> Binding | None:
    try:
        return bind(host, op.executable, op.args, op.cwd_path)
    except (InvalidInput, OSError):
        return None  # a bound file became unreadable: a change of what would run


def verify_and_pin(op: Operation, trusted_path: str = DEFAULT_TRUSTED_PATH) -> Pins:
    """Check ``op``'s content against the filesystem and pin the verified bytes.

    Raises :class:`ContentChanged` (nothing may run) or :class:`PinError`.
    """
    host = _CapturingHost(trusted_path)
    binding = _rebind(op, host)
    now: dict[str, str | None] = (
        binding.content if binding is not None else {p: "unreadable" for p, _ in op.content}
    )
    changed = changed_paths(op, now)
    if changed or binding is None:
        raise ContentChanged(tuple(_shown(p) for p in changed or [p for p, _ in op.content]))
    pins: dict[str, Pin] = {}
    try:
        for path, digest in op.content:
            if digest is None:
                continue
            data, mode = host.captured[path]
            pins[path] = Pin(path, _sealed_memfd(data), mode, len(data), digest)
    except BaseException:
        for p in pins.values():
            os.close(p.fd)
        raise
    # A path named through a symlink is checked to still lead to the bound file (the
    # binding above resolves it again); the pin sits on the file it leads to.
    result = Pins(pins=tuple(pins.values()))
    for index, real in binding.entries.items():
        if real in pins:
            result.entries[index] = pins[real]
    return result


def _sealed_memfd(data: bytes) -> int:
    try:
        fd = os.memfd_create("agent-console-pin", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError) as exc:
        raise PinError(f"cannot make a memfd to pin content: {exc}") from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(
            fd,
            fcntl.F_ADD_SEALS,
            fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE,
        )
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_argv(argv: tuple[str, ...], pins: Pins) -> list[str]:
    """For unrestricted runs: each entry point replaced by its memfd (``/dev/fd/N``)."""
    out = list(argv)
    for index, pin in pins.entries.items():
        out[index] = f"/dev/fd/{pin.fd}"
    return out
